"""The sort job's map/reduce functions (testbed/apps/dask_sort.py) run locally, no cluster."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture

from disaggsim.testbed.apps.dask_sort import (
    RECORD_BYTES,
    gen_input,
    map_partition,
    reduce_partition,
)


def test_gen_map_reduce_sorts_all_records(tmp_path: Path) -> None:
    files = []
    for f in range(2):
        path = tmp_path / f"part-{f}"
        assert gen_input(path, 3000, first_record=f * 3000, seed=5) == 3000 * RECORD_BYTES
        files.append(path)
    rec0 = path.read_bytes()[:RECORD_BYTES]
    assert rec0[10:42] == b"%032x" % 3000 and rec0[-2:] == b"\r\n"  # gensort-style payload
    n_buckets = 4
    maps = [map_partition(str(p), n_buckets) for p in files]
    results = [
        reduce_partition(str(tmp_path / f"out-{b}"), *(m[b] for m in maps))
        for b in range(n_buckets)
    ]
    assert sum(r[0] for r in results) == 6000
    # Range partitioning: bucket b holds keys in [b/4, (b+1)/4) of the 64-bit prefix space,
    # uniform keys give ~1500 per bucket (binomial sd ~34).
    assert all(abs(r[0] - 1500) < 200 for r in results)
    for prev, cur in zip(results, results[1:], strict=False):
        assert prev[2] <= cur[1]
    allout = b"".join((tmp_path / f"out-{b}").read_bytes() for b in range(n_buckets))
    keys = [allout[i : i + 10] for i in range(0, len(allout), RECORD_BYTES)]
    assert keys == sorted(keys)
    inp = b"".join(p.read_bytes() for p in files)
    assert sorted(
        np.frombuffer(inp, np.uint8).reshape(-1, 100).tobytes()[i : i + 100]
        for i in range(0, len(inp), 100)
    ) == sorted(allout[i : i + 100] for i in range(0, len(allout), 100))
