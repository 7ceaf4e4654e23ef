"""The swap device's delay core from Python: fct-mean against the original artifact's
semantics on hand-made tables, fct-sample against a hand-made FCT distribution exported by
``export_fct_distribution``, and the C rmem trace writer against the reader in
``traces/paging.py``. (The core's own C tests: ``swapdev/test/test_sd_delay.c``, ctest.)
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from disaggsim.analysis import export
from disaggsim.swapdev import device
from disaggsim.traces import paging

try:
    BUILD = device.build_dir()
except FileNotFoundError:  # pragma: no cover - `make test` builds first
    BUILD = None
pytestmark = pytest.mark.skipif(BUILD is None, reason="swapdev not built (make build)")


def sd_delay(env: dict[str, str], sizes: list[int]) -> list[int]:
    """Delays (ns) the C core gives ``sizes`` (bytes) under the model in ``env``."""
    assert BUILD is not None
    proc = subprocess.run(
        [str(BUILD / "sd-tool"), "delay", *map(str, sizes)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert [int(r[0]) for r in rows] == sizes
    return [int(r[1]) for r in rows]


def rmem_get_fct(table_lines: list[str], fmt: str, size_bytes: int) -> int:
    """Independent oracle: the artifact's pipeline. ``rmem/convert_fct_to_ns.py`` turns
    ``<bytes> <us>`` into ``<bytes // 4096> <int(us * 1000)>``; ``rmem.c`` cdf_write keeps
    ``0 < pages < 4096`` (later lines overwrite), get_fct(count) walks down from
    ``min(count, 4095)`` to the first non-zero entry, else 0."""
    fct_by_size = [0] * 4096
    for line in table_lines:
        a, b = line.split()
        pages, ns = (
            (int(a) // 4096, int(float(b) * 1000)) if fmt == "bytes-us" else (int(a), int(b))
        )
        if 0 < pages < 4096:
            fct_by_size[pages] = ns
    count = size_bytes // 4096
    for i in range(min(count, 4095), -1, -1):
        if fct_by_size[i]:
            return fct_by_size[i]
    return 0


SIZES = [
    0,
    4095,
    4096,
    8191,
    8192,
    12288,
    16384,
    65536,
    65536 * 4096,
    4095 * 4096,
    4096 * 4096,
    1 << 30,
]


@pytest.mark.parametrize(
    ("fmt", "lines"),
    [
        # The artifact's fcts_*.txt shape (Python 2 str(float)), a sub-page and a too-large
        # size (both ignored by rmem.c), two sizes of the same page count (last wins).
        (
            "bytes-us",
            [
                "100 0.5",
                "4096 2.99671096504",
                "6000 3.25",
                "16384 4.02832461274",
                "1048576 27.5",
                "16777216 650.128",
            ],
        ),
        # /proc/rmem_cdf lines; no 1-page entry: single pages get 0, as in rmem.c.
        ("pages-ns", ["2 3500", "3 4000", "32 12000", "4095 900000"]),
    ],
)
def test_fct_mean_follows_rmem_c(tmp_path: Path, fmt: str, lines: list[str]) -> None:
    table = tmp_path / "fcts.txt"
    table.write_text("\n".join(lines) + "\n")
    env = {"SWAPDEV_MODEL": "fct-mean", "SWAPDEV_FCT_FILE": str(table), "SWAPDEV_FCT_FORMAT": fmt}
    sizes = SIZES + [p * 4096 for p in (1, 2, 3, 4, 5, 31, 32, 33, 255, 256, 257, 4094)]
    got = sd_delay(env, sizes)
    assert got == [rmem_get_fct(lines, fmt, s) for s in sizes]
    if fmt == "bytes-us":  # hand-computed: 6000 B is page 1 too and overrides 4096's 2.996
        assert got[sizes.index(4096)] == 3250
        assert got[sizes.index(16384)] == 4028
        assert got[sizes.index(1 << 30)] == 27500  # 16 MiB = 4096 pages is ignored


def test_bad_table_names_file_line_field(tmp_path: Path) -> None:
    assert BUILD is not None
    table = tmp_path / "bad.txt"
    table.write_text("4096 2.5\n8192 3.1e2\n")
    proc = subprocess.run(
        [str(BUILD / "sd-tool"), "delay", "4096"],
        env={**os.environ, "SWAPDEV_MODEL": "fct-mean", "SWAPDEV_FCT_FILE": str(table)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert f"{table}:2: field 2:" in proc.stderr
    assert "'<bytes> <fct_us>'" in proc.stderr


def hand_fcts() -> pd.DataFrame:
    """4 flows of 4 KiB (FCTs 1, 2, 2, 4 us) and 250 flows of 8 KiB (1..250 us)."""
    sizes = [4096] * 4 + [8192] * 250
    fcts = [1000, 2000, 2000, 4000] + [1000 * i for i in range(1, 251)]
    return pd.DataFrame({"size_bytes": sizes, "fct_ns": fcts, "finished": [1] * len(sizes)})


def test_distribution_export_is_the_empirical_cdf(tmp_path: Path) -> None:
    out = tmp_path / "dist.txt"
    summary = export.export_fct_distribution(hand_fcts(), out, kinds=None, max_points=100)
    lines = out.read_text().splitlines()
    # 4 KiB: exact CDF with the two 2 us flows merged: P(<=1)=.25, P(<=2)=.75, P(<=4)=1.
    assert lines[:3] == ["4096 0.25 1.000", "4096 0.75 2.000", "4096 1 4.000"]
    # 8 KiB: 250 flows > 100 points: f_ceil(k * 250 / 100): k=1 -> f_3, k=100 -> f_250.
    assert lines[3] == "8192 0.01 3.000"
    assert lines[4] == "8192 0.02 5.000"
    assert lines[-1] == "8192 1 250.000"
    assert len(lines) == 3 + 100
    assert (summary.sizes, summary.flows, summary.unfinished) == (103, 254, 0)


def test_fct_sample_draws_from_the_exported_distribution(tmp_path: Path) -> None:
    out = tmp_path / "dist.txt"
    export.export_fct_distribution(hand_fcts(), out, kinds=None)
    env = {"SWAPDEV_MODEL": "fct-sample", "SWAPDEV_FCT_FILE": str(out), "SWAPDEV_SEED": "7"}
    draws = sd_delay(env, [4096] * 20000 + [12288] * 20000 + [4095])
    small = Counter(draws[:20000])
    assert set(small) == {1000, 2000, 4000}
    # Binomial sd for p=.25 over 20000 draws: 0.0031; tolerance 0.015 (~5 sd).
    assert abs(small[1000] / 20000 - 0.25) < 0.015
    assert abs(small[2000] / 20000 - 0.50) < 0.015
    assert abs(small[4000] / 20000 - 0.25) < 0.015
    # 12 KiB uses the 8 KiB distribution (largest size <= request): 100 equiprobable
    # quantiles f_3, f_5, f_8, ..., f_250 of 1..250 us; mean of ceil(2.5k) us, k=1..100.
    large = draws[20000:40000]
    oracle_mean = sum(1000 * -(-5 * k // 2) for k in range(1, 101)) / 100
    assert abs(sum(large) / len(large) - oracle_mean) < 0.03 * oracle_mean
    assert min(large) == 3000 and max(large) == 250000
    assert draws[-1] == 0  # below the smallest size


def test_c_trace_writer_parses_with_the_python_reader(tmp_path: Path) -> None:
    assert BUILD is not None
    records = [  # batch, time_us (epoch), op, page, npages
        (0, 1795483105387883, "R", 0, 1),
        (0, 1795483105387883, "W", 17, 32),
        (1, 1795483105388062, "R", 123456789, 1),
        (2, 1795483105390000, "W", 0, 4096),
    ]
    args = [str(x) for rec in records for x in rec]
    proc = subprocess.run(
        [str(BUILD / "sd-tool"), "trace", *args], capture_output=True, text=True, check=True
    )
    trace = tmp_path / "t.rmem"
    trace.write_text(proc.stdout)
    assert proc.stdout.splitlines()[0] == "0 1795483105387883 -0 1"
    df = paging.read_rmem(trace)
    assert list(df["batch_id"]) == [r[0] for r in records]
    assert list(df["time_us"]) == [r[1] for r in records]
    assert list(df["op"]) == [r[2] for r in records]
    assert list(df["page"]) == [r[3] for r in records]
    assert list(df["npages"]) == [r[4] for r in records]
    assert list(df["realtime_ns"]) == [r[1] * 1000 for r in records]


def test_cli_export_fct_distribution(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from disaggsim.cli import main

    fct = hand_fcts().assign(protocol="pfabric", kind="mem_read")
    fct.to_parquet(tmp_path / "fct.parquet")
    out = tmp_path / "dist.txt"
    assert (
        main(["export-fct", str(tmp_path / "fct.parquet"), "--distribution", "--out", str(out)])
        == 0
    )
    assert "103 CDF points from 254 flows" in capsys.readouterr().out
    assert out.read_text().splitlines()[:3] == [
        "4096 0.25 1.000",
        "4096 0.75 2.000",
        "4096 1 4.000",
    ]
