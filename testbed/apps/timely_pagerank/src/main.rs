//! PageRank as a Timely dataflow (the `timely` crate, Murray et al., "Naiad: A Timely
//! Dataflow System", SOSP 2013): the paper's "Parallel Dataflow / Pagerank / Timely
//! Dataflow" workload (Gao et al., OSDI'16, Table 2), run by `disaggsim emulate` and
//! `disaggsim collect` (testbed/apps/timely.py).
//!
//! The iteration is the one of the Spark job (testbed/apps/spark_jobs.py, Spark's
//! examples/pagerank.py; Page et al. 1999, damping 0.85): every vertex with out-links
//! starts at rank 1.0; each step a vertex sends rank / out-degree along each out-link
//! and a vertex's new rank is 0.15 + 0.85 x the sum it received; dangling mass is
//! dropped; duplicate edges count once; after `--iterations` steps the ranked vertices
//! are those that received contributions in the last step.
//!
//! Input: each worker draws `--edges-per-worker` R-MAT edges (Chakrabarti, Zhan,
//! Faloutsos, SDM'04; Graph500 parameters a = 0.57, b = c = 0.19) over 2^`--scale`
//! vertices from SplitMix64 (Steele, Lea, Flood, OOPSLA'14) seeded by (`--seed`,
//! worker index), self loops dropped; or, with `--edges-file`, worker 0 reads
//! "src dst" lines (the tests' oracle input).
//!
//! Dataflow: edges are exchanged by source; one operator holds each worker's adjacency
//! lists (the data the job keeps in memory) and, in a loop (feedback, +1 per step),
//! receives the contributions exchanged by destination, sums them and sends the next
//! step's contributions. Options after `--` go to timely (`-w` workers per process,
//! `-n` processes, `-p` this process, `-h` host file of "ip:port" lines).
//!
//! Output: one JSON line per process: its workers' ranked vertices, rank sum, top
//! vertex and rank, distinct edges (`links`), edges drawn, and `job_s`, the time from
//! the workers' start (all processes connected) to the last step's completion.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::BufRead;
use std::rc::Rc;
use std::time::Instant;

use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{ConnectLoop, Feedback, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};

const DAMPING: f64 = 0.85;
/// R-MAT quadrant probabilities of the Graph500 Kronecker generator (a, b, c; d = rest).
const RMAT_A: f64 = 0.57;
const RMAT_B: f64 = 0.19;
const RMAT_C: f64 = 0.19;

struct Options {
    scale: u32,
    edges_per_worker: u64,
    iterations: u64,
    seed: u64,
    edges_file: Option<String>,
}

/// SplitMix64 (Steele, Lea, Flood, OOPSLA'14): a 64-bit state advanced by the golden
/// gamma and mixed; uniform doubles from the top 53 bits.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// `n` R-MAT edges over 2^`scale` vertices, self loops removed.
fn rmat_edges(seed: u64, worker: u64, n: u64, scale: u32) -> Vec<(u64, u64)> {
    let mut rng = SplitMix64(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ worker);
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let (mut src, mut dst) = (0u64, 0u64);
        for bit in 0..scale {
            let u = rng.next_f64();
            let src_bit = u >= RMAT_A + RMAT_B;
            let dst_bit = (u >= RMAT_A && u < RMAT_A + RMAT_B) || u >= RMAT_A + RMAT_B + RMAT_C;
            src |= (src_bit as u64) << bit;
            dst |= (dst_bit as u64) << bit;
        }
        if src != dst {
            out.push((src, dst));
        }
    }
    out
}

fn read_edges(path: &str) -> Vec<(u64, u64)> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| fail(&format!("{}: {}", path, e)));
    let mut out = Vec::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.unwrap_or_else(|e| fail(&format!("{}: {}", path, e)));
        let mut it = line.split_whitespace().map(|f| f.parse::<u64>());
        match (it.next(), it.next(), it.next()) {
            (Some(Ok(s)), Some(Ok(d)), None) => out.push((s, d)),
            _ => fail(&format!("{}:{}: expected two vertex ids 'src dst', got {:?}", path, n + 1, line)),
        }
    }
    out
}

fn fail(msg: &str) -> ! {
    eprintln!("timely-pagerank: {}", msg);
    std::process::exit(2)
}

/// Our options (before `--`) and timely's (after).
fn parse_args() -> (Options, Vec<String>) {
    let mut opts = Options { scale: 16, edges_per_worker: 100_000, iterations: 5, seed: 1, edges_file: None };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut i = 0;
    while i < split {
        let value = args.get(i + 1).filter(|_| i + 1 < split)
            .unwrap_or_else(|| fail(&format!("{}: expected a value", args[i])));
        let num = || value.parse::<u64>().unwrap_or_else(|_| fail(&format!("{} {}: expected an integer", args[i], value)));
        match args[i].as_str() {
            "--scale" => opts.scale = num() as u32,
            "--edges-per-worker" => opts.edges_per_worker = num(),
            "--iterations" => opts.iterations = num(),
            "--seed" => opts.seed = num(),
            "--edges-file" => opts.edges_file = Some(value.clone()),
            other => fail(&format!("unknown option {} (expected --scale, --edges-per-worker, --iterations, --seed, --edges-file, then -- and timely's options)", other)),
        }
        i += 2;
    }
    if opts.scale == 0 || opts.scale > 40 || opts.iterations == 0 {
        fail("--scale must be 1..40 and --iterations >= 1");
    }
    let timely_args = std::iter::once("timely-pagerank".to_string()).chain(args.into_iter().skip(split + 1)).collect();
    (opts, timely_args)
}

#[derive(Default, Clone)]
struct Stats {
    vertices_ranked: u64,
    rank_sum: f64,
    top_vertex: i64,
    top_rank: f64,
    links: u64,
    edges_drawn: u64,
    job_s: f64,
}

fn main() {
    let (opts, timely_args) = parse_args();
    let opts = std::sync::Arc::new(opts);
    let guards = timely::execute_from_args(timely_args.into_iter(), move |worker| {
        let t0 = Instant::now();
        let index = worker.index() as u64;
        let iterations = opts.iterations;
        let stats = Rc::new(RefCell::new(Stats { top_vertex: -1, ..Stats::default() }));
        let mut input = InputHandle::<u64, (u64, u64)>::new();
        let mut probe = ProbeHandle::new();
        let out = stats.clone();
        worker.dataflow::<u64, _, _>(|scope| {
            let edges = input.to_stream(scope);
            let (handle, contributions) = scope.feedback::<(u64, f64)>(1);
            edges
                .binary_frontier(
                    &contributions,
                    Exchange::new(|e: &(u64, u64)| e.0),
                    Exchange::new(|c: &(u64, f64)| c.0),
                    "PageRank",
                    move |_capability, _info| {
                        let mut edge_list: Vec<(u64, u64)> = Vec::new();
                        let mut edge_caps = Vec::new();
                        // CSR adjacency, built once the edges are complete.
                        let mut sources: Vec<u64> = Vec::new();
                        let mut offsets: Vec<usize> = Vec::new();
                        let mut targets: Vec<u64> = Vec::new();
                        let mut stash: HashMap<u64, (timely::dataflow::operators::Capability<u64>, Vec<(u64, f64)>)> = HashMap::new();
                        let mut buf1 = Vec::new();
                        let mut buf2 = Vec::new();
                        move |input1, input2, output| {
                            input1.for_each(|time, data| {
                                data.swap(&mut buf1);
                                edge_list.extend(buf1.drain(..));
                                edge_caps.push(time.retain());
                            });
                            input2.for_each(|time, data| {
                                data.swap(&mut buf2);
                                let t = *time.time();
                                stash.entry(t).or_insert_with(|| (time.retain(), Vec::new())).1.extend(buf2.drain(..));
                            });
                            let done = |t: &u64| !input1.frontier().less_equal(t) && !input2.frontier().less_equal(t);
                            // Step 0: the edges are complete; every source starts at 1.0.
                            if !edge_caps.is_empty() && done(edge_caps[0].time()) {
                                edge_list.sort_unstable();
                                edge_list.dedup();
                                out.borrow_mut().links = edge_list.len() as u64;
                                for &(s, d) in edge_list.iter() {
                                    if sources.last() != Some(&s) {
                                        sources.push(s);
                                        offsets.push(targets.len());
                                    }
                                    targets.push(d);
                                }
                                offsets.push(targets.len());
                                edge_list = Vec::new();
                                let cap = edge_caps.remove(0);
                                edge_caps.clear();
                                let mut session = output.session(&cap);
                                for (i, &_s) in sources.iter().enumerate() {
                                    let outs = &targets[offsets[i]..offsets[i + 1]];
                                    let share = 1.0 / outs.len() as f64;
                                    for &d in outs {
                                        session.give((d, share));
                                    }
                                }
                            }
                            // Step t >= 1: sum the contributions, send the next ones.
                            let mut ready: Vec<u64> = stash.keys().copied().filter(|t| done(t)).collect();
                            ready.sort_unstable();
                            for t in ready {
                                let (cap, contribs) = stash.remove(&t).unwrap();
                                let mut sums: HashMap<u64, f64> = HashMap::new();
                                for (v, c) in contribs {
                                    *sums.entry(v).or_insert(0.0) += c;
                                }
                                if t >= iterations {
                                    let mut st = out.borrow_mut();
                                    for (&v, &s) in sums.iter() {
                                        let r = 1.0 - DAMPING + DAMPING * s;
                                        st.vertices_ranked += 1;
                                        st.rank_sum += r;
                                        if r > st.top_rank || (r == st.top_rank && (v as i64) < st.top_vertex) {
                                            st.top_rank = r;
                                            st.top_vertex = v as i64;
                                        }
                                    }
                                    continue;
                                }
                                let mut session = output.session(&cap);
                                for (i, s) in sources.iter().enumerate() {
                                    if let Some(&sum) = sums.get(s) {
                                        let rank = 1.0 - DAMPING + DAMPING * sum;
                                        let outs = &targets[offsets[i]..offsets[i + 1]];
                                        let share = rank / outs.len() as f64;
                                        for &d in outs {
                                            session.give((d, share));
                                        }
                                    }
                                }
                            }
                        }
                    },
                )
                .probe_with(&mut probe)
                .connect_loop(handle);
        });
        let drawn = match &opts.edges_file {
            Some(path) if index == 0 => {
                let edges = read_edges(path);
                let n = edges.len() as u64;
                for e in edges {
                    input.send(e);
                }
                n
            }
            Some(_) => 0,
            None => {
                let edges = rmat_edges(opts.seed, index, opts.edges_per_worker, opts.scale);
                let n = opts.edges_per_worker;
                for e in edges {
                    input.send(e);
                }
                n
            }
        };
        input.close();
        while probe.less_equal(&iterations) {
            worker.step();
        }
        while worker.step() {}
        let mut st = stats.borrow().clone();
        st.edges_drawn = drawn;
        st.job_s = t0.elapsed().as_secs_f64();
        st
    })
    .unwrap_or_else(|e| fail(&format!("timely: {}", e)));
    let mut total = Stats { top_vertex: -1, ..Stats::default() };
    for result in guards.join() {
        let st = result.unwrap_or_else(|e| fail(&format!("a worker failed: {}", e)));
        total.vertices_ranked += st.vertices_ranked;
        total.rank_sum += st.rank_sum;
        total.links += st.links;
        total.edges_drawn += st.edges_drawn;
        total.job_s = total.job_s.max(st.job_s);
        if st.top_rank > total.top_rank {
            total.top_rank = st.top_rank;
            total.top_vertex = st.top_vertex;
        }
    }
    println!(
        "{{\"vertices_ranked\": {}, \"rank_sum\": {:.6}, \"top_vertex\": {}, \"top_rank\": {:.6}, \"links\": {}, \"edges_drawn\": {}, \"job_s\": {:.3}}}",
        total.vertices_ranked, total.rank_sum, total.top_vertex, total.top_rank, total.links, total.edges_drawn, total.job_s
    );
}
