"""The markdown tables of bench/RESULTS.md "COMEX (#23)" from the committed results.

    python bench/comex_tables.py [hitrate|pb|speedup|eq1|lossless|trace]

Reads ``notebooks/data/comex/`` (written by ``bench/comex_emulate.sh`` and
``bench/comex_fabric.py``) and prints each table; times in s (emulate) or µs (fabric).
"""

from __future__ import annotations

import sys

import pandas as pd

from disaggsim.analysis import comex
from disaggsim.sim.runner import repo_root
from disaggsim.swapdev import baselines, device, hdd_model

DATA = repo_root() / "notebooks" / "data" / "comex"
APPS = {
    "comex-numpy-sort": ("numpy-sort", "FSORT 87 %"),
    "comex-python-sort": ("python-sort", "BFS 44 %, MIS n/a"),
    "comex-memcached-ycsb": ("memcached-ycsb", "DICT 86 %"),
    "comex-dask-sort": ("dask-sort", "FT 47 %"),
}


def hitrate() -> None:
    for name, (app, paper) in APPS.items():
        runs = pd.read_csv(DATA / name / "runs.csv")
        for fraction, g in runs[runs["model"] == "comex-10g"].groupby("local_fraction"):
            med = g[
                [
                    "comex_reads",
                    "comex_read_hits",
                    "comex_write_hits",
                    "comex_prefetched_unused",
                    "hit_rate",
                ]
            ].median()
            print(
                f"| {app} | {fraction:.0%} | {med.comex_reads:,.0f} | {med.comex_read_hits:,.0f} "
                f"| {med.comex_write_hits:,.0f} | {med.comex_prefetched_unused:,.0f} "
                f"| {med.hit_rate:.0%} | {paper} |"
            )


def pb() -> None:
    s = pd.read_csv(DATA / "comex-pb-numpy-sort" / "summary.csv")
    s = s[s["model"] != "none"].copy()
    s["P"] = s["model"].str.extract(r"-P(\d+)-")[0].astype(int)
    s["B"] = s["model"].str.extract(r"-B(\d+)$")[0].astype(int)
    bs = sorted(s["B"].unique())
    print("| P \\ B | " + " | ".join(str(b) for b in bs) + " |")
    print("|---" * (len(bs) + 1) + "|")
    for p, g in s.groupby("P"):
        g = g.set_index("B")
        print(
            f"| {p} | "
            + " | ".join(
                f"{g.loc[b, 'median_jct_s']:.2f} ({g.loc[b, 'min_jct_s']:.2f}–"
                f"{g.loc[b, 'max_jct_s']:.2f}), {g.loc[b, 'hit_rate']:.0%}"
                for b in bs
            )
            + " |"
        )


def hdd_estimate_s(summary: pd.DataFrame, fraction: float) -> float | None:
    """The HDD baseline's JCT re-timed from the SSD baseline's run at ``fraction``: the
    device waits for each demand swap-in in turn, so each of the SSD run's swap-ins (one
    4 KiB page each) costs the HDD's mean instead of the SSD's delay on top of its JCT.
    Swap-outs are left out (their count is not recorded, only bytes): a lower bound."""
    row = summary[(summary["model"] == "ssd-sata") & (summary["local_fraction"] == fraction)]
    if row.empty or pd.isna(row["median_jct_s"].iloc[0]):
        return None
    ins = float(row["swap_in_bytes"].iloc[0]) / 4096
    extra_ns = hdd_model.mean_service_time_ns(4096, baselines.HDD_RPM) - device.fixed_delay_ns(
        baselines.SSD_READ_LATENCY_NS, baselines.SSD_BANDWIDTH_BPS, 4096
    )
    return float(row["median_jct_s"].iloc[0]) + ins * extra_ns / 1e9


def speedup() -> None:
    print(
        "| application | local | comex JCT (s) | baseline | baseline JCT (s) | speed-up | "
        "hdd-5400 re-timed from this SSD run: JCT (s), speed-up |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, (app, _) in APPS.items():
        summary = pd.read_csv(DATA / name / "summary.csv")
        for _, r in pd.read_csv(DATA / name / "speedup.csv").iterrows():
            base = (
                f"> {r.speedup_at_least * r.median_jct_s:.0f} (limit)"
                if pd.isna(r.baseline_median_jct_s)
                else f"{r.baseline_median_jct_s:.2f}"
            )
            value = f"≥ {r.speedup_at_least:.1f}x" if pd.isna(r.speedup) else f"{r.speedup:.2f}x"
            est = hdd_estimate_s(summary, r.local_fraction) if r.baseline == "ssd-sata" else None
            extra = "" if est is None else f"≥ {est:.0f}, ≥ {est / r.median_jct_s:.0f}x"
            print(
                f"| {app} | {r.local_fraction:.0%} | {r.median_jct_s:.2f} | {r.baseline} "
                f"| {base} | {value} | {extra} |"
            )


def eq1() -> None:
    e = pd.read_csv(DATA / "comex-fabric" / "eq1.csv")
    e = e[e["fabric"] == "lossy"]
    sw = e[(e["protocol"] == "pfabric") & (e["topology"] == "switch")]
    clos = e[(e["protocol"] == "pfabric") & (e["topology"] == "clos")].set_index(
        ["compute_nodes", "request_probability"]
    )
    print(
        "| N | P | ρ = NP/M | Eq. (1), 4.54 µs | Eq. (1), fabric T_NW | simulated mean (p99), "
        "one switch | simulated mean, Clos | T_Q Eq. (1) | T_Q simulated | network queueing |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for _, r in sw.iterrows():
        c = clos.loc[(r.compute_nodes, r.request_probability)]
        print(
            f"| {r.compute_nodes} | {r.request_probability:g} | {r.rho:.2f} "
            f"| {r.eq1_paper_ns / 1000:.2f} | {r.eq1_fabric_ns / 1000:.2f} "
            f"| {r.sim_rtt_mean_ns / 1000:.2f} ({r.sim_rtt_p99_ns / 1000:.1f}) "
            f"| {c.sim_rtt_mean_ns / 1000:.2f} | {r.model_queue_ns / 1000:.2f} "
            f"| {r.sim_queue_ns / 1000:.2f} | {r.sim_network_queue_ns / 1000:.3f} |"
        )


def lossless() -> None:
    """Per point of eq1.csv: the lossless fabric's mean RTT over the lossy one's."""
    e = pd.read_csv(DATA / "comex-fabric" / "eq1.csv")
    keys = ["topology", "protocol", "compute_nodes", "request_probability"]
    p = e.pivot_table(index=keys, columns="fabric", values="sim_rtt_mean_ns")
    ratio = p["lossless"] / p["lossy"]
    print(
        f"lossless / lossy mean RTT over {len(ratio)} points: {ratio.min():.4f}–{ratio.max():.4f}"
    )


def trace() -> None:
    """The replayed comex window; ``link load``: the 64 KiB responses' bits over the memory
    blades' uplinks, reads x 65536 x 8 / (M x window x rate) (> 1: the links overflow)."""
    cfg = comex.load_fabric_config(repo_root() / "configs" / "comex-fabric.toml").comex_fabric
    t = pd.read_csv(DATA / "comex-fabric" / "trace.csv")
    print(
        "| topology | fabric | transport | N | reads | writes | memory-link load | P per T_S "
        "| Eq. (1) + 64 KiB at 10 Gb/s | Eq. (1), fabric T_NW | simulated mean (p99) "
        "| memory-node wait | network queueing | unfinished |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for _, r in t.iterrows():
        load = r.reads * 65536 * 8 / (r.memory_nodes * cfg.trace_window_ns * cfg.rate_gbps)
        print(
            f"| {r.topology} | {r.fabric} | {r.protocol} | {r.compute_nodes} | {r.reads} "
            f"| {r.writes} | {load:.2f} "
            f"| {r.request_probability:.3f} | {r.eq1_paper_plus_transfer_ns / 1000:.1f} "
            f"| {r.eq1_fabric_ns / 1000:.1f} | {r.sim_rtt_mean_ns / 1000:.1f} "
            f"({r.sim_rtt_p99_ns / 1000:.0f}) | {r.sim_queue_ns / 1000:.2f} "
            f"| {r.sim_network_queue_ns / 1000:.1f} | {r.get('unfinished', 0)} |"
        )


TABLES = {
    "hitrate": hitrate,
    "pb": pb,
    "speedup": speedup,
    "eq1": eq1,
    "lossless": lossless,
    "trace": trace,
}

if __name__ == "__main__":
    for which in sys.argv[1:] or list(TABLES):
        TABLES[which]()
        print()
