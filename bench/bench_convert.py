"""Throughput of the trace converters (records/s, wall time, peak memory).

Inputs are built in a scratch directory (default /tmp/disaggsim-bench-convert) by tiling
the real fixtures of tests/fixtures/traces with shifted timestamps:

- classic pcap: the 17 loopback packets of lo_us.pcap, each record cut to a 128-byte
  snaplen (``tcpdump -s 128`` style: the reader takes sizes from the IP header), tiled to
  ``--packets`` records (default 3 M), timestamps shifted by one capture span per tile;
- pcapng: the first ``--pcapng-packets`` (default 300 k) of those, written by dpkt (ns);
- blktrace: loop.blktrace.{0,1} tiled to ``--blk-records`` (default 2 M) records;
- rmem: ``--rmem-records`` (default 1 M) lines of the batch form.

Each stage runs in its own process so its peak RSS (VmHWM) is its own. Wall time and CPU
time (``time.process_time``) are both printed: on a shared, loaded machine records per CPU
second is the reproducible figure.
Usage: .venv/bin/python bench/bench_convert.py [--packets N] [--scratch DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "traces"
SNAPLEN = 128


def _pcap_records(path: Path) -> tuple[bytes, list[tuple[int, int, int, bytes]]]:
    data = path.read_bytes()
    off, out = 24, []
    while off < len(data):
        sec, usec, incl, orig = struct.unpack_from("<IIII", data, off)
        out.append((sec * 1_000_000 + usec, orig, incl, data[off + 16 : off + 16 + incl]))
        off += 16 + incl
    return data[:24], out


def make_pcap(dst: Path, n_packets: int) -> None:
    header, recs = _pcap_records(FIX / "lo_us.pcap")
    t0 = recs[0][0]
    span = recs[-1][0] - t0 + 1000
    tile = [(t - t0, orig, frame[:SNAPLEN]) for t, orig, _, frame in recs]
    magic, vmaj, vmin, zone, sigfigs, _, network = struct.unpack("<IHHiIII", header)
    with dst.open("wb") as f:
        f.write(struct.pack("<IHHiIII", magic, vmaj, vmin, zone, sigfigs, SNAPLEN, network))
        written = 0
        k = 0
        while written < n_packets:
            chunk = []
            for dt, orig, frame in tile:
                if written >= n_packets:
                    break
                t = t0 + k * span + dt
                chunk.append(
                    struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(frame), orig) + frame
                )
                written += 1
            f.write(b"".join(chunk))
            k += 1


def make_pcapng(src: Path, dst: Path, n_packets: int) -> None:
    import dpkt

    with src.open("rb") as f_in, dst.open("wb") as f_out:
        reader = dpkt.pcap.Reader(f_in)
        idb = dpkt.pcapng.InterfaceDescriptionBlockLE(
            snaplen=SNAPLEN,
            linktype=1,
            opts=[
                dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL, data=b"\x09"),
                dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT),
            ],
        )
        w = dpkt.pcapng.Writer(f_out, snaplen=SNAPLEN, linktype=1, idb=idb)
        for i, (ts, frame) in enumerate(reader):
            if i >= n_packets:
                break
            t = int(round(ts * 1e6)) * 1000
            w.writepkt(
                dpkt.pcapng.EnhancedPacketBlockLE(
                    ts_high=t >> 32,
                    ts_low=t & 0xFFFFFFFF,
                    caplen=len(frame),
                    pkt_len=len(frame),
                    pkt_data=frame,
                )
            )


def make_blktrace(prefix: Path, n_records: int) -> None:
    sys.path.insert(0, str(ROOT))
    from disaggsim.traces.blktrace import read_records

    for cpu in (0, 1):
        src = FIX / "blk" / f"loop.blktrace.{cpu}"
        data = src.read_bytes()
        rec = read_records(src)
        per_tile = len(rec)
        span = 10**9
        tiles = max(1, n_records // 2 // per_tile)
        out = bytearray()
        base = bytearray(data)
        for k in range(tiles):
            buf = bytearray(base)
            for off, t in zip(rec["offset"], rec["time"], strict=True):
                struct.pack_into("<Q", buf, int(off) + 8, int(t) + k * span)
            out += buf
        (prefix.parent / f"{prefix.name}.blktrace.{cpu}").write_bytes(bytes(out))


def make_rmem(dst: Path, n_records: int) -> None:
    rng = np.random.default_rng(0)
    batch = np.arange(n_records) // 4
    ts = batch * 37
    page = rng.integers(0, 1 << 20, n_records)
    sign = np.where(rng.random(n_records) < 0.5, "-", "")
    npages = rng.integers(1, 9, n_records)
    dst.write_text(
        "".join(
            f"{b} {t} {s}{p} {n}\n"
            for b, t, s, p, n in zip(batch, ts, sign, page, npages, strict=True)
        )
    )
    (dst.parent / (dst.name + ".meta")).write_text("1795300000000000\n")


def stage(name: str, path: str) -> dict[str, object]:
    from disaggsim.traces.blktrace import read_blktrace
    from disaggsim.traces.paging import read_rmem
    from disaggsim.traces.pcap import ip_to_int, network_messages, read_pcap

    t = time.perf_counter()
    c = time.process_time()
    if name in ("pcap", "pcapng"):
        table = read_pcap(path)
        n = table.n_records
    elif name == "messages":
        table = read_pcap(path)
        t = time.perf_counter()
        c = time.process_time()
        msgs = network_messages(table, {ip_to_int("127.0.0.1"): 0, ip_to_int("127.0.0.2"): 1})
        n = len(table)
        extra = {"messages": len(msgs)}
    elif name == "blktrace":
        n = len(read_blktrace(path, actions="QGPUDC"))
    elif name == "rmem":
        n = len(read_rmem(path))
    else:
        raise ValueError(name)
    wall = time.perf_counter() - t
    cpu = time.process_time() - c
    hwm_kb = int(next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM")).split()[1])
    out: dict[str, object] = {
        "stage": name,
        "records": n,
        "wall_s": round(wall, 3),
        "records_per_s": round(n / wall),
        "cpu_s": round(cpu, 3),
        "records_per_cpu_s": round(n / cpu),
        "peak_rss_mib": round(hwm_kb / 1024),
    }
    if name == "messages":
        out.update(extra)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=3_000_000)
    ap.add_argument("--pcapng-packets", type=int, default=300_000)
    ap.add_argument("--blk-records", type=int, default=2_000_000)
    ap.add_argument("--rmem-records", type=int, default=1_000_000)
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/disaggsim-bench-convert"))
    ap.add_argument("--keep", action="store_true", help="keep the scratch inputs")
    ap.add_argument("--stage", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        print(json.dumps(stage(*args.stage)))
        return
    s = args.scratch
    s.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    make_pcap(s / "big.pcap", args.packets)
    make_pcapng(s / "big.pcap", s / "big.pcapng", args.pcapng_packets)
    make_blktrace(s / "big", args.blk_records)
    make_rmem(s / "big.rmem", args.rmem_records)
    os.sync()  # write the inputs back now, not while the first stage is timed
    print(f"inputs built in {time.perf_counter() - t:.1f} s in {s}:")
    for p in sorted(s.iterdir()):
        print(f"  {p.name}: {p.stat().st_size / 2**20:.1f} MiB")
    stages = [
        ("pcap", s / "big.pcap"),
        ("pcapng", s / "big.pcapng"),
        ("messages", s / "big.pcap"),
        ("blktrace", s / "big"),
        ("rmem", s / "big.rmem"),
    ]
    print(
        f"{'stage':10} {'records':>10} {'wall_s':>8} {'records/s':>12} {'cpu_s':>8} "
        f"{'records/cpu_s':>14} {'peak_rss_MiB':>13}"
    )
    for name, path in stages:
        res = subprocess.run(
            [sys.executable, __file__, "--stage", name, str(path)],
            check=True,
            capture_output=True,
            text=True,
        )
        r = json.loads(res.stdout.strip().splitlines()[-1])
        extra = f"  ({r['messages']} messages)" if "messages" in r else ""
        print(
            f"{r['stage']:10} {r['records']:>10} {r['wall_s']:>8} {r['records_per_s']:>12} "
            f"{r['cpu_s']:>8} {r['records_per_cpu_s']:>14} {r['peak_rss_mib']:>13}{extra}"
        )
    if not args.keep:
        shutil.rmtree(s)


if __name__ == "__main__":
    main()
