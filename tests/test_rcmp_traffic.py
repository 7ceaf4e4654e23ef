"""Rcmp's traffic generator (sim/rcmp.py, issue #25 item 2) against hand-derived counts."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from ns3_program import BINARY, needs_ns3

from disaggsim.errors import InputError
from disaggsim.schemas import RCMP_FLOW_KINDS, SIM_FLOWS
from disaggsim.sim.rcmp import (
    PAGE_BYTES,
    RcmpParams,
    RcmpRacks,
    c_define,
    generate,
    write_traffic,
)


def _within(observed: int, n: int, p: float, sigmas: float = 5.0) -> bool:
    """A binomial(n, p) count lies within `sigmas` standard deviations of n p."""
    return abs(observed - n * p) <= sigmas * math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("racks", [2, 3, 4])
def test_uniform_keys_reach_a_remote_rack_with_probability_r_minus_1_over_r(racks: int) -> None:
    # Pages are pre-allocated round robin (page p in rack p % R, §6.3), keys are uniform over
    # 1e6 items in 31 pages (2 MiB / 64 B = 32768 items a page), so an access from any rack
    # is remote with probability (R-1)/R up to the rounding of 31 pages over R racks: the
    # exact probability is sum over racks of the share of items outside the rack.
    p = RcmpParams(
        racks=racks, clients_per_rack=2, items=1_000_000, ops_per_client=3000, hot_threshold=None
    )
    t = generate(p)
    per_page = 32768
    items_in = [0] * racks
    for page in range(-(-p.items // per_page)):
        items_in[page % racks] += min(per_page, p.items - page * per_page)
    expected = 1 - sum(n / p.items for n in items_in) / racks  # clients spread evenly
    n = racks * 2 * 3000
    remote = t.counts["rdma_R"]
    assert t.counts["cxl_R"] + remote == n
    assert abs(expected - (racks - 1) / racks) < 0.01  # the (R-1)/R of the issue
    assert _within(remote, n, expected)
    # Every remote 64 B read is one pure-RPC exchange (64 < 512 B, §5.5): a 16 B request
    # from the client's daemon and an 80 B reply (16 B + the item) back, nothing else.
    assert list(t.flows["kind"].unique()) == ["rpc"]
    assert len(t.flows) == 2 * remote
    assert sorted(t.flows["size_bytes"].unique()) == [16, 80]
    assert (t.flows["src_host"] % p.hosts_per_rack == 0).all()  # daemons only
    assert (t.flows["dst_host"] % p.hosts_per_rack == 0).all()
    assert t.counts["migrations"] == 0


def _racks(**kw: object) -> RcmpRacks:
    base: dict[str, object] = {
        "racks": 2,
        "clients_per_rack": 1,
        "items": 2 * 32768,
        "hot_threshold": 4.0,
    }
    base.update(kw)
    return RcmpRacks(RcmpParams(**base))  # type: ignore[arg-type]


def test_a_hot_page_migrates_once_and_never_ping_pongs() -> None:
    # Two racks of one client (hosts: rack 0 = daemon 0, client 1; rack 1 = daemon 2,
    # client 3), two pages: page 0 in rack 0, page 1 in rack 1, no free page (§6.3).
    s = _racks()
    t = 0
    # Client 3 reads item 0 (page 0, remote) every µs. The k-th access's hotness is
    # alpha (k - 1) + 1 with alpha = exp(-0.04/s * 1 µs) < 1 (§5.3), i.e. just under k:
    # after H_p = 4 accesses the page is not yet hot (4 accesses: hotness < 4 is not > 4).
    for _ in range(4):
        s.access(t, 3, 0, False)
        t += 1000
    assert s.counts["migrations"] == 0
    s.access(t, 3, 0, False)  # the 5th: hotness 4 alpha + 1 > 4: hot, swapped in
    assert s.counts["migrations"] == 1 and s.counts["victims"] == 1  # page 1 goes back
    done = t + 3000 + math.ceil(PAGE_BYTES * 8 / 100)  # remote access + 2 MiB at 100 Gbps
    # While the page is in flight it is still remote, and the queued request is not
    # repeated (§5.3 step 1).
    while t + 1000 < done:
        t += 1000
        s.access(t, 3, 0, False)
    assert s.owner[0] == 0 and s.counts["migrations"] == 1
    t = done
    for _ in range(20):  # now local to rack 1
        assert s.access(t, 3, 0, False) == 140
        t += 1000
    assert s.owner[0] == 1 and s.owner[1] == 0
    # Client 1 (rack 0) now reads page 0 remotely, 10 times: it turns hot on its 5th read
    # (hotness ~5 > 4), but rack 1's clients hold it at ~20 (step 3): every request is
    # rejected, so the page does not go back (no ping-pong): 6 rejections (reads 5..10).
    for _ in range(10):
        s.access(t, 1, 0, False)
        t += 1000
    assert s.counts["swaps_rejected"] == 6
    assert s.page_moves[0] == 1 and s.counts["migrations"] == 1
    kinds = [f[4] for f in s.flows]
    assert kinds.count("migrate") == 2  # the hot page and the victim, 2 MiB each
    assert {f[3] for f in s.flows if f[4] == "migrate"} == {PAGE_BYTES}


def test_a_victim_that_is_hot_stops_the_swap() -> None:
    # Rack 1's only page (page 1) is hot for its own client: step 2 stops the swap.
    s = _racks()
    t = 0
    for _ in range(6):
        s.access(t, 3, 32768, False)  # item 32768 is page 1, local to rack 1
        t += 1000
    for _ in range(5):
        s.access(t, 3, 0, False)
        t += 1000
    assert s.counts["swaps_stopped"] == 1 and s.counts["migrations"] == 0


def test_rrpc_uses_pure_rpc_below_512_bytes_and_one_sided_transfers_above() -> None:
    small = _racks(item_bytes=511, items=4096, hot_threshold=None)
    small.access(0, 3, 0, True)  # a 511 B write: the data rides in the request
    assert [(f[1], f[2], f[3], f[4]) for f in small.flows] == [
        (2, 0, 16 + 511, "rpc"),
        (0, 2, 16, "rpc"),
    ]
    large = _racks(item_bytes=512, items=4096, hot_threshold=None)
    large.access(0, 3, 0, False)  # first 512 B read: address lookup, then one-sided READ
    large.access(5000, 3, 1, False)  # same page: the address is cached (§5.5)
    assert [(f[0], f[1], f[2], f[3], f[4]) for f in large.flows] == [
        (0, 2, 0, 16, "rpc"),
        (1500, 0, 2, 16, "rpc"),
        (3000, 0, 2, 512, "rdma_read"),
        (5000, 0, 2, 512, "rdma_read"),
    ]


def test_rrpc_numbers_come_from_librcmps_header(tmp_path: object) -> None:
    """The generator's RRPC threshold and header are librcmp's defines (one definition, so
    the emulation and the simulated flows split at the same size), and a header without
    them is named in the error."""
    from pathlib import Path

    header = Path(str(tmp_path)) / "rcmp.h"
    header.write_text("#define RCMP_RPC_THRESHOLD_BYTES 1024\n#define OTHER 3\n")
    assert c_define(header, "RCMP_RPC_THRESHOLD_BYTES") == 1024
    with pytest.raises(InputError, match=r"rcmp\.h: field 'RCMP_RPC_HEADER_BYTES': expected"):
        c_define(header, "RCMP_RPC_HEADER_BYTES")
    # the shipped header: Rcmp §5.5's 512 B cut-off
    assert (RcmpParams().rpc_threshold_bytes, RcmpParams().rpc_header_bytes) == (512, 16)


@pytest.mark.parametrize(("mix", "write_share"), [("B", 0.05), ("A", 0.5)])
def test_ycsb_mixes_write_in_their_proportion(mix: str, write_share: float) -> None:
    t = generate(RcmpParams(mix=mix, ops_per_client=2000, items=100_000, hot_threshold=None))
    n = 2 * 8 * 2000
    writes = t.counts["cxl_W"] + t.counts["rdma_W"]
    assert _within(writes, n, write_share)


def test_read_modify_write_reads_then_writes_the_same_key() -> None:
    t = generate(RcmpParams(mix="F", ops_per_client=500, items=100_000, hot_threshold=None))
    n = 2 * 8 * 500
    reads = t.counts["cxl_R"] + t.counts["rdma_R"]
    writes = t.counts["cxl_W"] + t.counts["rdma_W"]
    assert reads == n  # every operation reads (F: 50 % read, 50 % read-modify-write)
    assert _within(writes, n, 0.5)
    a = t.accesses
    for client, rows in a.groupby("client_host"):
        ops = rows["op"].tolist()
        keys = rows["key"].tolist()
        for i in range(1, len(ops)):
            if ops[i] == "W":
                assert ops[i - 1] == "R" and keys[i - 1] == keys[i], client


def test_workload_d_inserts_in_the_local_rack() -> None:
    # D: 5 % inserts of new keys, reads skewed to the latest; the items fill exactly 3
    # pages, so inserts open page 3, allocated in the inserting rack (rack 0, §5.1) although
    # round robin would have put it in rack 1.
    p = RcmpParams(
        mix="D",
        ops_per_client=2000,
        items=3 * 32768,
        clients_per_rack=4,
        client_racks=1,
        hot_threshold=None,
    )
    t = generate(p)
    new = t.accesses[t.accesses["key"] >= p.items]
    first = new.drop_duplicates("key")
    assert _within(len(first), 4 * 2000, 0.05)  # one insert per new key
    assert (first["op"] == "W").all()
    assert (new["page"] == 3).all() and (new["tier"] == "cxl").all()


def test_cxl_rows_and_the_written_tables(tmp_path: object) -> None:
    from pathlib import Path

    out = Path(str(tmp_path)) / "rcmp"
    t = generate(RcmpParams(ops_per_client=100, items=100_000, cxl_rows=True))
    write_traffic(t, out)
    flows = pd.read_csv(out / "flows.csv")
    assert list(flows.columns) == SIM_FLOWS.names
    assert set(flows["kind"]) <= set(RCMP_FLOW_KINDS)
    assert (flows["kind"] == "cxl").sum() == t.counts["cxl_R"]
    assert list(flows["flow_id"]) == list(range(len(flows)))
    assert json.loads((out / "counts.json").read_text())["flows"] == len(flows)
    with pytest.raises(FileExistsError):
        write_traffic(t, out)


def test_bad_parameters_name_the_parameter() -> None:
    with pytest.raises(InputError, match="mix"):
        generate(RcmpParams(mix="E"))
    with pytest.raises(InputError, match="client_racks"):
        generate(RcmpParams(racks=2, client_racks=3))


def test_configs_load_and_bad_keys_name_the_file(tmp_path: object) -> None:
    from pathlib import Path

    from disaggsim.sim.rcmp import load_params

    root = Path(__file__).resolve().parent.parent / "configs"
    a = load_params(root / "rcmp-ycsb-a.toml")
    assert (a.racks, a.mix, a.distribution, a.items, a.cxl_rows) == (
        4,
        "A",
        "zipfian",
        100_000_000,
        True,
    )
    fig20 = load_params(root / "rcmp-micro-fig20.toml")
    assert (fig20.client_racks, fig20.hot_threshold) == (1, 3.0)
    bad = Path(str(tmp_path)) / "bad.toml"
    for text, word in [
        ("[rcmp]\nmixx = 1\n", "mixx"),
        ("[rcmp]\nracks = 0\n", "racks"),
        ("[rcmp]\nmix = 3\n", "mix"),
        ("[other]\n", "rcmp"),
        ('[rcmp]\nhot_threshold = "none"\nracks = true\n', "racks"),
    ]:
        bad.write_text(text)
        with pytest.raises(InputError, match=f"bad.toml.*{word}"):
            load_params(bad)
    bad.write_text('[rcmp]\nhot_threshold = "none"\n')
    assert load_params(bad).hot_threshold is None


@needs_ns3
def test_generated_traffic_runs_through_the_cxl_tier(tmp_path: object) -> None:
    # 2 racks of 2 clients (hosts per rack 3: the daemon is host 0 of each rack), 64 B
    # reads, every row through the driver with --cxlTier over pFabric at 40 Gbps. The ideal
    # of each row is its lone-access time, derived by hand (topologies/doc/cxl.md):
    # - a cxl row: 140 ns + 64 B at 256 Gbps (2 ns) = 142 ns;
    # - an RPC of b bytes between the daemons: ceil_ns(140 + T(b)) + IdealFct + 140 + T(b),
    #   T(b) = 8 b / 256 Gbps; IdealFct of one pFabric frame of b + 22 + 18 bytes at
    #   40 Gbps (s ns) across racks = 1.75 s + 2 x 20 + 2 x 200 + 3 x 240 (clos.md):
    #   16 B request: s = 11.2, T = 0.5: 141 + 1179.6 + 140.5 = 1461.1 -> 1461 ns;
    #   80 B reply:   s = 24,   T = 2.5: 143 + 1202 + 142.5 = 1487.5 -> 1488 ns.
    import subprocess
    from pathlib import Path

    from disaggsim.sim.runner import driver_argv, read_fct_csv

    assert BINARY is not None
    out = Path(str(tmp_path))
    p = RcmpParams(
        racks=2,
        clients_per_rack=2,
        items=100_000,
        ops_per_client=40,
        hot_threshold=None,
        cxl_rows=True,
    )
    t = generate(p)
    write_traffic(t, out / "rcmp")
    cmd = driver_argv(
        BINARY,
        out / "rcmp" / "ns3_flows.csv",
        out / "fct.csv",
        out / "stats.json",
        "pfabric",
        40.0,
        1,
        {"racks": 2, "hosts_per_rack": 3, "spines": 1},
    )
    subprocess.run([*cmd, "--cxlTier=true"], check=True, capture_output=True)
    fct = read_fct_csv(out / "fct.csv").merge(t.flows[["flow_id", "kind"]], on="flow_id")
    assert (fct["finished"] == 1).all()
    assert (fct["fct_ns"] >= fct["ideal_fct_ns"]).all()
    cxl = fct[fct["kind"] == "cxl"]
    assert len(cxl) == t.counts["cxl_R"] and (cxl["ideal_fct_ns"] == 142).all()
    rpc = fct[fct["kind"] == "rpc"]
    assert dict(zip(rpc["size_bytes"], rpc["ideal_fct_ns"], strict=True)) == {16: 1461, 80: 1488}


def test_unscrambled_zipfian_makes_item_0_the_most_popular() -> None:
    # P(item 0) = 1 / zeta(n, 0.99) and P(item 1) = 2^-0.99 / zeta(n, 0.99) (YCSB's
    # ZipfianGenerator, Gray et al.); n = 1000: zeta = sum_{i<=1000} i^-0.99.
    n = 1000
    zeta_n = sum(i**-0.99 for i in range(1, n + 1))
    t = generate(
        RcmpParams(
            items=n, distribution="zipfian-unscrambled", ops_per_client=2500, hot_threshold=None
        )
    )
    keys = t.accesses["key"]
    total = len(keys)
    assert _within(int((keys == 0).sum()), total, 1 / zeta_n)
    assert _within(int((keys == 1).sum()), total, 2**-0.99 / zeta_n)
