"""disaggsim.analysis.latency_budget against Table 4 of Gao et al. (OSDI'16, §3.3).

The published figures below are typed in from the paper (/work/shared/papers/001_*.txt,
Table 4 and §3.3); the module computes its totals from the components only.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from disaggsim.analysis import latency_budget as lb
from disaggsim.cli import main

# Table 4, "Total" row, 40 Gbps: (scenario, scope) -> µs.
PAPER_TABLE4_TOTALS_US = {
    ("baseline", "datacenter"): 7.04,
    ("baseline", "rack"): 5.28,
    ("rdma", "datacenter"): 5.14,
    ("rdma", "rack"): 3.38,
    ("rdma_nic", "datacenter"): 4.14,
    ("rdma_nic", "rack"): 2.38,
}


@pytest.mark.parametrize(("scenario", "scope"), list(PAPER_TABLE4_TOTALS_US))
def test_table4_totals_equal_the_paper(scenario: lb.Scenario, scope: lb.Scope) -> None:
    total = lb.latency_budget(scenario, scope, 40.0).total_us
    # The paper prints 0.01 µs; the unrounded sum differs only by the transmission's
    # 0.8192 - 0.82 = -0.0008 µs.
    assert round(total, 2) == PAPER_TABLE4_TOTALS_US[(scenario, scope)]
    assert total == pytest.approx(PAPER_TABLE4_TOTALS_US[(scenario, scope)] - 0.0008, abs=1e-12)


def test_components_are_table4_cells() -> None:
    # Baseline, inter-rack column of Table 4: 2x0.95, 2x1.00, 6x0.24, 4x0.20, 4x0.02, 1x0.82.
    cells = {
        c.name: (c.traversals, c.per_traversal_us)
        for c in lb.latency_budget("baseline", "datacenter").components
    }
    assert cells["OS"] == (2, 0.95)
    assert cells["Data copy"] == (2, 1.00)
    assert cells["Switching"] == (6, 0.24)
    assert cells["Propagation (inter-rack)"][0] == 4
    assert cells["Propagation (inter-rack)"][1] == pytest.approx(0.20)  # 40 m x 5 ns/m
    assert cells["Propagation (intra-rack)"][0] == 4
    assert cells["Propagation (intra-rack)"][1] == pytest.approx(0.02)  # 4 m x 5 ns/m
    # 4096 B x 8 bit / 40 Gbit/s = 819.2 ns; Table 4 prints 0.82.
    assert cells["Transmission"] == (1, pytest.approx(0.8192))
    # Intra rack: 2 switch traversals, no inter-rack cable.
    rack = {c.name: c.traversals for c in lb.latency_budget("baseline", "rack").components}
    assert rack["Switching"] == 2 and rack["Propagation (inter-rack)"] == 0
    # RDMA removes the OS; NIC integration halves the copy to 0.50 (§3.3).
    rdma = {c.name: c for c in lb.latency_budget("rdma", "rack").components}
    assert rdma["OS"].latency_us == 0 and rdma["Data copy"].per_traversal_us == 1.00
    nic = {c.name: c for c in lb.latency_budget("rdma_nic", "rack").components}
    assert nic["OS"].latency_us == 0 and nic["Data copy"].per_traversal_us == 0.50


def test_table4_frame_has_components_and_totals() -> None:
    table = lb.table4()
    assert len(table) == 6 * 7  # 6 columns x (6 components + Total)
    totals = table[table.component == "Total"].set_index(["scenario", "scope"])["latency_us"]
    parts = table[table.component != "Total"].groupby(["scenario", "scope"])["latency_us"].sum()
    for key, value in totals.items():
        assert value == pytest.approx(parts[key])
        assert round(value, 2) == PAPER_TABLE4_TOTALS_US[key]


def test_100gbps_across_racks_against_the_paper() -> None:
    """§3.3 quotes 3.59 µs for RDMA + NIC integration across racks at 100 Gbps.

    The paper's own components give 1.00 + 1.44 + 0.80 + 0.08 + 4096 x 8 / 100e9 s
    (0.32768 µs) = 3.64768 µs: Table 4's caption ("reduce the Total by 0.5 µs using
    100Gbps") agrees (4.14 - 0.5 = 3.64), the 3.59 does not. The model keeps the derived
    value; this test pins both the value and the 0.058 µs gap to the published figure.
    """
    at_100 = lb.latency_budget("rdma_nic", "datacenter", 100.0).total_us
    at_40 = lb.latency_budget("rdma_nic", "datacenter", 40.0).total_us
    assert at_100 == pytest.approx(1.00 + 1.44 + 0.80 + 0.08 + 0.32768)
    assert round(at_100, 2) == 3.65
    assert at_40 - at_100 == pytest.approx(0.8192 - 0.32768)  # 0.49 µs, the caption's "0.5"
    assert at_100 - 3.59 == pytest.approx(0.05768)


def test_sweep_is_monotone_and_hand_checked() -> None:
    table = lb.sweep([400, 10, 100, 40, 200])
    assert list(table.rate_gbps[table.scope == "rack"]) == [10.0, 40.0, 100.0, 200.0, 400.0]
    for scope in lb.SCOPES:
        rows = table[table.scope == scope]
        for column in ("baseline_us", "rdma_us", "rdma_nic_us", "lowest_us"):
            values = rows[column].tolist()
            assert all(a > b for a, b in zip(values, values[1:], strict=False)), (scope, column)
        # Faster links approach the floor from above; the best scenario is always RDMA + NIC.
        assert (rows.lowest_us > lb.floor_us("rdma_nic", scope)).all()
        assert (rows.lowest_scenario == "rdma_nic").all()
    dc = table[table.scope == "datacenter"].set_index("rate_gbps")
    rack = table[table.scope == "rack"].set_index("rate_gbps")
    assert (dc.lowest_us > rack.lowest_us).all()
    # By hand, rack at 10 Gbps, RDMA + NIC: 2 x 0.50 + 2 x 0.24 + 4 x 0.02 + 32768 bit /
    # 10 Gbit/s (3.2768 µs) = 4.8368 µs: a dolphin (5 µs) but not a shark (3 µs) budget.
    assert rack.loc[10.0, "lowest_us"] == pytest.approx(4.8368)
    assert not rack.loc[10.0, "meets_shark_3us"] and rack.loc[10.0, "meets_dolphin_5us"]
    # Datacenter at 200 Gbps: 1.00 + 6 x 0.24 + 4 x 0.20 + 4 x 0.02 + 0.16384 = 3.48384 µs.
    assert dc.loc[200.0, "lowest_us"] == pytest.approx(3.48384)
    assert not dc.loc[200.0, "meets_shark_3us"] and dc.loc[200.0, "meets_dolphin_5us"]
    # Across racks the 3 µs target is out of reach at any rate: floor 1.00 + 1.44 + 0.88.
    assert lb.floor_us("rdma_nic", "datacenter") == pytest.approx(3.32)
    assert lb.floor_us("rdma_nic", "rack") == pytest.approx(1.56)
    assert not dc.meets_shark_3us.any() and rack.loc[40.0, "meets_shark_3us"]


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="unknown scenario 'dpdk'"):
        lb.latency_budget("dpdk", "rack")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown scope 'pod'"):
        lb.latency_budget("rdma", "pod")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rate_gbps must be positive"):
        lb.transmission_us(4096, math.inf)
    with pytest.raises(ValueError, match="no link rates"):
        lb.sweep([])


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["latency-budget"]) == 0
    out = capsys.readouterr().out
    for total in ("7.04", "5.28", "5.14", "3.38", "4.14", "2.38"):
        assert f"{total} (" in out
    plot = tmp_path / "sweep.png"
    assert (
        main(["latency-budget", "--sweep", "--rates-gbps", "40", "100", "--plot", str(plot)]) == 0
    )
    out = capsys.readouterr().out
    assert "floor (datacenter, rdma_nic, rate -> inf): 3.32 us" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["latency-budget", "--sweep"]) == 0
    out = capsys.readouterr().out
    assert out.count("\ndatacenter ") == 5 and "\nrack              400" in out
    assert main(["latency-budget", "--rate-gbps", "-1"]) == 2
    assert "rate_gbps must be positive" in capsys.readouterr().err


def test_plot_rejects_bad_input(tmp_path: Path) -> None:
    from disaggsim.analysis import plots

    table = lb.sweep()
    with pytest.raises(ValueError, match="lacks column 'rdma_us'"):
        plots.latency_sweep_figure(table.drop(columns="rdma_us"))
    with pytest.raises(ValueError, match=r"x\.jpg: expected a \.png"):
        plots.plot_latency_sweep(table, tmp_path / "x.jpg")
    assert not list(tmp_path.iterdir())  # nothing half-written
    pdf = plots.plot_latency_sweep(table, tmp_path / "sweep.pdf")
    assert pdf.read_bytes()[:5] == b"%PDF-" and [p.name for p in tmp_path.iterdir()] == [
        "sweep.pdf"
    ]
