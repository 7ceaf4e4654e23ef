"""bench/bench_roce_fidelity.py runs the same RED-ECN setting as HPCC's simulator.

Our side sets Kmin / Kmax at a reference rate and ``ns3::SwitchMmu::EcnReferenceRate``
scales them with each port's rate (Kmin x R / reference); HPCC's side gets the per-rate maps
``bench/hpcc_sim.py`` writes (``KMIN_MAP`` / ``KMAX_MAP`` in KB, which its
``SwitchMmu::ConfigEcn`` multiplies by 1000; ``PMAX_MAP``). Two independently written
settings: for every link rate of the fidelity fabric they must give the same bytes and Pmax.
Also the bench's group-by-group agreement statistic on a hand-made pair of tables.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture()
def fidelity(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """bench_roce_fidelity.py loaded by path (it imports its neighbours common, hpcc_sim)."""
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(
        "bench_roce_fidelity", BENCH / "bench_roce_fidelity.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_roce_fidelity", module)
    spec.loader.exec_module(module)
    return module


def _hpcc_maps(fidelity: ModuleType, tmp_path: Path) -> dict[str, dict[int, float]]:
    flows = pd.DataFrame(
        {"flow_id": [0], "start_ns": [0], "src_host": [0], "dst_host": [17], "size_bytes": [1000]}
    )
    config = fidelity.hpcc_sim.write_inputs(flows, fidelity.HPCC_FABRIC, "dcqcn", tmp_path)
    maps = {}
    for line in config.read_text().splitlines():
        key, *values = line.split()
        if key in ("KMIN_MAP", "KMAX_MAP", "PMAX_MAP"):
            count, pairs = int(values[0]), values[1:]
            assert len(pairs) == 2 * count, line
            maps[key] = {int(pairs[i]): float(pairs[i + 1]) for i in range(0, len(pairs), 2)}
    return maps


def test_per_rate_ecn_equals_hpcc_maps(fidelity: ModuleType, tmp_path: Path) -> None:
    maps = _hpcc_maps(fidelity, tmp_path)
    attrs = fidelity.FABRIC_ATTRIBUTES
    reference = attrs["ns3::SwitchMmu::EcnReferenceRate"]
    assert reference.endswith("Gbps")
    reference_bps = int(float(reference.removesuffix("Gbps")) * 1e9)
    host_bps = int(fidelity.HPCC_FABRIC.rate_gbps * 1e9)
    # the fabric's two port rates: 100 Gb/s host links, 400 Gb/s ToR-spine links
    assert sorted(maps["KMIN_MAP"]) == [host_bps, host_bps * fidelity.HPCC_FABRIC.spine_rate_factor]
    for rate_bps, kmin_kb in maps["KMIN_MAP"].items():
        # SwitchMmu::ScaleToRate: bytes x rate / reference, integer
        ours_kmin = int(attrs["ns3::SwitchMmu::EcnKminBytes"]) * rate_bps // reference_bps
        ours_kmax = int(attrs["ns3::SwitchMmu::EcnKmaxBytes"]) * rate_bps // reference_bps
        assert ours_kmin == kmin_kb * 1000
        assert ours_kmax == maps["KMAX_MAP"][rate_bps] * 1000
        assert float(attrs["ns3::SwitchMmu::EcnPmax"]) == maps["PMAX_MAP"][rate_bps]
    # 400 Gb/s: HPCC's run.py values, 1600 KB / 6400 KB
    assert maps["KMIN_MAP"][400_000_000_000] == 1600
    assert maps["KMAX_MAP"][400_000_000_000] == 6400


def test_ecn_one_setting_drops_only_the_reference(fidelity: ModuleType) -> None:
    per_rate = dict(fidelity.attributes_for("roce-dcqcn", "lossless"))
    one = dict(fidelity.attributes_for("roce-dcqcn", "lossless", ecn_per_rate=False))
    assert per_rate.pop("ns3::SwitchMmu::EcnReferenceRate") == "100Gbps"
    assert per_rate == one


def test_agreement_by_hand(fidelity: ModuleType) -> None:
    # ours / theirs - 1 per group: p50 1.0/1.0, 1.1/1.0 -> 0, +10 % (median +5 %);
    # p95 2/1, 3/3 -> +100 %, 0 (median +50 %); p99 4/5, 6/4 -> -20 %, +50 % (median +15 %)
    ours = pd.DataFrame(
        {
            "size_pct": [0, 50],
            "size_max_bytes": [1000, 2_000_000],
            "slowdown_p50": [1.0, 1.1],
            "slowdown_p95": [2.0, 3.0],
            "slowdown_p99": [4.0, 6.0],
        }
    )
    theirs = pd.DataFrame(
        {
            "size_pct": [0, 50],
            "size_max_bytes": [1000, 2_000_000],
            "slowdown_p50": [1.0, 1.0],
            "slowdown_p95": [1.0, 3.0],
            "slowdown_p99": [5.0, 4.0],
        }
    )
    assert fidelity.agreement(ours, theirs) == [
        "+5 % (+0 %..+10 %)",
        "+50 % (+0 %..+100 %)",
        "+15 % (-20 %..+50 %)",
    ]
    # < 200 KB: the 1000 B group only; >= 1 MB: the 2 MB group only
    assert fidelity.tails(ours) == "2.00 / 4.00 | 3.00-3.00"
    with pytest.raises(ValueError, match="size_pct differs"):
        fidelity.agreement(ours, theirs.assign(size_pct=[0, 55]))
