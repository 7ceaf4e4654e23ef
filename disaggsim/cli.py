"""The ``disaggsim`` command line: each subcommand parses, calls one library function, prints.

The same functions are importable from notebooks (CONTRIBUTING.md, "One flow through the code"):

    collect     -> disaggsim.testbed.collect.collect
    convert     -> disaggsim.traces.convert.convert (+ placement.place, yaps export)
    gen         -> disaggsim.traces.workloads.generate
    run         -> disaggsim.sim.campaign.run_campaign
    report      -> disaggsim.analysis.stats.summarize + disaggsim.analysis.plots
    export-fct  -> disaggsim.analysis.export.export_fct (--distribution: export_fct_distribution)
    latency-budget -> disaggsim.analysis.latency_budget (Table 4, sweep) + plots
    emulate     -> disaggsim.swapdev.emulate.emulate
    rcmp-gen    -> disaggsim.sim.rcmp.generate (Rcmp's accesses and flows, issue #25)
    classify    -> disaggsim.swapdev.emulate.emulate + classify (dolphin or shark, §3.2)
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from disaggsim.errors import display_path
from disaggsim.signals import Interrupted, interrupt_on_signals

if TYPE_CHECKING:
    from pydantic import BaseModel


class CliError(Exception):
    """A user error reported as one line on stderr with exit code 2."""


def _cmd_collect(args: argparse.Namespace) -> None:
    from disaggsim.swapdev import device
    from disaggsim.testbed import collect

    config = collect.PRESETS[args.preset] if args.preset else collect.load_config(Path(args.config))
    if args.paging_recorder:
        config = config.model_copy(update={"paging_recorder": args.paging_recorder})
    command = (
        "disaggsim collect "
        + (f"--preset {args.preset}" if args.preset else f"--config {args.config}")
        + f" --out {args.out}"
        + (f" --paging-recorder {args.paging_recorder}" if args.paging_recorder else "")
    )
    try:
        out = collect.collect(
            config, Path(args.out), command=command, device_env=device.recorder_env
        )
    except (RuntimeError, PermissionError, FileExistsError) as exc:  # incl. RestoreError
        raise CliError(str(exc)) from exc
    print(f"traces written to {out}")


def _cmd_convert(args: argparse.Namespace) -> None:
    from disaggsim.sim import placement
    from disaggsim.traces import convert, yaps

    report = convert.ConvertReport()
    options = convert.ConvertOptions(allow_truncated_pcap=args.allow_truncated_pcap)
    try:
        flows = convert.convert(Path(args.sample), options, report=report, meta_tz=args.meta_tz)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise CliError(f"cannot read the inputs: {exc}") from exc
    extra = []
    if args.yaps_out:
        sim_flows, _ = placement.place(
            flows, args.racks, args.hosts_per_rack, args.scope, args.seed
        )
        extra.append((Path(args.yaps_out), lambda tmp: yaps.write_yaps(sim_flows, tmp)))
    try:  # all outputs or none (convert.write_flow_table)
        convert.write_flow_table(flows, Path(args.out), extra_writers=extra)
    except OSError as exc:
        raise CliError(
            f"{display_path(args.out)}.parquet/.csv: cannot write the outputs (none written): {exc}"
        ) from exc
    print(report)
    print(f"{len(flows)} flows -> {args.out}.parquet, {args.out}.csv")
    if args.yaps_out:
        print(f"YAPS flow file ({args.scope}-scale placement) -> {args.yaps_out}")


def _cmd_gen(args: argparse.Namespace) -> None:
    from disaggsim.traces import workloads

    flows = workloads.generate(
        cdf=args.cdf,
        load=args.load,
        hosts=args.racks * args.hosts_per_rack,
        n_flows=args.flows,
        rate_gbps=args.rate_gbps,
        matrix=args.matrix,
        seed=args.seed,
    )
    workloads.write_flows(flows, Path(args.out))
    print(f"{len(flows)} flows -> {args.out}")


def _cmd_rcmp_gen(args: argparse.Namespace) -> None:
    from disaggsim.sim import rcmp

    params = rcmp.load_params(Path(args.config))
    traffic = rcmp.generate(params)
    rcmp.write_traffic(traffic, Path(args.out))
    c = traffic.counts
    print(
        f"{len(traffic.accesses)} accesses (cxl {c['cxl_R'] + c['cxl_W']}, "
        f"rdma {c['rdma_R'] + c['rdma_W']}), {c['migrations']} migrations, "
        f"{len(traffic.flows)} flows on {traffic.hosts} hosts -> {args.out}"
    )


def _cmd_run(args: argparse.Namespace) -> None:
    from disaggsim.analysis import report, stats
    from disaggsim.sim import campaign

    try:
        result = campaign.run_campaign(
            Path(args.config),
            jobs=args.jobs,
            progress=not args.quiet,
            summarize=stats.summarize_groups,
        )
    except campaign.CampaignError as exc:  # failed runs, each listed; done runs are kept
        raise CliError(str(exc)) from None
    if result.pending:  # executor "slurm" with slurm_submit = false
        print(
            f"{result.pending} runs pending: submit them with `sbatch {result.slurm_script}`, "
            "then run the campaign again to collect"
        )
        return
    rep = report.report(result.out_dir, summary=result.summary)
    print(rep.text)
    print(f"results: {result.out_dir}")
    print("plots: " + ", ".join(str(p) for p in rep.plots))


def _cmd_report(args: argparse.Namespace) -> None:
    from disaggsim.analysis import report

    rep = report.report(Path(args.campaign_dir))
    print(rep.text)
    print("plots: " + ", ".join(str(p) for p in rep.plots))


def _cmd_export_fct(args: argparse.Namespace) -> None:
    from disaggsim.analysis import export

    source = Path(args.fct)
    table = source / "fct.parquet" if source.is_dir() else source
    if not table.is_file():
        raise CliError(
            f"{table}: no FCT table (expected a campaign directory holding fct.parquet, or "
            "an fct.parquet file; run the campaign first)"
        )
    fct = export.read_fct_selection(  # only the selected runs' flows are read
        table,
        protocol=args.protocol,
        rate_gbps=args.rate_gbps,
        scope=args.scope,
        workload=args.workload,
        seed=args.seed,
    )
    write = export.export_fct_distribution if args.distribution else export.export_fct
    summary = write(
        fct,
        Path(args.out),
        protocol=args.protocol,
        rate_gbps=args.rate_gbps,
        scope=args.scope,
        workload=args.workload,
        seed=args.seed,
        kinds=None if args.all_kinds else export.MEMORY_KINDS,
        unfinished="drop" if args.drop_unfinished else "error",
    )
    print(
        f"{summary.sizes} {'CDF points' if args.distribution else 'flow sizes'} from "
        f"{summary.flows} flows -> {summary.path}"
        + (f" ({summary.unfinished} unfinished flows dropped)" if summary.unfinished else "")
    )


def _cmd_latency_budget(args: argparse.Namespace) -> None:
    from disaggsim.analysis import latency_budget as lb

    if args.sweep:
        table = lb.sweep(args.rates_gbps or lb.DEFAULT_SWEEP_RATES_GBPS)
        print(lb.format_sweep(table))
    else:
        print(lb.format_table4(args.rate_gbps))
        table = lb.sweep([args.rate_gbps])
    if args.plot:
        from disaggsim.analysis import plots

        print(f"plot: {plots.plot_latency_sweep(table, Path(args.plot))}")


_Config = TypeVar("_Config", bound="BaseModel")


#: ``--out-dir`` of the commands that run a sweep (:func:`_out_dir_override`).
_OUT_DIR_HELP = (
    "write the sweep to OUT_DIR/<name> instead of the config's out_dir (e.g. "
    "to measure a committed config afresh: its committed sweep is resumed "
    "otherwise)"
)


def _out_dir_override(cfg: _Config, out_dir: str | None) -> _Config:
    """``cfg`` (an emulate or hpe_cm config) writing to ``out_dir`` (relative to the
    current directory) instead of its section's ``out_dir``: ``--out-dir``, to measure a
    committed config afresh and leave its committed results as they are."""
    if out_dir is None:
        return cfg
    section = "hpe_cm" if hasattr(cfg, "hpe_cm") else "emulate"
    table = getattr(cfg, section)
    return cfg.model_copy(
        update={section: table.model_copy(update={"out_dir": Path(out_dir).resolve()})}
    )


def _cmd_emulate(args: argparse.Namespace) -> None:
    from disaggsim.swapdev import emulate, hpe_cm

    if hpe_cm.is_hpe_cm_config(args.config):  # Ruan et al.'s experiments (swapdev/hpe_cm.py)
        hcfg = _out_dir_override(hpe_cm.load_hpe_cm_config(args.config), args.out_dir)
        try:
            outs = hpe_cm.run(hcfg, progress=not args.quiet)
        except (RuntimeError, TimeoutError) as exc:
            raise CliError(str(exc)) from exc
        print(outs.summary.read_text(), end="")
        print(f"results: {outs.out_dir}")
        return
    cfg = _out_dir_override(emulate.load_emulate_config(args.config), args.out_dir)
    try:
        out = emulate.emulate(cfg, progress=not args.quiet)
    except (RuntimeError, TimeoutError) as exc:
        raise CliError(str(exc)) from exc
    print((out / "summary.csv").read_text(), end="")
    print(f"results: {out}")


def _cmd_classify(args: argparse.Namespace) -> None:
    from disaggsim.swapdev import emulate, machine

    cfg = _out_dir_override(emulate.load_emulate_config(args.config), args.out_dir)
    wanted = (emulate.CLASSIFY_LATENCY_NS, emulate.CLASSIFY_BANDWIDTH_BPS)
    if not any(
        p.kind == "fixed" and (p.latency_ns, p.bandwidth_bps) == wanted
        for p in emulate.expand_models(cfg)
    ):
        raise CliError(
            f"{args.config}: [[models]]: no fixed point at {wanted[0]} ns, {wanted[1]} bit/s "
            "(Figure 2's dolphin/shark boundary); leave out [[models]] for Figure 2's grid"
        )
    try:
        out = emulate.emulate(cfg, progress=not args.quiet)
    except (RuntimeError, TimeoutError) as exc:
        raise CliError(str(exc)) from exc
    print(f"{cfg.emulate.name}: dolphin (<= 5 % at 5 us, 40 Gb/s) or shark (paper §3.2)")
    print(
        (out / "classification.csv").read_text()
        if args.csv
        else emulate.format_classification(emulate.read_classification(out)),
        end="",
    )
    if not args.csv:  # a class is the application's on a machine (swapdev/machine.py)
        boots = [r.boot_id for r in emulate.read_runs(out / "runs.csv", cfg)]
        for line in machine.describe(machine.read_log(out), boots):
            print(f"measured on {line}")
    print(f"results: {out}")


def build_parser() -> argparse.ArgumentParser:
    """Return the ``disaggsim`` argument parser (one subparser per pipeline step)."""
    from disaggsim.sim.config import TopologySection

    # the fabric's defaults are the config's ([topology]), not restated here
    fabric = TopologySection.model_fields
    p = argparse.ArgumentParser(
        prog="disaggsim",
        description="Network requirements of disaggregated datacenters, simulated on ns-3.",
    )
    p.add_argument(
        "--debug",
        action="store_true",
        help=f"show Python tracebacks of errors (or set {DEBUG_ENV}=1)",
    )
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("collect", help="record real traces on an emulated 3-node cluster (root)")
    src = c.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--preset", help="built-in collection: memcached-ycsb, dask-sort, dask-sort-large, smoke"
    )
    src.add_argument("--config", help="collector config (TOML or JSON, CollectConfig)")
    c.add_argument("--out", required=True, help="output sample directory (must not exist)")
    c.add_argument(
        "--paging-recorder",
        choices=["blktrace", "swapdev-uffd"],
        help="record paging from the swap area's block trace (default) or with the "
        "latency-injection device (uffd backend), as the replays use it",
    )
    c.set_defaults(func=_cmd_collect)

    c = sub.add_parser("convert", help="convert a trace sample directory to a per-blade flow table")
    c.add_argument(
        "sample",
        help="sample directory (with meta.json) or an artifact results directory "
        "(NetSys/disaggregation rmem/results/<run>: <n>-mem-<host>, <n>-meta-<host>, "
        "<n>-disk-<host>.blktrace.<cpu>)",
    )
    c.add_argument(
        "--meta-tz",
        default="UTC",
        help="time zone of the artifact's 'date +%%y%%m%%d%%H%%M%%S.%%N' meta files (IANA name)",
    )
    c.add_argument("--out", required=True, help="output prefix: writes PREFIX.parquet and .csv")
    c.add_argument("--yaps-out", help="also write a YAPS flow file after placement")
    c.add_argument("--scope", choices=["datacenter", "rack"], default="datacenter")
    c.add_argument("--racks", type=int, default=fabric["racks"].default)
    c.add_argument("--hosts-per-rack", type=int, default=fabric["hosts_per_rack"].default)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument(
        "--allow-truncated-pcap",
        action="store_true",
        help="keep the complete records of a capture cut mid-record and warn (as tcpdump)",
    )
    c.set_defaults(func=_cmd_convert)

    c = sub.add_parser("gen", help="generate a synthetic workload (Poisson, empirical CDF)")
    c.add_argument(
        "--cdf",
        default="websearch",
        help="CDF name (websearch, datamining, ddc-samples) or a YAPS CDF file",
    )
    c.add_argument("--load", type=float, default=0.6, help="offered load, fraction of access rate")
    c.add_argument("--flows", type=int, default=10000)
    c.add_argument("--rate-gbps", type=float, default=40.0)
    c.add_argument("--matrix", choices=["all_to_all", "permutation"], default="all_to_all")
    c.add_argument("--racks", type=int, default=fabric["racks"].default)
    c.add_argument("--hosts-per-rack", type=int, default=fabric["hosts_per_rack"].default)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--out", required=True, help="output file: .csv, .parquet or .yaps")
    c.set_defaults(func=_cmd_gen)

    c = sub.add_parser(
        "rcmp-gen", help="Rcmp's accesses and flows for a CXL + RDMA cluster (configs/rcmp-*.toml)"
    )
    c.add_argument("--config", required=True, help="TOML file with an [rcmp] table")
    c.add_argument("--out", required=True, help="new output directory")
    c.set_defaults(func=_cmd_rcmp_gen)

    c = sub.add_parser(
        "run",
        help="run a campaign: convert workloads, simulate missing grid points, collect FCTs",
    )
    c.add_argument("config", help="campaign config (TOML; keys in configs/README.md)")
    c.add_argument("--jobs", type=int, default=None, help="parallel ns-3 processes")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=_cmd_run)

    c = sub.add_parser("report", help="summary table and plots of a campaign directory")
    c.add_argument("campaign_dir")
    c.set_defaults(func=_cmd_report)

    c = sub.add_parser(
        "export-fct", help="write <bytes> <mean_fct_us> per flow size for the swap device"
    )
    c.add_argument("fct", help="campaign directory or fct.parquet")
    c.add_argument("--out", required=True, help="output text file (the artifact's fcts_*.txt)")
    c.add_argument("--protocol", default="pfabric")
    c.add_argument("--rate-gbps", type=float, default=None)
    c.add_argument("--scope", choices=["datacenter", "rack"], default=None)
    c.add_argument("--workload", default=None, help="workload name (needed if several)")
    c.add_argument("--seed", type=int, default=None)
    c.add_argument(
        "--all-kinds", action="store_true", help="all flows, not only memory flows (paper 4.4)"
    )
    c.add_argument(
        "--drop-unfinished", action="store_true", help="drop unfinished flows instead of failing"
    )
    c.add_argument(
        "--distribution",
        action="store_true",
        help="write <bytes> <cum_prob> <fct_us> CDF points per size (swapdev fct-sample)",
    )
    c.set_defaults(func=_cmd_export_fct)

    c = sub.add_parser(
        "latency-budget", help="Table 4: round-trip latency of a 4 KB page access, by component"
    )
    c.add_argument("--rate-gbps", type=float, default=40.0, help="link rate of the table")
    c.add_argument("--sweep", action="store_true", help="lowest latency per scope and rate")
    c.add_argument(
        "--rates-gbps",
        type=float,
        nargs="+",
        default=None,
        help="link rates of the sweep (default 10 40 100 200 400)",
    )
    c.add_argument("--plot", help="also draw latency vs link rate to this .png/.pdf/.svg")
    c.set_defaults(func=_cmd_latency_budget)

    c = sub.add_parser(
        "emulate",
        help="run an application on the latency-injection device: JCT vs injected delay (root)",
    )
    c.add_argument(
        "config",
        help="emulate config (TOML; keys in swapdev/emulate.py, or "
        "swapdev/hpe_cm.py for an [hpe_cm] table)",
    )
    c.add_argument("--quiet", action="store_true", help="no per-run progress")
    c.add_argument("--out-dir", help=_OUT_DIR_HELP)
    c.set_defaults(func=_cmd_emulate)

    c = sub.add_parser(
        "classify",
        help="dolphin or shark: run an application at Figure 2's grid (or the config's "
        "models) and print its class at 5 us / 40 Gb/s (root; resumes a finished sweep)",
    )
    c.add_argument(
        "config",
        help="emulate config (TOML, swapdev/emulate.py); without "
        "[[models]] the sweep is Figure 2's latency x bandwidth grid",
    )
    c.add_argument("--quiet", action="store_true", help="no per-run progress")
    c.add_argument("--csv", action="store_true", help="print classification.csv instead")
    c.add_argument("--out-dir", help=_OUT_DIR_HELP)
    c.set_defaults(func=_cmd_classify)
    return p


#: Environment variable: set to 1 to get Python tracebacks instead of one-line errors.
DEBUG_ENV = "DISAGGSIM_DEBUG"


def _is_input_error(exc: BaseException) -> bool:
    """Errors about the user's inputs or environment, whose message says all (exit 2)."""
    from disaggsim.sim.campaign import CampaignError
    from disaggsim.sim.runner import RunError

    return isinstance(exc, CliError | ValueError | OSError | CampaignError | RunError)


def _call_printing_warnings(args: argparse.Namespace) -> None:
    """Run the subcommand; print its warnings (e.g. a truncated capture kept) as one line
    each, ``disaggsim <command>: warning: <message>``, even if it then fails."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            args.func(args)
        finally:
            for w in caught:
                if issubclass(w.category, UserWarning):
                    print(f"disaggsim {args.command}: warning: {w.message}", file=sys.stderr)


def _interruption(exc: KeyboardInterrupt) -> str:
    """One line for an interrupt: by which signal, and the error whose cleanup it came
    in (a signal during an unwinding is raised at its end, chained to that error)."""
    line = f"interrupted by {exc.signum.name}" if isinstance(exc, Interrupted) else "interrupted"
    if isinstance(exc.__cause__, Exception):
        first = (str(exc.__cause__).strip() or type(exc.__cause__).__name__).splitlines()[0]
        line += f" while cleaning up after an error: {first}"
    return line


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``disaggsim`` console script; returns the exit code.

    Every error ends in one message on stderr, ``disaggsim <command>: error: <message>``,
    and a non-zero exit: 2 for bad input or a failed run (the message names the file and
    line, record, offset or key), 1 for an internal error (the exception type is shown),
    128 + the signal's number on SIGINT (Ctrl-C: 130), SIGTERM (143) or SIGHUP (129),
    after everything the command set up was undone (:mod:`disaggsim.signals`; a second
    signal waits for that cleanup). ``--debug`` or ``$DISAGGSIM_DEBUG=1`` shows the Python
    traceback instead.
    """
    args = build_parser().parse_args(argv)
    debug = args.debug or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    try:
        # SIGTERM and SIGHUP unwind as Ctrl-C does; a second signal waits for the cleanup.
        with interrupt_on_signals():
            if debug:
                args.func(args)
            else:
                _call_printing_warnings(args)
    except KeyboardInterrupt as exc:
        if debug:
            raise
        print(f"disaggsim {args.command}: {_interruption(exc)}", file=sys.stderr)
        return 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
    except Exception as exc:
        if debug:
            raise
        message = str(exc).strip() or type(exc).__name__
        if _is_input_error(exc):
            print(f"disaggsim {args.command}: error: {message}", file=sys.stderr)
            return 2
        print(
            f"disaggsim {args.command}: internal error: {type(exc).__name__}: {message}\n"
            f"(run with --debug or {DEBUG_ENV}=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
