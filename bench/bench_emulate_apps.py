"""Each ``disaggsim emulate`` application: working set and JCT without a limit, and its
degradation with a quarter of its working set local (issue #22 item 1).

For every preset given (default: every cluster preset of
:data:`disaggsim.swapdev.emulate_apps.PRESETS`) one ``disaggsim emulate`` sweep (the same
code as the command, :func:`disaggsim.swapdev.emulate.emulate`) on ``--backend``:

- ``--mode working-set``: ``local_fraction = 1`` with a budget of ``--budget-mib`` per
  node's holders, the zero-delay reference only (plus a 0 ns ``fixed`` point, the same
  run): the holders' peak summed PSS (runs.csv ``peak_rss_bytes``) per node and the JCT;
- ``--mode quarter``: ``local_fraction = 0.25`` of the preset's working set, the zero-delay
  reference and ``fixed`` ``--latency-us`` (bandwidth unlimited), ``--repeats`` each,
  interleaved (emulate's repeat-major order): median JCT and the median over the reference
  median (the paper's relative JCT, §3.1) with the min-max range.

``uptime``'s load average is read before and after each preset (2-core VM shared with
other work: the JCTs are noisy; the range shows how much). Needs root; takes the
machine-state lock (inside emulate).

Usage: .venv/bin/python bench/bench_emulate_apps.py --mode quarter --presets
timely-pagerank,hadoop-wordcount [--backend swap] [--repeats 3] [--latency-us 5]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import tempfile
from pathlib import Path

from disaggsim.swapdev import emulate, emulate_apps


def load() -> str:
    """The 1-minute load average (``/proc/loadavg``)."""
    return Path("/proc/loadavg").read_text().split()[0]


def run_preset(preset: str, args: argparse.Namespace, work: Path) -> list[dict[str, str]]:
    """One emulate sweep of ``preset``; its runs.csv rows."""
    if args.mode == "working-set":
        app = f"local_fraction = 1.0\nworking_set_bytes = {args.budget_mib << 20}\n"
        models = '[[models]]\nkind = "fixed"\nlatency_ns = 0\n'
        repeats = 1
    else:
        app = "local_fraction = 0.25\n"
        lat = ", ".join(str(int(float(x) * 1000)) for x in args.latency_us.split(","))
        models = f'[[models]]\nkind = "fixed"\nlatency_ns = [{lat}]\n'
        repeats = args.repeats
    config = work / f"{preset}.toml"
    config.write_text(
        f'[emulate]\nname = "{preset}"\nout_dir = "out"\nbackend = "{args.backend}"\n'
        f"repeats = {repeats}\ntimeout_s = {args.timeout_s}\n"
        f'[app]\npreset = "{preset}"\n{app}{models}'
    )
    out = emulate.emulate(emulate.load_emulate_config(config), progress=True)
    with open(out / "runs.csv") as handle:
        return list(csv.DictReader(handle))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["working-set", "quarter"], required=True)
    ap.add_argument(
        "--presets",
        default=",".join(n for n, p in emulate_apps.PRESETS.items() if p.app is not None),
    )
    ap.add_argument("--backend", choices=["swap", "uffd"], default="swap")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--latency-us", default="5")
    ap.add_argument("--budget-mib", type=int, default=1024)
    ap.add_argument("--timeout-s", type=float, default=600)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-emulate-apps-") as tmp:
        for preset in args.presets.split(","):
            before = load()
            try:
                runs = run_preset(preset, args, Path(tmp))
            except (RuntimeError, ValueError) as exc:  # one failed preset: say so, go on
                last = str(exc).splitlines()[-1][:200]
                rows.append(
                    f"| {preset} | {args.backend} | failed: {last} | | | | | {before} / {load()} |"
                )
                print(rows[-1], flush=True)
                continue
            after = load()
            spec = emulate_apps.PRESETS[preset]
            holders = (
                1
                if spec.n_nodes == 1 or preset in ("memcached-ycsb", "postgres-pgbench")
                else spec.n_nodes
            )
            ok = [r for r in runs if r["status"] == "ok"]
            ref = [float(r["jct_s"]) for r in ok if r["model"] == "none"]
            ref_med = statistics.median(ref) if ref else float("nan")
            for model in dict.fromkeys(r["model"] for r in runs):
                jcts = [float(r["jct_s"]) for r in ok if r["model"] == model]
                peaks = [int(r["peak_rss_bytes"]) for r in ok if r["model"] == model]
                med = statistics.median(jcts) if jcts else float("nan")
                rows.append(
                    f"| {preset} | {args.backend} | {model} | {len(jcts)} | {med:.2f} | "
                    f"{med / ref_med:.3f} ({min(jcts) / ref_med:.3f}-{max(jcts) / ref_med:.3f})"
                    f" | {max(peaks) / holders / 2**20:.0f} | {before} / {after} |"
                )
            print("\n".join(rows[-2:]), flush=True)
    print(
        "\n| preset | backend | model | runs | median JCT (s) | relative JCT (range) | "
        "peak PSS per node's holders (MiB) | load before / after |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    subprocess.run(["uptime"], check=False)


if __name__ == "__main__":
    main()
