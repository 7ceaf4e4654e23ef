"""Distributed sort of sort-benchmark records on a Dask cluster (one worker per node).

Dataset: records in the sort benchmark's format (sortbenchmark.org, ``gensort``): 100-byte
records, a 10-byte random binary key, then 90 bytes of payload (here the record number as
32 ASCII hex digits and filler), generated with NumPy's PCG64 from a seed, so the input is
reproducible offline. Each node holds ``files_per_node`` input files on its own data disk.

Job (the TeraSort structure, O'Malley, "TeraByte Sort on Apache Hadoop", 2008):

1. map, on the node that holds the file: read it from the local disk, range-partition the
   records by key into ``n_nodes * reducers_per_node`` buckets (keys are uniform, so the
   boundaries are the quantiles of the key space);
2. shuffle: Dask moves every bucket to the worker of its reducer (cross-node TCP traffic);
3. reduce, on that worker: concatenate its buckets, sort by key, write the output file to
   the local disk and return (records, first key, last key) so the driver can check the
   global order and the record count (as ``valsort`` does).

Workers run with ``--memory-limit 0``, so Dask never spills by itself: memory beyond the node's
memory cgroup limit is paged to swap by the kernel, which is what the paging trace records.

Run ``python -m disaggsim.testbed.apps.dask_sort --help``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Final

import numpy as np

RECORD_BYTES: Final = 100
KEY_BYTES: Final = 10


def gen_input(path: Path, n_records: int, first_record: int, seed: int) -> int:
    """Write ``n_records`` gensort-style records to ``path``; return bytes written.

    Keys are 10 uniform random bytes (PCG64 seeded by ``(seed, first_record)``); the payload
    is the record number in 32 hex digits, then ``"AAAA..."`` filler up to 100 bytes. The file
    is fsync'ed and dropped from the page cache (``POSIX_FADV_DONTNEED``) so the map phase reads
    it from the disk.
    """
    rng = np.random.Generator(np.random.PCG64([seed, first_record]))
    recs = np.empty((n_records, RECORD_BYTES), dtype=np.uint8)
    recs[:, :KEY_BYTES] = rng.integers(0, 256, size=(n_records, KEY_BYTES), dtype=np.uint8)
    numbers = np.char.zfill(
        np.char.mod("%x", np.arange(first_record, first_record + n_records)), 32
    ).astype("S32")
    recs[:, KEY_BYTES : KEY_BYTES + 32] = np.frombuffer(numbers.tobytes(), np.uint8).reshape(
        n_records, 32
    )
    recs[:, KEY_BYTES + 32 :] = ord("A")
    recs[:, -2:] = np.frombuffer(b"\r\n", np.uint8)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(recs.tobytes())
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    drop_cache(path)
    return recs.nbytes


def drop_cache(path: Path) -> None:
    """Evict ``path`` from the page cache (only this file; no global drop_caches)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def key_prefix(recs: np.ndarray) -> np.ndarray:
    """First 8 key bytes of each record as a big-endian uint64 (the partitioning key)."""
    return recs[:, :8].copy().view(">u8").ravel().astype(np.uint64)


def map_partition(path: str, n_buckets: int) -> list[bytes]:
    """Read an input file, range-partition its records into ``n_buckets`` by key."""
    data = Path(path).read_bytes()
    if len(data) % RECORD_BYTES:
        raise ValueError(f"{path}: size {len(data)} is not a multiple of {RECORD_BYTES} bytes")
    recs = np.frombuffer(data, np.uint8).reshape(-1, RECORD_BYTES)
    bucket = (key_prefix(recs) // np.uint64((1 << 64) // n_buckets + 1)).astype(np.int64)
    order = np.argsort(bucket, kind="stable")
    counts = np.bincount(bucket, minlength=n_buckets)
    edges = np.concatenate([[0], np.cumsum(counts)])
    sorted_recs = recs[order]
    return [sorted_recs[edges[b] : edges[b + 1]].tobytes() for b in range(n_buckets)]


def take(parts: list[bytes], i: int) -> bytes:
    """Bucket ``i`` of a map output (runs on the map worker, so only it crosses the net)."""
    return parts[i]


def reduce_partition(out_path: str, *buckets: bytes) -> tuple[int, bytes, bytes]:
    """Sort the records of one key range and write them to ``out_path``.

    Returns ``(records, first_key, last_key)``.
    """
    data = b"".join(buckets)
    recs = np.frombuffer(data, np.uint8).reshape(-1, RECORD_BYTES)
    keys = np.ascontiguousarray(recs[:, :KEY_BYTES]).view(f"S{KEY_BYTES}").ravel()
    order = np.argsort(keys, kind="stable")
    out = recs[order]
    tmp = out_path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(out.tobytes())
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, out_path)
    if len(out) == 0:
        return 0, b"", b""
    return len(out), bytes(out[0, :KEY_BYTES]), bytes(out[-1, :KEY_BYTES])


def run_job(
    scheduler: str,
    node_ips: list[str],
    data_dirs: list[str],
    files_per_node: int,
    reducers_per_node: int,
) -> dict[str, float]:
    """Run the sort on the cluster; returns statistics. Raises AssertionError if the output
    is not globally sorted or loses records."""
    from distributed import Client  # type: ignore[import-not-found]

    n_nodes = len(node_ips)
    client = Client(scheduler, timeout=60)
    client.wait_for_workers(n_nodes, timeout=120)
    by_ip = {}
    for addr in client.scheduler_info()["workers"]:
        by_ip[addr.split("://", 1)[1].rsplit(":", 1)[0]] = addr
    workers = [by_ip[ip] for ip in node_ips]
    n_buckets = n_nodes * reducers_per_node
    t0 = time.monotonic()
    maps = []
    for node in range(n_nodes):
        for f in range(files_per_node):
            path = f"{data_dirs[node]}/input/part-{f:04d}"
            maps.append(
                (
                    node,
                    client.submit(
                        map_partition, path, n_buckets, workers=[workers[node]], pure=False
                    ),
                )
            )
    reduces = []
    for b in range(n_buckets):
        node = b % n_nodes
        pieces = [
            client.submit(take, fut, b, workers=[workers[m_node]], pure=False)
            for m_node, fut in maps
        ]
        out_path = f"{data_dirs[node]}/output/part-{b:04d}"
        reduces.append(
            client.submit(reduce_partition, out_path, *pieces, workers=[workers[node]], pure=False)
        )
    results = client.gather(reduces)
    elapsed = time.monotonic() - t0
    n_out = sum(r[0] for r in results)
    nonempty = [r for r in results if r[0]]
    for prev, cur in zip(nonempty, nonempty[1:], strict=False):
        assert prev[2] <= cur[1], "output partitions overlap: not globally sorted"
    client.close()
    return {"records_out": n_out, "sort_s": elapsed, "buckets": n_buckets}


def main(argv: list[str] | None = None) -> int:
    """CLI: ``gen`` writes a node's input files; ``sort`` runs the job and prints JSON."""
    ap = argparse.ArgumentParser(prog="python -m disaggsim.testbed.apps.dask_sort")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--dir", required=True)
    g.add_argument("--node", type=int, required=True)
    g.add_argument("--files", type=int, required=True)
    g.add_argument("--records-per-file", type=int, required=True)
    g.add_argument("--seed", type=int, default=1)
    s = sub.add_parser("sort")
    s.add_argument("--scheduler", required=True)
    s.add_argument("--node-ips", required=True, help="comma-separated, node order")
    s.add_argument("--data-dirs", required=True, help="comma-separated, node order")
    s.add_argument("--files-per-node", type=int, required=True)
    s.add_argument("--reducers-per-node", type=int, default=2)
    s.add_argument("--expect-records", type=int, default=-1)
    args = ap.parse_args(argv)
    if args.cmd == "gen":
        base = Path(args.dir)
        (base / "input").mkdir(parents=True, exist_ok=True)
        (base / "output").mkdir(parents=True, exist_ok=True)
        total = 0
        for f in range(args.files):
            first = (args.node * args.files + f) * args.records_per_file
            total += gen_input(
                base / "input" / f"part-{f:04d}", args.records_per_file, first, args.seed
            )
        print(json.dumps({"bytes": total}), flush=True)
        return 0
    stats = run_job(
        args.scheduler,
        args.node_ips.split(","),
        args.data_dirs.split(","),
        args.files_per_node,
        args.reducers_per_node,
    )
    if args.expect_records >= 0 and stats["records_out"] != args.expect_records:
        raise SystemExit(f"sort lost records: {stats['records_out']} != {args.expect_records}")
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
