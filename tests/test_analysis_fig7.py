"""Figure 7 tables: mean slowdown per run and mean FCT per size, hand-computed."""

from __future__ import annotations

import pandas as pd
import pytest

from disaggsim.analysis.fig7 import fct_by_size_figure, fig7_figure, fig7_tables


def records() -> pd.DataFrame:
    rows = []
    # run (w, tcp, 100, rack, seed 1): slowdowns 1, 3 (sizes 4096, 8192), one unfinished.
    # run (w, pfabric, 100, rack, seed 1): slowdowns 1, 1.5.
    for proto, sds, fcts in (
        ("tcp", [1.0, 3.0], [1000, 6000]),
        ("pfabric", [1.0, 1.5], [1000, 3000]),
    ):
        for i, (sd, fct) in enumerate(zip(sds, fcts, strict=True)):
            rows.append(
                {
                    "flow_id": i,
                    "workload": "w",
                    "protocol": proto,
                    "rate_gbps": 100.0,
                    "scope": "rack",
                    "seed": 1,
                    "size_bytes": 4096 * (i + 1),
                    "fct_ns": fct,
                    "slowdown": sd,
                    "finished": 1,
                }
            )
    rows.append(
        {
            "flow_id": 9,
            "workload": "w",
            "protocol": "tcp",
            "rate_gbps": 100.0,
            "scope": "rack",
            "seed": 1,
            "size_bytes": 4096,
            "fct_ns": -1,
            "slowdown": float("nan"),
            "finished": 0,
        }
    )
    return pd.DataFrame(rows)


def test_fig7_tables_by_hand() -> None:
    slowdown, by_size = fig7_tables(records())
    tcp = slowdown[slowdown["protocol"] == "tcp"].iloc[0]
    assert (tcp["flows"], tcp["unfinished"]) == (3, 1)
    assert tcp["slowdown_mean"] == pytest.approx(2.0)
    pf = slowdown[slowdown["protocol"] == "pfabric"].iloc[0]
    assert pf["slowdown_mean"] == pytest.approx(1.25)
    row = by_size[(by_size["protocol"] == "tcp") & (by_size["size_bytes"] == 8192)].iloc[0]
    assert (row["flows"], row["fct_us_mean"]) == (1, pytest.approx(6.0))
    assert len(fig7_figure(slowdown).axes) == 1
    assert len(fct_by_size_figure(by_size, "w").axes) == 1
    with pytest.raises(ValueError, match="lacks columns"):
        fig7_tables(records().drop(columns=["seed"]))
    with pytest.raises(ValueError, match=r"lacks columns \['flow_id'\]"):
        fig7_tables(records().drop(columns=["flow_id"]))


def runs_csv(path, pfabric_frames: int | None = 7) -> None:
    """A campaign's runs.csv for records()' two runs (sim/rundir.py run_row's columns):
    tcp sent no pause frame, pfabric ``pfabric_frames`` (None: not recorded)."""
    pd.DataFrame(
        [
            {
                "key": "a",
                "workload": "w",
                "protocol": "tcp",
                "rate_gbps": 100.0,
                "scope": "rack",
                "seed": 1,
                "status": "ran",
                "flows": 3,
                "unfinished": 1,
                "wall_s": 0.1,
                "events": 10,
                "pfc_frames": 0,
                "paused_ns": 0,
            },
            {
                "key": "b",
                "workload": "w",
                "protocol": "pfabric",
                "rate_gbps": 100.0,
                "scope": "rack",
                "seed": 1,
                "status": "ran",
                "flows": 2,
                "unfinished": 0,
                "wall_s": 0.1,
                "events": 10,
                "pfc_frames": pfabric_frames,
                "paused_ns": 4200,
            },
        ]
    ).to_csv(path, index=False)


def test_write_tables(tmp_path) -> None:
    from disaggsim.analysis.fig7 import pause_frames_table, write_tables

    records().to_parquet(tmp_path / "fct.parquet")
    runs_csv(tmp_path / "runs.csv")
    slow_path, size_path = write_tables(tmp_path, tmp_path / "data", min_flows=2)
    slowdown = pd.read_csv(slow_path)
    assert sorted(slowdown["slowdown_mean"]) == [1.25, 2.0]
    # each run's pause frames and paused time, from runs.csv, on its own row
    by_protocol = slowdown.set_index("protocol")
    assert by_protocol.loc["pfabric", ["pfc_frames", "paused_ns"]].tolist() == [7, 4200]
    assert by_protocol.loc["tcp", ["pfc_frames", "paused_ns"]].tolist() == [0, 0]
    # only the protocol that paused gets a column: (pfabric, seed 1) = 7
    frames = pause_frames_table(slowdown)
    assert frames.columns.tolist() == [("pfabric", 1)]
    assert frames.to_numpy().tolist() == [[7]]
    by_size = pd.read_csv(size_path)
    # every (protocol, size) group has one finished flow: none reaches min_flows = 2
    assert by_size.empty
    _, size_path = write_tables(tmp_path, tmp_path / "data", min_flows=1)
    assert len(pd.read_csv(size_path)) == 4


def test_write_tables_needs_run_stats(tmp_path) -> None:
    """A runs.csv without a run's pause frames (or without the columns) is refused, naming
    the file, and no table is written."""
    from disaggsim.analysis.fig7 import write_tables

    records().to_parquet(tmp_path / "fct.parquet")
    runs_csv(tmp_path / "runs.csv", pfabric_frames=None)
    with pytest.raises(ValueError, match=r"runs.csv: no \['pfc_frames', 'paused_ns'\] for run"):
        write_tables(tmp_path, tmp_path / "data")
    pd.read_csv(tmp_path / "runs.csv").drop(columns=["paused_ns"]).to_csv(
        tmp_path / "runs.csv", index=False
    )
    with pytest.raises(ValueError, match=r"runs.csv: runs.csv lacks columns \['paused_ns'\]"):
        write_tables(tmp_path, tmp_path / "data")
    assert not (tmp_path / "data").exists()


def test_write_tables_merge(tmp_path) -> None:
    """merge=True: the campaign's runs replace the committed rows of the same workload x
    protocol x rate x scope, the others stay (without run statistics if they had none)."""
    from disaggsim.analysis.fig7 import write_tables

    data = tmp_path / "data"
    data.mkdir()
    # the committed tables of an earlier campaign: tcp (to be replaced) and fastpass (kept)
    pd.DataFrame(
        [
            {
                "workload": "w",
                "protocol": "fastpass",
                "rate_gbps": 100,
                "scope": "rack",
                "seed": 1,
                "flows": 2,
                "unfinished": 0,
                "slowdown_mean": 9.5,
            },
            {
                "workload": "w",
                "protocol": "tcp",
                "rate_gbps": 100,
                "scope": "rack",
                "seed": 1,
                "flows": 3,
                "unfinished": 1,
                "slowdown_mean": 7.0,
            },
        ]
    ).to_csv(data / "paper_fig7_slowdown.csv", index=False)
    pd.DataFrame(
        [
            {
                "workload": "w",
                "protocol": "fastpass",
                "rate_gbps": 100,
                "scope": "rack",
                "size_bytes": 4096,
                "flows": 2,
                "fct_us_mean": 9.0,
            },
            {
                "workload": "w",
                "protocol": "tcp",
                "rate_gbps": 100,
                "scope": "rack",
                "size_bytes": 4096,
                "flows": 9,
                "fct_us_mean": 99.0,
            },
        ]
    ).to_csv(data / "paper_fig7_fct_by_size.csv", index=False)
    records().to_parquet(tmp_path / "fct.parquet")
    runs_csv(tmp_path / "runs.csv")
    slow_path, size_path = write_tables(tmp_path, data, min_flows=1, merge=True)
    slowdown = pd.read_csv(slow_path)
    # sorted by run keys: fastpass (kept, no run stats), pfabric (new), tcp (new: 2.0)
    assert slowdown["protocol"].tolist() == ["fastpass", "pfabric", "tcp"]
    assert slowdown["slowdown_mean"].tolist() == [9.5, 1.25, 2.0]
    assert slowdown["pfc_frames"].isna().tolist() == [True, False, False]
    assert slowdown["pfc_frames"].iloc[1] == 7
    by_size = pd.read_csv(size_path)
    # fastpass' row kept; tcp's old 4096 B row replaced by this campaign's (6 us at 8192 B, 1 us)
    assert by_size[by_size["protocol"] == "fastpass"]["fct_us_mean"].tolist() == [9.0]
    assert by_size[by_size["protocol"] == "tcp"]["fct_us_mean"].tolist() == [1.0, 6.0]
