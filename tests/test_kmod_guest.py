"""The rmem kernel driver (``swapdev/kmod``) in a QEMU guest: Debian's 6.12 kernel under
TCG, Soft-RoCE (rdma_rxe) over the guest's virtio NIC, the memory server in the guest.

One boot for the whole module (``swapdev/kmod/guest/run-tests.sh``, about 2 minutes); the
guest writes ``key value`` lines and artifacts to a 9p share, and these tests check them
against independent oracles: the memtouch pattern (every word of every page), the kernel's
own swap counters, the configured delay (hand-computed fixed model), the userspace build
of the same delay core (``sd-tool``) and the artifact's FCT conversion, and the rmem trace
reader ``traces/paging.py read_rmem``. TCG runs guest code 100-1000x slower than
hardware, so times are functional, not performance figures (bench/RESULTS.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from disaggsim.analysis import export
from disaggsim.swapdev import device, emulate_kmod
from disaggsim.traces import paging

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "swapdev" / "kmod" / "guest" / "run-tests.sh"
PAGE = 4096

pytestmark = pytest.mark.skipif(
    shutil.which("qemu-system-x86_64") is None or shutil.which("busybox") is None,
    reason="qemu-system-x86 / busybox-static not installed (make deps)",
)

# Request sizes looked up in the kernel and in the userspace core: below one page, each
# listed size, between listed sizes, and beyond rmem.c's 4095-page table.
SIZES = [
    0,
    512,
    4095,
    4096,
    8191,
    8192,
    12288,
    32768,
    36864,
    65536,
    1 << 20,
    (1 << 20) + 4096,
    4095 * PAGE,
    4096 * PAGE,
    1 << 30,
]
# fct-sample draws: 4 KiB (FCTs 3 or 4 us), 12 KiB (the 8 KiB row), 1 MiB (250/350 us).
SAMPLE_SIZES = [4096, 12288, 1 << 20] * 100


def hand_fcts() -> pd.DataFrame:
    """Flows of 4, 8, 32, 64 KiB and 1 MiB with hand-picked FCTs (ns); mean FCTs
    3.5, 4.25, 9, 12.5 and 300 us (exact in binary floating point, so the
    artifact's int(float(us) * 1000) and the core's exact decimal parse agree)."""
    rows = [
        (4096, 3000),
        (4096, 4000),
        (8192, 4250),
        (32768, 9000),
        (65536, 12000),
        (65536, 13000),
        (1 << 20, 250000),
        (1 << 20, 350000),
    ]
    return pd.DataFrame(
        {
            "size_bytes": [r[0] for r in rows],
            "fct_ns": [r[1] for r in rows],
            "finished": [1] * len(rows),
        }
    )


def artifact_pages_ns(bytes_us: list[str]) -> list[str]:
    """rmem/convert_fct_to_ns.py (NetSys/disaggregation): ``<bytes> <us>`` ->
    ``<bytes // 4096> <int(float(us) * 1000)>``, the lines it writes to /proc/rmem_cdf."""
    out = []
    for line in bytes_us:
        size, us = line.split(" ")
        out.append(f"{int(size) // PAGE} {int(float(us) * 1000)}")
    return out


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    base = tmp_path_factory.mktemp("kmod")
    inp, out = base / "in", base / "out"
    inp.mkdir()
    out.mkdir()
    export.export_fct(hand_fcts(), inp / "fcts.txt", kinds=None)
    table = (inp / "fcts.txt").read_text().splitlines()
    (inp / "rmem_cdf.txt").write_text("\n".join(artifact_pages_ns(table)) + "\n")
    (inp / "sizes.txt").write_text(" ".join(map(str, SIZES)) + "\n")
    export.export_fct_distribution(hand_fcts(), inp / "dist.txt", kinds=None)
    (inp / "sizes_sample.txt").write_text(" ".join(map(str, SAMPLE_SIZES)) + "\n")
    proc = subprocess.run(
        [str(RUN), str(out), str(inp)], capture_output=True, text=True, timeout=600
    )
    failure = emulate_kmod.guest_failure(out, proc.returncode, proc.stderr, {"done": "1"})
    assert failure is None, failure
    return {"r": emulate_kmod.read_guest_results(out / "results.txt"), "out": out, "in": inp}


def res(guest: dict[str, object]) -> dict[str, str]:
    r = guest["r"]
    assert isinstance(r, dict)
    return r


def out_dir(guest: dict[str, object], name: str) -> Path:
    d = guest[name]
    assert isinstance(d, Path)
    return d


def test_guest_kernel_and_rxe(guest: dict[str, object]) -> None:
    r = res(guest)
    assert re.fullmatch(r"6\.12\.\d+\+deb12-amd64", r["kernel"])  # Debian's own kernel
    assert r["rxe_add_rc"] == "0" and r["rxe_state"] == "ACTIVE"
    assert r["server_ready"] == "1"
    assert r["rdma_insmod_rc"] == "0" and r["rdma_connected"] == "1"


@pytest.mark.parametrize("backend", ["ram", "rdma"])
def test_swap_keeps_data_over_4x_the_limit(guest: dict[str, object], backend: str) -> None:
    r = res(guest)
    assert r[f"{backend}_insmod_rc"] == "0" and r[f"{backend}_swapon_rc"] == "0"
    assert r[f"{backend}_memtouch_rc"] == "0"
    mib, limit = int(r[f"{backend}_mib"]), int(r[f"{backend}_limit_mb"])
    assert mib == 4 * limit
    stats = json.loads(r[f"{backend}_memtouch_json"])
    assert stats["pages"] == mib * 256
    assert stats["bad_pages"] == 0  # every word of every page read back intact
    # The group stayed well below its data (memory.high = limit, the peak includes the
    # overshoot before reclaim catches up), so most pages went out to rmem0 and came back.
    assert int(r[f"{backend}_high_events"]) > 0
    assert int(r[f"{backend}_peak_bytes"]) <= (mib << 20) // 2
    assert int(r[f"{backend}_pswpout"]) >= (mib - limit) * 256
    assert int(r[f"{backend}_pswpin"]) >= (mib - limit) * 256
    assert r[f"{backend}_swapoff_rc"] == "0"


def fixed_ns(r: dict[str, str], backend: str) -> int:
    return device.fixed_delay_ns(
        int(r[f"{backend}_latency_ns"]), int(r[f"{backend}_bandwidth_bps"]), PAGE
    )


def ints(r: dict[str, str], key: str) -> list[int]:
    return [int(v) for v in r[key].split()]


def check_delay_reaches_service_time(
    r: dict[str, str], backend: str, pairs: int, tolerance: float | None
) -> None:
    """tests.sh ``delay_pairs``: ``pairs`` pairs of 40-read blocks (O_DIRECT 4 KiB reads,
    one at a time), delay model none and fixed interleaved in ABBA order.

    Oracle: the driver spins for the delay inside the timed span (queue_rq entry to
    completion) before the data moves, so a delayed request's service time is the delay
    plus what the same request takes without it. Hence (1) every delayed request takes at
    least the delay (the blocks' exact minima: no noise enters this bound), and (2) the
    median over the pairs of (fixed block's p50 - none block's p50) is the delay, up to the
    transport's own variation between adjacent blocks (and the 1.6 % histogram buckets).
    ``tolerance``: the rise's allowed relative error; None: the bounds of the rdma check
    (``test_fixed_delay_raises_service_time_rdma``), from this run's own transfer time T
    (the none blocks' median p50): below, halfway to a delay that overlapped the transfer
    (a rise of D - min(D, T)); above, 7/4 D, between the spin's own slowdown of the
    transfer (a rise of (1 + b) D, b <= 1/2 measured) and a delay applied twice (2 D or
    more)."""
    want = fixed_ns(r, backend)
    assert want == 204000  # hand-computed: 200000 + 32768 bit / 8.192 Gbit/s
    assert int(r[f"{backend}_pairs"]) == pairs and int(r[f"{backend}_block"]) == 40
    assert int(r[f"{backend}_none_svc_n"]) == int(r[f"{backend}_fixed_svc_n"]) == pairs * 40
    # The core's delay, applied exactly, to every request of every delayed block.
    assert ints(r, f"{backend}_fixed_delay_mean_ns") == [want] * pairs
    minima = ints(r, f"{backend}_fixed_svc_min_ns")
    assert min(minima) >= want, (minima, want)
    none, fixed = ints(r, f"{backend}_none_svc_p50_ns"), ints(r, f"{backend}_fixed_svc_p50_ns")
    assert len(none) == len(fixed) == pairs
    rises = [f - n for f, n in zip(fixed, none, strict=True)]
    rise = statistics.median(rises)
    if tolerance is not None:
        assert abs(rise - want) <= tolerance * want, (rise, want, rises)
        return
    transfer = statistics.median(none)
    low, high = want - min(want, transfer) / 2, want * 7 / 4
    assert low <= rise <= high, (rise, low, high, transfer, rises)


def test_fixed_delay_raises_service_time_ram(guest: dict[str, object]) -> None:
    """RAM backend (a request takes about 2 us without delay): the paired median rise of
    the service time is the configured latency + 4096 * 8 / bandwidth = 200 us + 4 us
    within 5 %: the histogram's bucket width (1.6 %) plus TCG jitter."""
    check_delay_reaches_service_time(res(guest), "ram", pairs=10, tolerance=0.05)


def test_fixed_delay_raises_service_time_rdma(guest: dict[str, object]) -> None:
    """RDMA backend (rxe under TCG; a request takes T = 70-100 us without delay on the VM
    of 2026-11-27, 350-420 us on the slower one of 2026-11-28): the paired median rise
    over 31 pairs lies in [D - min(D, T) / 2, 7/4 D], D = 204 us.

    Below: halfway to a delay that overlapped the transfer instead of preceding it (a
    rise of D - min(D, T)): [~160 us at T = 85 us, 102 us at T = 400 us]; one outside the
    timed span (a rise of 0) fails it too, and the exact minimum bound as well.

    Above: the spin itself slows the transfer that follows it, by a share b of the spin
    (likely because the guest runs both vCPUs on one host thread in turn, ``-accel
    tcg,thread=single``, so rxe's packet processing waits while a vCPU spins). The
    paired rise is (1 + b) D: b = 0.05-0.07 on the VM of 2026-11-27 (4 runs); on the
    one of 2026-11-28 b = 0.22-0.45 in 10 runs at D = 204 us, 0.22-0.34 in 3 runs at
    D = 1 ms (so b scales with the spin, and a longer spin does not help), and 0.54 in
    one CI run (315 us, which failed the former bound of 3/2 D). A delay applied twice
    spins 2 D and rises by 2 (1 + b) D >= 2 D = 408 us. 7/4 D = 357 us lies between the
    two: 42 us above the highest correct rise seen, 51 us below the smallest doubled
    one. bench/RESULTS.md "kmod guest: the rdma delay check on a slower VM" has the
    runs. 31 pairs (about 1 s of guest time) narrow the median over the pairs, whose
    single rises spread over -49 to 2,961 us on the slower VM."""
    check_delay_reaches_service_time(res(guest), "rdma", pairs=31, tolerance=None)


def sd_tool(env: dict[str, str], sizes: list[int]) -> list[str]:
    build = device.build_dir()
    proc = subprocess.run(
        [str(build / "sd-tool"), "delay", *map(str, sizes)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_rmem_cdf_lookup_matches_userspace_core(guest: dict[str, object]) -> None:
    r = res(guest)
    inp, out = out_dir(guest, "in"), out_dir(guest, "out")
    assert r["cdf_load_rc"] == "0"
    kernel = (out / "kernel_lookup.txt").read_text().splitlines()
    cdf = str(inp / "rmem_cdf.txt")
    user = sd_tool(
        {"SWAPDEV_MODEL": "fct-mean", "SWAPDEV_FCT_FILE": cdf, "SWAPDEV_FCT_FORMAT": "pages-ns"},
        SIZES,
    )
    assert kernel == user
    # The export itself, read by the userspace core as "<bytes> <fct_us>": same lookup.
    user_bytes = sd_tool(
        {"SWAPDEV_MODEL": "fct-mean", "SWAPDEV_FCT_FILE": str(inp / "fcts.txt")}, SIZES
    )
    assert kernel == user_bytes
    # Hand-computed (rmem.c get_fct walks down to the largest listed page count <= size):
    got = {int(a): int(b) for a, b in (line.split() for line in kernel)}
    assert got[0] == got[4095] == 0 and got[4096] == got[8191] == 3500
    assert got[12288] == 4250 and got[36864] == 9000 and got[65536] == 12500
    assert got[(1 << 20) + 4096] == 300000 and got[1 << 30] == 300000
    # Reading /proc/rmem_cdf back gives the artifact's conversion of the export, line for
    # line (the guest converted it with the README's awk command).
    readback = (out / "rmem_cdf_readback.txt").read_text().splitlines()
    assert readback == (inp / "rmem_cdf.txt").read_text().splitlines()


def test_fct_sample_draws_match_userspace_core(guest: dict[str, object]) -> None:
    """/proc/rmem_dist loads an export-fct --distribution table; with the same seed (1)
    the module's draws are the userspace core's draw for draw."""
    r = res(guest)
    inp, out = out_dir(guest, "in"), out_dir(guest, "out")
    assert r["dist_load_rc"] == "0"
    kernel = (out / "kernel_sample.txt").read_text().splitlines()
    user = sd_tool(
        {
            "SWAPDEV_MODEL": "fct-sample",
            "SWAPDEV_FCT_FILE": str(inp / "dist.txt"),
            "SWAPDEV_SEED": "1",
        },
        SAMPLE_SIZES,
    )
    assert kernel == user
    draws = [int(line.split()[1]) for line in kernel]
    assert set(draws[0::3]) == {3000, 4000}  # the 4 KiB flows' FCTs, both drawn
    assert set(draws[1::3]) == {4250}
    assert set(draws[2::3]) == {250000, 350000}


def test_rmem_cdf_bad_line_is_rejected(guest: dict[str, object]) -> None:
    r = res(guest)
    assert r["cdf_bad_line_rc"] != "0"
    assert r["cdf_bad_line_dmesg"] == "1"  # "/proc/rmem_cdf: line 1 field 2: expected ..."


def test_rmem_log_parses_with_the_converter(guest: dict[str, object]) -> None:
    r = res(guest)
    log = out_dir(guest, "out") / "rmem.log"
    df = paging.read_rmem(log)
    assert r["rdma_log_dropped"] == "0"
    assert len(df) > 0
    assert df["batch_id"].tolist() == list(range(len(df)))
    assert df["time_us"].is_monotonic_increasing
    assert df["realtime_ns"].iloc[0] > 1_600_000_000 * 10**9  # epoch µs, as rmem.c
    assert ((df["page"] + df["npages"]) <= 128 * 256).all()  # inside the 128 MiB device
    pages_in = int(df.loc[df["op"] == "R", "npages"].sum())
    pages_out = int(df.loc[df["op"] == "W", "npages"].sum())
    # Every swapped page is in the trace (plus mkswap's and the partition scan's I/O).
    assert pages_in >= int(r["rdma_pswpin"])
    assert pages_out >= int(r["rdma_pswpout"])


def test_rmem_log_converts_to_flows(guest: dict[str, object], tmp_path: Path) -> None:
    """`disaggsim convert` on a sample whose paging trace is the module's log: one memory
    flow per logged request, the same bytes, reads and writes kept apart."""
    log = out_dir(guest, "out") / "rmem.log"
    sample = tmp_path / "sample"
    sample.mkdir()
    shutil.copy(log, sample / "node0.rmem")
    (sample / "meta.json").write_text(
        json.dumps(
            {
                "sample": "rmem-guest",
                "page_bytes": PAGE,
                "swap_bytes": 128 << 20,
                "nodes": [{"node": 0, "ip": "10.0.2.15", "paging": "node0.rmem"}],
            }
        )
    )
    cli = Path(sys.executable).parent / "disaggsim"
    proc = subprocess.run(
        [str(cli), "convert", str(sample), "--out", str(tmp_path / "flows")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    flows = pd.read_parquet(tmp_path / "flows.parquet")
    trace = paging.read_rmem(log)
    assert len(flows) == len(trace)
    assert int(flows["size_bytes"].sum()) == int(trace["size_bytes"].sum())
    counts = flows["kind"].value_counts()
    assert counts["mem_read"] == int((trace["op"] == "R").sum())
    assert counts["mem_write"] == int((trace["op"] == "W").sum())


def rdma_counts(line: str) -> dict[str, int]:
    """``0: rxe0: pd 1 cq 1 qp 1 cm_id 0 ...`` -> {"pd": 1, ...}."""
    words = line.split()[2:]
    return {k: int(v) for k, v in zip(words[::2], words[1::2], strict=True)}


def test_unload_is_clean(guest: dict[str, object]) -> None:
    r = res(guest)
    for phase in ("ram", "rdma", "kill"):
        assert r[f"{phase}_rmmod_rc"] == "0"
        assert r[f"{phase}_leftover"] == "0"  # no /dev/rmem0, no /proc/rmem_*
    assert r["server_saw_disconnect"] == "1"
    before = rdma_counts(r["rdma_res_before"])
    after = rdma_counts(r["rdma_res_after_rmmod"])
    # With the server still up: the driver's QP, CQ and CM id are gone (the server keeps
    # its listener, PD and MR).
    assert after["qp"] == before["qp"] and after["cq"] == before["cq"]
    assert after["cm_id"] == before["cm_id"] + 1  # the server's listening id
    # After the server is gone too: exactly the resources of a fresh rxe device.
    assert rdma_counts(r["rdma_res_after_kill"]) == before


def test_bad_parameters_and_refused_connection(guest: dict[str, object]) -> None:
    r = res(guest)
    # busybox insmod retries a failed finit_module with init_module: one message per try.
    assert r["badparam_insmod_rc"] == "22" and int(r["badparam_dmesg"]) >= 1  # EINVAL
    assert r["refused_insmod_rc"] == "111" and int(r["refused_dmesg"]) >= 1  # ECONNREFUSED
    # The failed connect released its PD, CQ, QP and CM id.
    assert r["rdma_res_after_refused"] == r["rdma_res_server_idle"]
    assert r["badmodel_rc"] != "0" and r["badmodel_model"] == "none"


def test_killed_server_fails_io_without_hang(guest: dict[str, object]) -> None:
    r = res(guest)
    assert r["kill_insmod_rc"] == "0"
    assert r["kill_dd_rc"] not in ("0", "124")  # failed, and not by the 120 s timeout
    assert r["kill_dd_eio"] == "1"
    assert float(r["kill_fail_s"]) < 30
    assert r["kill_connected"] == "0"
    assert int(r["kill_errors"]) >= 1
    assert r["kill_after_read_rc"] != "0"  # later requests fail at once


def test_emulate_drives_the_kernel_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`disaggsim emulate` with backend = "kmod": memtouch over 32 MiB with 16 MiB local
    (memory.high) in the guest, zero delay and fixed 200 us per request, one boot. Both
    runs keep every page intact and swap through rmem0 (at least the 16 MiB over the
    limit out and back). The delay, by oracles TCG's timing noise cannot break (the
    device's own counts over each run, reported by the guest): the zero-delay run has no
    delay applied; the delayed run has one of exactly 200 us on every request it served,
    and its JCT is at least its swap-ins x 200 us (memtouch has one thread, and with
    vm.page-cluster 0 each swap-in is one page's read that blocks it for the delay).
    A JCT comparison of two single TCG runs is not asserted: noise can reverse it."""
    import csv

    from disaggsim.swapdev import emulate

    reported: list[dict[str, Any]] = []
    run_sweep = emulate_kmod.run_sweep

    def spy(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        out = run_sweep(*args, **kwargs)
        reported.extend(out)
        return out

    monkeypatch.setattr(emulate_kmod, "run_sweep", spy)

    cfg_path = tmp_path / "kmod.toml"
    cfg_path.write_text(
        '[emulate]\nname = "kmod"\nout_dir = "out"\nbackend = "kmod"\nrepeats = 1\n'
        'timeout_s = 300\n[app]\ncommand = ["{build}/memtouch", "32", "1"]\n'
        "working_set_bytes = 33554432\nlocal_fraction = 0.5\n"
        '[[models]]\nkind = "fixed"\nlatency_ns = 200000\n'
    )
    out = emulate.emulate(emulate.load_emulate_config(cfg_path), progress=False)
    with open(out / "runs.csv") as f:
        rows = {r["model"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"none", "fixed-200000ns"}
    for row in rows.values():
        assert row["status"] == "ok"
        assert int(row["swap_out_bytes"]) >= 16 << 20
        assert int(row["swap_in_bytes"]) >= 16 << 20
    none, fixed = reported  # emulate's order: the reference, then the model
    assert none["delay_n"] == 0 and none["device_reads"] >= 4096
    assert fixed["delay_n"] == fixed["device_reads"] + fixed["device_writes"] > 0
    assert fixed["delay_mean_ns"] == 200_000
    swap_in_pages = int(rows["fixed-200000ns"]["swap_in_bytes"]) // PAGE
    assert fixed["device_reads"] >= swap_in_pages >= 4096
    assert float(rows["fixed-200000ns"]["jct_s"]) >= swap_in_pages * 200e-6
