"""Tests of disaggsim.traces.workloads against hand-computed values and analytic oracles."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from disaggsim.schemas import NS3_FLOWS
from disaggsim.traces import workloads as wl

# ---------------------------------------------------------------------------------------
# Oracles, written independently of the implementation


def survival_pkts(cdf: wl.FlowSizeCdf, k: float) -> float:
    """P(X > k) for the interpolated size X (before rounding), summed segment by segment."""
    sizes, probs = cdf.sizes_pkts, cdf.cdf
    total = probs[0] * (1.0 if sizes[0] > k else 0.0)  # atom at sizes[0]
    for i in range(1, len(sizes)):
        p = probs[i] - probs[i - 1]
        a, b = sizes[i - 1], sizes[i]
        if b == a:
            frac = 1.0 if a > k else 0.0
        else:
            frac = min(1.0, max(0.0, (b - k) / (b - a)))
        total += p * frac
    return float(total)


def oracle_mean_ceil_pkts(cdf: wl.FlowSizeCdf) -> float:
    """E[ceil X] = sum_{k >= 0} P(ceil X > k) = sum_{k >= 0} P(X > k) (X > 0)."""
    top = int(cdf.sizes_pkts[-1])
    return float(sum(survival_pkts(cdf, k) for k in range(0, top + 1)))


def oracle_mean_linear_pkts(cdf: wl.FlowSizeCdf) -> float:
    """E[X] = integral_0^max P(X > x) dx, trapezoid rule on a fine linear + log grid."""
    top = float(cdf.sizes_pkts[-1])
    xs = np.unique(
        np.concatenate([np.linspace(0.0, top, 1_000_001), np.geomspace(1e-3, top, 1_000_001)])
    )
    # vectorised survival: same per-segment rule as survival_pkts
    surv = np.zeros(len(xs))
    sizes, probs = cdf.sizes_pkts, cdf.cdf
    surv += probs[0] * (sizes[0] > xs)
    for i in range(1, len(sizes)):
        p = probs[i] - probs[i - 1]
        a, b = sizes[i - 1], sizes[i]
        frac = (a > xs).astype(float) if b == a else np.clip((b - xs) / (b - a), 0.0, 1.0)
        surv += p * frac
    return float(np.sum((surv[1:] + surv[:-1]) / 2 * np.diff(xs)))


# ---------------------------------------------------------------------------------------
# CDF files and sampling


def test_shipped_cdfs_are_listed() -> None:
    assert wl.available_cdfs() == [
        "datamining",
        "ddc-samples",
        "hpcc-fbhadoop",
        "hpcc-websearch",
        "websearch",
    ]


def test_websearch_linear_mean_hand_computed() -> None:
    cdf = wl.load_cdf("websearch")
    # Trapezoids of the DCTCP web search CDF (traces/cdfs/websearch.txt), in packets:
    # .15*6 + .05*9.5 + .1*16 + .1*26 + .13*43 + .07*93 + .1*400 + .1*1000 + .1*2333
    # + .07*5000 + .03*13333.5 = 1140.98
    assert cdf.mean_pkts_linear() == pytest.approx(1140.98, rel=1e-12)
    assert cdf.mean_pkts_linear() == pytest.approx(oracle_mean_linear_pkts(cdf), rel=1e-6)


def test_datamining_linear_mean_hand_computed() -> None:
    cdf = wl.load_cdf("datamining")
    # .5*1 + .1*1.5 + .1*2.5 + .1*5 + .1*137 + .05*1187 + .04*34387 + .01*366667 = 5116.6
    assert cdf.mean_pkts_linear() == pytest.approx(5116.6, rel=1e-12)
    assert cdf.mean_pkts_linear() == pytest.approx(oracle_mean_linear_pkts(cdf), rel=1e-6)


@pytest.mark.parametrize("name", ["websearch", "datamining"])
def test_exact_mean_with_ceil_matches_survival_sum(name: str) -> None:
    cdf = wl.load_cdf(name)
    assert cdf.mean_pkts() == pytest.approx(oracle_mean_ceil_pkts(cdf), rel=1e-9)
    assert 0.0 <= cdf.mean_pkts() - cdf.mean_pkts_linear() < 1.0
    assert cdf.mean_bytes() == pytest.approx(cdf.mean_pkts() * 1460)


def test_sample_pkts_hand_cases() -> None:
    cdf = wl.load_cdf("websearch")
    u = np.array([0.0, 0.1, 0.15, 0.175, 0.625, 1.0])
    # 0 -> atom at 6; .1 -> between (6, 0) and (6, .15): 6; .15 == cdf point -> 6;
    # .175 -> 6 + .5 * 7 = 9.5 -> 10; .625 -> 133 + .25 * 534 = 266.5 -> 267; 1 -> 20000
    assert cdf.sample_pkts(u).tolist() == [6, 6, 6, 10, 267, 20000]


def test_mean_ceil_uniform_hand_cases() -> None:
    assert wl._mean_ceil_uniform(1.0, 2.0) == pytest.approx(2.0)
    # (0.5,1] -> 1 over .5, (1,2] -> 2 over 1, (2,2.5] -> 3 over .5: (0.5 + 2 + 1.5) / 2
    assert wl._mean_ceil_uniform(0.5, 2.5) == pytest.approx(2.0)
    assert wl._mean_ceil_uniform(3.0, 3.0) == 3.0


@pytest.mark.parametrize("name", ["websearch", "datamining"])
def test_sampled_sizes_follow_cdf(name: str) -> None:
    cdf = wl.load_cdf(name)
    n = 400_000
    pkts = cdf.sample_pkts(np.random.default_rng(7).random(n))
    # P(ceil X <= s) == P(X <= s) == cdf at integer CDF points (the last cdf of a repeated
    # size: "6 1 0" then "6 1 0.15" is an atom of 0.15 at 6); binomial 5-sigma band
    last_cdf = dict(zip(cdf.sizes_pkts.tolist(), cdf.cdf.tolist(), strict=True))
    for s, p in last_cdf.items():
        frac = float(np.mean(pkts <= s))
        sigma = math.sqrt(max(p * (1 - p), 1e-12) / n)
        assert abs(frac - p) <= 5 * sigma + 1e-9, (s, p, frac)


def test_generated_mean_size_matches_cdf_mean() -> None:
    df = wl.generate("websearch", 0.6, 144, 200_000, 10.0, "all_to_all", seed=3)
    mean_bytes = wl.load_cdf("websearch").mean_bytes()
    sample = df["size_bytes"].to_numpy(dtype=float)
    se = sample.std() / math.sqrt(len(sample))
    assert abs(sample.mean() - mean_bytes) < 4 * se
    assert np.all(df["size_bytes"] % 1460 == 0)


# ---------------------------------------------------------------------------------------
# Load, arrivals, matrices


@pytest.mark.parametrize("header_bytes", [0, 40])
def test_achieved_offered_load(header_bytes: int) -> None:
    hosts, rate_gbps, load = 144, 40.0, 0.6
    df = wl.generate(
        "websearch",
        load,
        hosts,
        200_000,
        rate_gbps,
        "all_to_all",
        seed=11,
        header_bytes=header_bytes,
    )
    duration_s = df["start_ns"].iloc[-1] / 1e9
    wire_bytes = df["size_bytes"].sum() * (1460 + header_bytes) / 1460
    achieved = wire_bytes * 8 / duration_s / (hosts * rate_gbps * 1e9)
    assert achieved == pytest.approx(load, rel=0.02)


def test_arrival_rate_formula_hand_computed() -> None:
    # 0.6 * 144 hosts * 10 Gb/s / (8 b/B * 1e6 B) = 108000 flows/s; x 1460/1500 with headers
    assert wl.arrival_rate_per_s(0.6, 144, 10.0, 1e6) == pytest.approx(108000.0)
    assert wl.arrival_rate_per_s(0.6, 144, 10.0, 1e6, 40) == pytest.approx(108000 * 1460 / 1500)


def test_interarrivals_are_exponential() -> None:
    hosts, rate_gbps, load = 144, 10.0, 0.6
    df = wl.generate("websearch", load, hosts, 50_000, rate_gbps, seed=5)
    lam = wl.arrival_rate_per_s(load, hosts, rate_gbps, wl.load_cdf("websearch").mean_bytes())
    gaps = np.diff(np.concatenate([[0], df["start_ns"].to_numpy()])) / 1e9
    assert np.all(gaps >= 0)
    # mean 1/lambda and coefficient of variation 1 (exponential)
    assert gaps.mean() == pytest.approx(1 / lam, rel=0.02)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)
    # one-sample Kolmogorov-Smirnov against Exp(lambda); 1% critical value 1.63 / sqrt(n)
    x = np.sort(gaps)
    n = len(x)
    f = 1.0 - np.exp(-lam * x)
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(0, n) / n))
    assert d < 1.63 / math.sqrt(n)


def test_all_to_all_uniform_other_destination() -> None:
    hosts = 8
    df = wl.generate("websearch", 0.5, hosts, 80_000, 10.0, "all_to_all", seed=2)
    src, dst = df["src_host"].to_numpy(), df["dst_host"].to_numpy()
    assert np.all(src != dst)
    assert set(np.unique(src)) == set(range(hosts))
    # each (src, dst != src) pair has probability 1 / (8 * 7): chi-square, 55 dof
    counts = pd.crosstab(src, dst).to_numpy()
    observed = counts[~np.eye(hosts, dtype=bool)]
    expected = len(df) / (hosts * (hosts - 1))
    chi2 = float(np.sum((observed - expected) ** 2 / expected))
    assert chi2 < 99.0  # chi-square(55): 0.999 quantile 93.2, 0.9997 quantile ~ 99
    assert np.all(np.diag(counts) == 0)


def test_permutation_is_fixed_derangement() -> None:
    hosts = 144
    df = wl.generate("websearch", 0.6, hosts, 20_000, 40.0, "permutation", seed=9)
    pairs = df.groupby("src_host")["dst_host"].unique()
    assert len(pairs) == hosts  # every host sent
    assert all(len(d) == 1 for d in pairs)  # one fixed destination per host
    mapping = {int(s): int(d[0]) for s, d in pairs.items()}
    assert all(s != d for s, d in mapping.items())
    assert sorted(mapping.values()) == list(range(hosts))  # a permutation


def test_rack_scope_stays_in_rack() -> None:
    for matrix in ("all_to_all", "permutation"):
        df = wl.generate(
            "datamining", 0.4, 32, 5_000, 100.0, matrix, seed=1, hosts_per_rack=16, scope="rack"
        )
        assert np.all(df["src_host"] // 16 == df["dst_host"] // 16)
        assert np.all(df["src_host"] != df["dst_host"])


def test_derangement_has_no_fixed_point() -> None:
    rng = np.random.default_rng(0)
    for n in (2, 3, 10, 144):
        perm = wl.derangement(n, rng)
        assert sorted(perm.tolist()) == list(range(n))
        assert not np.any(perm == np.arange(n))
    assert wl.derangement(2, rng).tolist() == [1, 0]


# ---------------------------------------------------------------------------------------
# Reproducibility, schema, I/O, errors


def test_reproducible_by_seed() -> None:
    a = wl.generate("datamining", 0.6, 144, 3_000, 10.0, "permutation", seed=42)
    b = wl.generate("datamining", 0.6, 144, 3_000, 10.0, "permutation", seed=42)
    c = wl.generate("datamining", 0.6, 144, 3_000, 10.0, "permutation", seed=43)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_output_matches_sim_flows_schema(tmp_path: Path) -> None:
    df = wl.generate("websearch", 0.6, 16, 1_000, 10.0, seed=0)
    table = pa.Table.from_pandas(df, schema=NS3_FLOWS, preserve_index=False)
    assert table.schema.equals(NS3_FLOWS)
    assert df["flow_id"].tolist() == list(range(1_000))
    assert df["start_ns"].is_monotonic_increasing
    out = tmp_path / "flows.csv"
    wl.write_sim_flows_csv(df, out)
    back = pd.read_csv(out)
    assert list(back.columns) == NS3_FLOWS.names
    pd.testing.assert_frame_equal(back, df, check_dtype=False)


def test_write_flows_by_extension(tmp_path: Path) -> None:
    from disaggsim.traces.yaps import read_yaps

    df = wl.generate("datamining", 0.6, 16, 500, 40.0, "permutation", seed=4)
    wl.write_flows(df, tmp_path / "f.csv")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "f.csv"), df, check_dtype=False)
    wl.write_flows(df, tmp_path / "f.parquet")
    back = pd.read_parquet(tmp_path / "f.parquet")
    pd.testing.assert_frame_equal(back, df)
    wl.write_flows(df, tmp_path / "f.yaps")
    yaps = read_yaps(tmp_path / "f.yaps")
    # whole 1460 B packets and ns start times: the YAPS file round-trips exactly
    pd.testing.assert_frame_equal(
        yaps[NS3_FLOWS.names].reset_index(drop=True), df, check_dtype=False
    )
    with pytest.raises(ValueError, match=r"unknown output extension '\.txt'"):
        wl.write_flows(df, tmp_path / "f.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.csv", "f.parquet", "f.yaps"]


def test_malformed_cdf_names_file_line_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("1 1 0\n5 1 0.5\n3 1 1\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3: field 'size_pkts' must not decrease"):
        wl.load_cdf(bad)
    bad.write_text("1 1 0\n5 1 x\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: field 'cdf' must be a number"):
        wl.load_cdf(bad)
    bad.write_text("1 1 0\n5 1 0.9\n")
    with pytest.raises(ValueError, match=r"bad\.txt: last line's field 'cdf' must be 1"):
        wl.load_cdf(bad)
    bad.write_text("1 1 0 7\n")
    with pytest.raises(ValueError, match=r"bad\.txt:1: expected 3 fields .* or 2 fields"):
        wl.load_cdf(bad)
    with pytest.raises(FileNotFoundError, match="shipped: datamining, ddc-samples, hpcc-"):
        wl.load_cdf("no-such-cdf")


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="load"):
        wl.generate("websearch", 0.0, 144, 10, 10.0)
    with pytest.raises(ValueError, match="hosts"):
        wl.generate("websearch", 0.5, 1, 10, 10.0)
    with pytest.raises(ValueError, match="matrix"):
        wl.generate("websearch", 0.5, 4, 10, 10.0, "incast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="hosts_per_rack"):
        wl.generate("websearch", 0.5, 10, 10, 10.0, scope="rack", hosts_per_rack=3)


def test_ddc_samples_cdf_matches_the_bundled_traces() -> None:
    """``ddc-samples.txt`` is the flow-size distribution of the two bundled real traces
    (traces/cdfs/README.md): its mean equals the traces' mean size in whole 1460 B packets."""
    import numpy as np

    from disaggsim.traces.convert import convert

    samples = Path(__file__).resolve().parents[1] / "traces" / "samples"
    sizes = np.concatenate(
        [convert(samples / s)["size_bytes"].to_numpy() for s in ("memcached-ycsb", "dask-sort")]
    )
    expected_mean_bytes = float((np.ceil(sizes / 1460) * 1460).mean())
    assert wl.load_cdf("ddc-samples").mean_bytes() == pytest.approx(expected_mean_bytes, rel=1e-4)


# ---------------------------------------------------------------------------------------
# HPCC's CDF format (bytes, percent): traffic_gen/custom_rand.py of HPCC's repository


def test_hpcc_websearch_mean_hand_computed() -> None:
    cdf = wl.load_cdf("hpcc-websearch")
    assert cdf.unit_bytes == 1
    # Trapezoids of traffic_gen/WebSearch_distribution.txt (bytes, percent), HPCC's own
    # CustomRand.getAvg: .15*5000 + .05*15000 + .1*25000 + .1*40000 + .13*65000
    # + .07*140000 + .1*600000 + .1*1500000 + .1*3500000 + .07*7500000 + .03*20000000
    assert cdf.mean_pkts_linear() == pytest.approx(1_711_250.0, rel=1e-12)
    # every point is a whole byte, so rounding each draw up adds exactly 1/2 B on average
    assert cdf.mean_bytes() == pytest.approx(1_711_250.5, rel=1e-12)


def test_hpcc_fbhadoop_mean_hand_computed() -> None:
    cdf = wl.load_cdf("hpcc-fbhadoop")
    # .01*50 + .01*150 + .03*250 + .1*325 + .05*375 + .1*450 + .1*550 + .1*650 + .1*850
    # + .07*1500 + .03*4500 + .02*18500 + .1*40000 + .05*65000 + .03*100000 + .05*210000
    # + .025*650000 + .015*1500000 + .01*6000000 = 120420.75
    assert cdf.mean_pkts_linear() == pytest.approx(120_420.75, rel=1e-12)
    assert cdf.mean_bytes() == pytest.approx(120_421.25, rel=1e-12)


def test_hpcc_sample_bytes_hand_cases() -> None:
    web = wl.load_cdf("hpcc-websearch")
    # .075 -> halfway along (0, 0 %)-(10000, 15 %): 5000; .999 -> 10 MB + 29/30 x 20 MB =
    # 29,333,333.3 -> 29,333,334 (HPCC's int() gives 29,333,333: at most 1 B apart); 1 -> 30 MB
    assert web.sample_bytes(np.array([0.075, 0.999, 1.0])).tolist() == [
        5000,
        29_333_334,
        30_000_000,
    ]
    hdp = wl.load_cdf("hpcc-fbhadoop")
    # 0 -> the first point, size 0 -> at least 1 B (HPCC: "if size <= 0: size = 1");
    # .005 -> 50 B; .3 -> the point (500, 30 %) itself
    assert hdp.sample_bytes(np.array([0.0, 0.005, 0.3])).tolist() == [1, 50, 500]


def test_hpcc_generated_sizes_are_bytes_with_the_cdf_mean() -> None:
    df = wl.generate("hpcc-fbhadoop", 0.3, 320, 200_000, 100.0, "all_to_all", seed=5)
    sample = df["size_bytes"].to_numpy(dtype=float)
    se = sample.std() / math.sqrt(len(sample))
    assert abs(sample.mean() - wl.load_cdf("hpcc-fbhadoop").mean_bytes()) < 4 * se
    assert np.any(df["size_bytes"] % 1460 != 0)  # not whole 1460 B packets
    assert df["size_bytes"].min() >= 1 and df["size_bytes"].max() <= 10_000_000


def test_malformed_hpcc_cdf_names_file_line_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("0 0\n100 50\n50 100\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3: field 'size_bytes' must not decrease"):
        wl.load_cdf(bad)
    bad.write_text("0 0\n100 150\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: field 'cdf_percent' must be in \[0, 100\]"):
        wl.load_cdf(bad)
    bad.write_text("0 0\n100 1 1\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: expected 2 fields as on the first point"):
        wl.load_cdf(bad)
    bad.write_text("0 0\n100 99\n")
    with pytest.raises(ValueError, match=r"last line's field 'cdf_percent' must be 100, got 99"):
        wl.load_cdf(bad)
    bad.write_text("-1 0\n100 100\n")
    with pytest.raises(ValueError, match=r"bad\.txt:1: field 'size_bytes' must be >= 0"):
        wl.load_cdf(bad)
