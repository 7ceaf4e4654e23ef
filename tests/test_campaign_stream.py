"""The campaign's collection streams (issue 7): same tables as the old in-memory path.

A small real campaign (the ns-3 program, two workloads x two protocols x two scopes x two
seeds) is collected by ``sim.campaign._collect``, which reads, writes and summarizes one
group of runs at a time; the oracle is what the collection did before it streamed:
concatenate every run's table, write it, ``summarize`` all of it in memory. Every reader
of the collected table (the report, the plots, the Figure 7 tables, the FCT export) is
compared the same way, old in-memory call against the streaming one.

Skipped (with the reason) when ``build/sim/disaggsim-ns3`` is not built: run `make build`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ns3_program import needs_ns3

from disaggsim.analysis.fct_file import FctFile
from disaggsim.analysis.stats import GROUP_KEYS, summarize, summarize_file, summarize_groups
from disaggsim.schemas import CAMPAIGN_FCT
from disaggsim.sim.campaign import CampaignResult, run_campaign

pytestmark = needs_ns3

#: Flows per workload: enough for every size bucket of the web search CDF in most runs.
N_FLOWS = 60


def _workload(name: str, cdf: str, seed_load: float) -> str:
    return textwrap.dedent(
        f"""\
        [[workloads]]
        kind = "synthetic"
        name = "{name}"
        cdf = "{cdf}"
        load = {seed_load}
        n_flows = {N_FLOWS}
        """
    )


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> CampaignResult:
    tmp = tmp_path_factory.mktemp("stream")
    config = tmp / "stream.toml"
    config.write_text(
        textwrap.dedent(
            """\
            [campaign]
            name = "stream"
            out_dir = "out"
            jobs = 2

            """
        )
        + _workload("websearch", "websearch", 0.5)
        + "\n"
        + _workload("datamining", "datamining", 0.4)
        + textwrap.dedent(
            """
            [topology]
            racks = 2
            hosts_per_rack = 4
            spines = 2

            [grid]
            protocols = ["pfabric", "ideal"]
            rates_gbps = [40]
            scopes = ["datacenter", "rack"]
            seeds = [1, 2]

            [limits]
            run_timeout_s = 300
            """
        )
    )
    return run_campaign(config, progress=False, summarize=summarize_groups)


def _old_table(result: CampaignResult) -> pa.Table:
    """What the collection wrote before it streamed: every run in grid order, one table."""
    runs = pd.read_csv(result.out_dir / "runs.csv")
    tables = [pq.read_table(result.out_dir / "runs" / key / "fct.parquet") for key in runs["key"]]
    return pa.concat_tables(tables).cast(CAMPAIGN_FCT)


def test_collected_table_and_summary_equal_the_in_memory_path(campaign: CampaignResult) -> None:
    assert campaign.ran == 16
    old = _old_table(campaign)
    assert old.num_rows == 16 * N_FLOWS
    collected = pq.read_table(campaign.out_dir / "fct.parquet")
    assert collected.schema.equals(CAMPAIGN_FCT)
    assert collected.equals(old)
    # the summary pools seeds: 2 workloads x 2 protocols x 2 scopes groups of 2 runs each
    expected = summarize(old.to_pandas())
    assert campaign.summary is not None
    pd.testing.assert_frame_equal(campaign.summary, expected)
    assert (expected[expected["bucket"] == "all"]["flows"] == 2 * N_FLOWS).all()
    assert len(expected[expected["bucket"] == "all"]) == 8
    assert len(expected) > 2 * 8, "several size buckets per group"
    assert (campaign.out_dir / "summary.csv").read_text() == expected.to_csv(index=False)


def test_one_run_per_row_group(campaign: CampaignResult) -> None:
    meta = pq.ParquetFile(campaign.out_dir / "fct.parquet").metadata
    assert meta.num_row_groups == 16
    names = CAMPAIGN_FCT.names
    keys = set()
    for index in range(meta.num_row_groups):
        row_group = meta.row_group(index)
        stats = [
            row_group.column(names.index(k)).statistics
            for k in ("workload", "protocol", "scope", "rate_gbps", "seed")
        ]
        assert all(s.min == s.max for s in stats)
        keys.add(tuple(s.min for s in stats))
    assert len(keys) == 16
    # so FctFile lists the groups from the statistics alone and reads a group's row groups
    # only: websearch is the first workload of the grid, pfabric its first protocol, rack
    # its second scope, so its seeds' runs are row groups 2 and 3
    table = FctFile(campaign.out_dir / "fct.parquet")
    reads: list[int] = []
    read_row_group = table._file.read_row_group
    table._file.read_row_group = lambda index, columns=None: (  # type: ignore[method-assign]
        reads.append(index) or read_row_group(index, columns=columns)
    )
    group_keys = ["workload", "protocol", "scope", "rate_gbps"]
    assert len(table.group_keys(group_keys)) == 8 and reads == []
    rows = table.read_group(group_keys, ("websearch", "pfabric", "rack", 40.0), ["fct_ns"])
    assert (len(rows), reads) == (2 * N_FLOWS, [2, 3])
    assert list(rows.columns) == [c for c in CAMPAIGN_FCT.names if c in {"fct_ns", *group_keys}]


def test_readers_equal_the_in_memory_path(campaign: CampaignResult) -> None:
    from disaggsim.analysis.fig7 import fig7_tables, fig7_tables_file
    from disaggsim.analysis.plots import plot_data, plot_data_file
    from disaggsim.analysis.report import report

    path = campaign.out_dir / "fct.parquet"
    whole = pd.read_parquet(path)
    expected = summarize(whole)
    pd.testing.assert_frame_equal(summarize_file(path), expected)
    pd.testing.assert_frame_equal(
        summarize_file(path, by_workload=False), summarize(whole, by_workload=False)
    )
    rep = report(campaign.out_dir)
    pd.testing.assert_frame_equal(rep.summary, expected)
    assert len(rep.plots) == 4

    old, new = plot_data(whole), plot_data_file(path)
    assert old.cdf.keys() == new.cdf.keys() and len(new.cdf) == 4
    for key, (fct_us, frac, flows, unfinished) in old.cdf.items():
        got = new.cdf[key]
        np.testing.assert_array_equal(got[0], fct_us)
        np.testing.assert_array_equal(got[1], frac)
        assert (got[2], got[3]) == (flows, unfinished) == (4 * N_FLOWS, 0)
    pd.testing.assert_frame_equal(new.slowdown, old.slowdown)

    for got, want in zip(fig7_tables_file(path), fig7_tables(whole), strict=True):
        pd.testing.assert_frame_equal(got, want)


def test_fct_file_groups_in_row_groups_of_several_runs(tmp_path: Path) -> None:
    """A file not written by the campaign (row groups mixing groups, cut mid-group) gives
    the same groups, in file order, as pandas' groupby over the whole table."""
    rng = np.random.default_rng(7)
    n = 97
    frame = pd.DataFrame(
        {
            "flow_id": np.arange(n),
            "size_bytes": rng.choice([1000, 4096, 70000, 2_000_000], n),
            "fct_ns": rng.integers(1000, 100000, n),
            "slowdown": rng.uniform(1, 5, n),
            "finished": (rng.uniform(size=n) > 0.1).astype(np.int64),
            "workload": rng.choice(["a", "b"], n),
            "protocol": rng.choice(["tcp", "pfabric", "phost"], n),
            "scope": rng.choice(["rack", "datacenter"], n),
            "rate_gbps": rng.choice([40.0, 100.0], n),
        }
    )
    path = tmp_path / "fct.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=10)
    table = FctFile(path)
    keys = list(GROUP_KEYS)
    groups = dict(table.iter_groups(keys, ["slowdown"]))
    expected = dict(iter(frame.groupby(keys, sort=True)))
    assert list(groups) == list(expected)
    for key, rows in groups.items():
        want = expected[key][[*keys, "slowdown"]].reset_index(drop=True)
        pd.testing.assert_frame_equal(rows[want.columns], want, check_dtype=False)
    pd.testing.assert_frame_equal(summarize_file(path), summarize(frame), check_dtype=False)
    absent = table.read_group(keys, ("c", "tcp", "rack", 40.0))
    assert absent.empty and list(absent.columns) == list(frame.columns)
    with pytest.raises(ValueError, match=r"lacks columns \['seed'\]"):
        table.group_keys(["seed"])
    with pytest.raises(FileNotFoundError, match="no FCT table"):
        FctFile(tmp_path / "missing.parquet")


def test_fct_export_reads_only_the_selection(campaign: CampaignResult, tmp_path: Path) -> None:
    from disaggsim.analysis.export import export_fct, export_fct_distribution, read_fct_selection

    path = campaign.out_dir / "fct.parquet"
    whole = pd.read_parquet(path)
    for selection in (
        {"protocol": "pfabric", "scope": "rack", "workload": "websearch"},  # seeds pooled
        {
            "protocol": "ideal",
            "scope": "datacenter",
            "workload": "datamining",
            "seed": 2,
            "rate_gbps": 40.0,
        },
    ):
        rows = read_fct_selection(path, **selection)
        runs = 1 if "seed" in selection else 2
        assert len(rows) == runs * N_FLOWS
        for write in (export_fct, export_fct_distribution):
            old = write(whole, tmp_path / "old.txt", kinds=None, **selection)
            new = write(rows, tmp_path / "new.txt", kinds=None, **selection)
            assert (new.sizes, new.flows) == (old.sizes, old.flows)
            assert (tmp_path / "new.txt").read_text() == (tmp_path / "old.txt").read_text()
    # the same errors as on the whole table, raised before any flow is read
    for selection, message in (
        ({"protocol": "pfabric", "scope": "rack"}, "several workload values"),
        ({"protocol": "tcp"}, r"protocol='tcp' not in the table \(has \['ideal', 'pfabric'\]\)"),
        (
            {"protocol": "ideal", "scope": "rack", "workload": "websearch", "rate_gbps": 100.0},
            r"rate_gbps=100.0 not in the table \(has \[40.0\]\)",
        ),
    ):
        with pytest.raises(ValueError, match=message):
            export_fct(whole, tmp_path / "x.txt", kinds=None, **selection)
        with pytest.raises(ValueError, match=message):
            read_fct_selection(path, **selection)
