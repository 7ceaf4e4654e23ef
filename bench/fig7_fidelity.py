"""Compare the paper-fig7 campaign's memcached pFabric FCTs with the artifact's tables.

The OSDI'16 artifact publishes pFabric's mean FCT by flow size per application
(NetSys/disaggregation rmem/fcts/{40g,100g}/fcts_{tm,tmrs}_pfabric_memcached.txt, lines
``<bytes> <fct_us>``; tm = datacenter scale, tmrs = rack scale). The few numbers compared
are quoted below (the files are not in this repository).

The artifact's simulator ends a flow when the sender holds the last ACK (its oracle adds a
round trip: NetSys/simulator coresim/topology.cpp ``get_oracle_fct``); ours ends when the
receiver holds the last byte (disaggsim.schemas.FCT_RECORDS). Besides our raw FCT the
script prints an ACK-inclusive FCT: each flow's FCT plus its last ACK's lone return trip
under the authors-sim delays (220 ns within a rack, 1020 ns across racks, plus a 58 B
ACK frame's serialization), which is the like for like comparison.

Run after ``disaggsim run configs/paper-fig7.toml``:

    .venv/bin/python bench/fig7_fidelity.py [results/paper-fig7]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from disaggsim.analysis.fct_file import FctFile
from disaggsim.analysis.fig7 import fig7_tables_file
from disaggsim.sim.delays import authors_oracle_fct_ns

#: Artifact's pFabric mean FCT in us for memcached, by (rate_gbps, scope, size_bytes).
ARTIFACT_US = {
    (40.0, "datacenter", 4096): 2.86434658568,
    (40.0, "datacenter", 8192): 3.82514685279,
    (40.0, "datacenter", 65536): 17.8286391994,
    (40.0, "rack", 4096): 1.38987889843,
    (40.0, "rack", 8192): 2.35594424905,
    (40.0, "rack", 65536): 16.2497006826,
    (100.0, "datacenter", 4096): 2.26823347512,
    (100.0, "datacenter", 8192): 2.63010750533,
    (100.0, "datacenter", 65536): 8.40832807935,
    (100.0, "rack", 4096): 0.813511364745,
    (100.0, "rack", 8192): 1.18321830433,
    (100.0, "rack", 65536): 6.52247127368,
}
WORKLOAD = "memcached-ycsb"


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0] if argv else "results/paper-fig7")
    path = out_dir / "fct.parquet"
    # only memcached's pFabric runs are read (the whole table of a whole-trace campaign does
    # not fit in memory: disaggsim.analysis.fct_file)
    pfabric = FctFile(path).read_group(
        ["workload", "protocol"],
        (WORKLOAD, "pfabric"),
        ["src_host", "dst_host", "size_bytes", "fct_ns", "finished", "rate_gbps", "scope"],
    )
    mem = pfabric[pfabric["finished"] == 1].copy()
    same_rack = (mem["src_host"] // 16) == (mem["dst_host"] // 16)
    ack_return_ns = np.where(same_rack, 220.0, 1020.0) + 58 * 8 / mem["rate_gbps"]
    mem["fct_ack_ns"] = mem["fct_ns"] + ack_return_ns
    oracle = np.array(
        [
            authors_oracle_fct_ns(int(s), float(r), bool(sr))
            for s, r, sr in zip(mem["size_bytes"], mem["rate_gbps"], same_rack, strict=True)
        ]
    )
    mem["oracle_ns"] = oracle
    print(
        "| rate | scope | size B | flows | ours us | ours+ACK us | artifact us | "
        "(ours+ACK)/artifact | authors' oracle us |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (rate, scope, size), artifact in ARTIFACT_US.items():
        rows = mem[
            (mem["rate_gbps"] == rate) & (mem["scope"] == scope) & (mem["size_bytes"] == size)
        ]
        ours = rows["fct_ns"].mean() / 1e3
        ack = rows["fct_ack_ns"].mean() / 1e3
        print(
            f"| {rate:g} | {scope} | {size} | {len(rows)} | {ours:.3f} | {ack:.3f} | "
            f"{artifact:.3f} | {ack / artifact:.2f} | {rows['oracle_ns'].mean() / 1e3:.3f} |"
        )
    print()
    per_run, _ = fig7_tables_file(path)  # mean slowdown of each run's finished flows
    slow = (
        per_run.set_index(["workload", "rate_gbps", "scope", "protocol", "seed"])["slowdown_mean"]
        .sort_index()
        .unstack("seed")
    )
    slow["spread"] = slow.max(axis=1) - slow.min(axis=1)
    print(slow.round(3).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
