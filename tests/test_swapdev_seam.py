"""The device's model seam (issue #23 step 0): requests, the one name table, the link model
and the FUSE backend's queue depth.

- Every existing delay model gives the delays it gave before the core took a request:
  ``swapdev/test/oracle/delays.txt`` was computed by the size-only core of main at 4d6b512
  (``make_oracle.sh`` says how) over a grid of sizes, tables and seeds.
- The ``link`` model gives hand-derived completion times for overlapping requests.
- The model and policy names live in one list each (``core/sd_models.def``,
  ``src/policies.def``); the compiled device and the Python side agree with them, and no
  other source file lists them.
- The FUSE backend serves requests concurrently (root, FUSE: under the machine-state lock).
"""

from __future__ import annotations

import mmap
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from disaggsim.swapdev import device
from disaggsim.testbed import collect_env
from disaggsim.traces import paging

REPO = Path(__file__).resolve().parents[1]
ORACLE = REPO / "swapdev" / "test" / "oracle"

try:
    BUILD: Path | None = device.build_dir()
except FileNotFoundError:  # pragma: no cover
    BUILD = None
needs_build = pytest.mark.skipif(BUILD is None, reason="swapdev not built (make build)")


def oracle_sections() -> list[tuple[dict[str, str], list[str], list[str]]]:
    """(environment, sizes, "<size> <delay>" lines) per section of the oracle file."""
    sections: list[tuple[dict[str, str], list[str], list[str]]] = []
    for line in (ORACLE / "delays.txt").read_text().splitlines():
        if line.startswith("## "):
            env = dict(kv.split("=", 1) for kv in line[3:].split())
            sections.append((env, [], []))
        else:
            sections[-1][1].append(line.split()[0])
            sections[-1][2].append(line)
    return sections


def sd_tool(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert BUILD is not None
    return subprocess.run(
        [str(BUILD / "sd-tool"), *args],
        cwd=ORACLE,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )


@needs_build
def test_existing_models_give_the_old_delays() -> None:
    sections = oracle_sections()
    kinds = {env["SWAPDEV_MODEL"] for env, _, _ in sections}
    assert kinds == {"none", "fixed", "fct-mean", "fct-sample"}  # every model before #23
    assert len(sections) == 13
    for env, sizes, want in sections:
        proc = sd_tool(["delay", *sizes], env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == want, env


@needs_build
def test_link_model_finish_times_are_hand_derived() -> None:
    """latency 1000 ns, 8.192 Gbit/s: a 4 KiB transfer holds the link 4000 ns.

    A 4 KiB at 0: transfer 0-4000, done 5000. B 4 KiB at 1000: waits for A, 4000-8000,
    done 9000. C 8 KiB at 2000: waits for B, 8000-16000, done 17000. D 4 KiB at 30000:
    link idle, 30000-34000, done 35000. E a write of 4 KiB at 30500: 34000-38000, 39000.
    """
    reqs = [
        "R",
        "0",
        "4096",
        "0",
        "R",
        "4096",
        "4096",
        "1000",
        "W",
        "8192",
        "8192",
        "2000",
        "R",
        "0",
        "4096",
        "30000",
        "W",
        "0",
        "4096",
        "30500",
    ]
    proc = sd_tool(
        ["requests", *reqs],
        {
            "SWAPDEV_MODEL": "link",
            "SWAPDEV_LATENCY_NS": "1000",
            "SWAPDEV_BANDWIDTH_BPS": "8192000000",
        },
    )
    assert proc.returncode == 0, proc.stderr
    got = [tuple(map(int, line.split())) for line in proc.stdout.splitlines()]
    assert got == [(5000, 5000), (8000, 9000), (15000, 17000), (5000, 35000), (8500, 39000)]
    # The same requests under "fixed" (no shared link): each 1000 + its own transfer.
    proc = sd_tool(
        ["requests", *reqs],
        {
            "SWAPDEV_MODEL": "fixed",
            "SWAPDEV_LATENCY_NS": "1000",
            "SWAPDEV_BANDWIDTH_BPS": "8192000000",
        },
    )
    assert [int(line.split()[0]) for line in proc.stdout.splitlines()] == [
        5000,
        5000,
        9000,
        5000,
        5000,
    ]


def quoted_names(text: str, names: tuple[str, ...]) -> set[str]:
    return {n for n in names if f'"{n}"' in text}


def test_name_tables_are_the_only_lists() -> None:
    """Python reads the C tables; no other source file names three or more models (a
    list restated), nor both eviction policies or both paging policies."""
    assert device.MODEL_NAMES == ("none", "fixed", "fct-mean", "fct-sample", "link")
    assert device.PAGING_POLICIES == ("demand", "comex")
    assert device.EVICTION_POLICIES == ("fifo", "clock")
    tables = {
        REPO / "swapdev" / "core" / "sd_models.def",
        REPO / "swapdev" / "src" / "policies.def",
    }
    sources = [
        p
        for d in ("swapdev", "disaggsim", "traces", "sim", "analysis")
        for p in (REPO / d).rglob("*")
        if p.suffix in (".c", ".h", ".py", ".def")
    ]
    assert len(sources) > 20
    for path in sources:
        if path in tables or "test" in path.parts:
            continue
        text = path.read_text(errors="replace")
        assert len(quoted_names(text, device.MODEL_NAMES)) < 3, path
        assert len(quoted_names(text, device.EVICTION_POLICIES)) < 2, path
        assert len(quoted_names(text, device.PAGING_POLICIES)) < 2, path


@needs_build
def test_compiled_device_lists_the_same_names() -> None:
    """The C side's error message is made from its table: the same names, same order."""
    proc = sd_tool(["delay", "4096"], {"SWAPDEV_MODEL": "bogus"})
    assert proc.returncode == 2
    m = re.search(r"SWAPDEV_MODEL=bogus: expected one of (.*)$", proc.stderr.strip())
    assert m is not None, proc.stderr
    assert tuple(m.group(1).split()) == device.MODEL_NAMES
    with pytest.raises(ValueError, match="SWAPDEV_MODEL=bogus: expected one of none, fixed"):
        device.DelayModel("bogus")


# ---- the FUSE backend's queue depth (root, FUSE mount: machine state) ----

T_NS = 50_000_000  # the per-request delay of these runs: 50 ms
READERS = 4


def fuse_run(tmp: Path, model: device.DelayModel, depth: int) -> tuple[list[int], device.Histogram]:
    """READERS threads each read one 4 KiB page of dev.img with O_DIRECT at the same time
    (a barrier); returns the requests' completion times (rmem trace, us), sorted, and the
    histogram of the model's delays (``target``)."""
    with collect_env.UndoStack() as stack:
        dev = device.fuse_daemon(stack, tmp, 1 << 20, model, queue_depth=depth)
        fd = os.open(tmp / "mnt" / "dev.img", os.O_RDONLY | os.O_DIRECT)
        stack.callback(os.close, fd)
        barrier = threading.Barrier(READERS)
        errors: list[BaseException] = []

        def reader(i: int) -> None:
            buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT wants
            try:
                barrier.wait()
                assert os.preadv(fd, [buf], 4096 * (i + 1)) == 4096
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=reader, args=(i,)) for i in range(READERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        stack.close()  # the daemon exits: trace written
        trace = paging.read_rmem(dev.trace)
    assert len(trace) == READERS and (trace["op"] == "R").all()
    assert sorted(trace["page"]) == list(range(1, READERS + 1))
    return sorted(int(t) for t in trace["time_us"]), device.read_histograms(dev.hist)["target"]


fuse_ready = pytest.mark.skipif(
    os.geteuid() != 0
    or not Path("/dev/fuse").exists()
    or BUILD is None
    or shutil.which("fusermount3") is None,
    reason="needs root, /dev/fuse and the build",
)


@fuse_ready
def test_fuse_serves_requests_concurrently(tmp_path: Path) -> None:
    """fixed 50 ms: at queue depth 1 the four reads complete one after another (>= 50 ms
    apart); at depth 4 they overlap (all four within one 50 ms window). link with the same
    50 ms transfer T (4096 * 8 bit at 655,360 bit/s) at depth 4: the four arrive within T
    (the overlap run shows they do), so the k-th to take the link completes at a_1 + kT and
    is given a delay in ((k-1)T, kT]: the first exactly T, the last more than 3T. (The
    model's delays, not the logged completion times, which a loaded machine delays.)"""
    fixed = device.DelayModel("fixed", latency_ns=T_NS)
    link = device.DelayModel("link", bandwidth_bps=4096 * 8 * 10**9 // T_NS)
    with device.system_lock():
        before = collect_env.system_state()
        serial, serial_target = fuse_run(tmp_path / "d1", fixed, 1)
        overlap, overlap_target = fuse_run(tmp_path / "d4", fixed, READERS)
        _, link_target = fuse_run(tmp_path / "l4", link, READERS)
        assert collect_env.system_state() == before
    t_us = T_NS // 1000
    assert serial_target.min_ns == serial_target.max_ns == T_NS
    assert overlap_target.min_ns == overlap_target.max_ns == T_NS
    assert all(b - a >= t_us for a, b in zip(serial, serial[1:], strict=False)), serial
    assert overlap[-1] - overlap[0] < t_us, overlap
    assert link_target.n == READERS and link_target.min_ns == T_NS
    assert 3 * T_NS < link_target.max_ns <= 4 * T_NS
