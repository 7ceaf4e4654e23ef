"""Spark in ``disaggsim collect`` (testbed/apps/spark.py, testbed/apps/spark_jobs.py).

The data generators and the PageRank step are checked against hand-computed values and
independent implementations (the Dask sort's record writer, a Counter, the analytic Zipf
law); the Spark jobs themselves run in Spark local mode (real PySpark + JVM, no cluster)
and their output files are compared with those oracles. The standalone cluster across the
namespaces is exercised by the bundled samples (tests/test_collect_app_samples.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from disaggsim.testbed.apps.dask_sort import gen_input
from disaggsim.testbed.apps.spark import MIN_JVM_MB, SparkConfig, dataset, driver_argv
from disaggsim.testbed.apps.spark_jobs import (
    RMAT_ABC,
    gen_edges,
    gen_records,
    gen_words,
    pagerank_contributions,
    pagerank_local,
    word,
    zipf_ranks,
)
from disaggsim.testbed.collect import PRESETS, CollectConfig


def test_word_spelling_is_base36() -> None:
    assert [word(0), word(35), word(36), word(36 * 36 + 1)] == ["w0", "wz", "w10", "w101"]


def test_zipf_ranks_follow_one_over_k() -> None:
    vocab, n = 1000, 400_000
    ranks = zipf_ranks(n, vocab, np.random.Generator(np.random.PCG64(3)))
    assert ranks.min() >= 0 and ranks.max() < vocab
    h = sum(1 / k for k in range(1, vocab + 1))  # H(1000) = 7.4855
    counts = np.bincount(ranks, minlength=vocab)
    for k in (0, 1, 9):
        expected = n / ((k + 1) * h)  # 53 437, 26 719, 5 344
        assert abs(counts[k] - expected) < 5 * np.sqrt(expected), (k, counts[k], expected)


def test_gen_words_is_deterministic_per_split() -> None:
    a = gen_words(7, 0, 50, 4, 100)
    assert a == gen_words(7, 0, 50, 4, 100) and a != gen_words(7, 1, 50, 4, 100)
    assert len(a) == 50 and all(len(line.split(" ")) == 4 for line in a)
    assert all(w.startswith("w") for line in a for w in line.split(" "))


def test_gen_records_match_the_dask_sort_input(tmp_path: Path) -> None:
    """Two independent writers of gensort-style records give the same bytes."""
    gen_input(tmp_path / "part", 500, first_record=1000, seed=9)
    assert gen_records(9, 1000, 500).tobytes() == (tmp_path / "part").read_bytes()


def test_gen_edges_rmat_quadrants() -> None:
    e = gen_edges(5, 0, 50_000, 12)
    assert e.shape[1] == 2 and (e[:, 0] != e[:, 1]).all()
    assert e.min() >= 0 and e.max() < 1 << 12
    np.testing.assert_array_equal(e, gen_edges(5, 0, 50_000, 12))
    # Top bit of (src, dst): quadrant (0,0) with probability a = 0.57, (1,1) with d = 0.05
    # (self loops, ~0.6 % of the 50 000 draws at scale 12, barely move them).
    top = e >> 11
    a = float(np.mean((top[:, 0] == 0) & (top[:, 1] == 0)))
    d = float(np.mean((top[:, 0] == 1) & (top[:, 1] == 1)))
    assert abs(a - RMAT_ABC[0]) < 0.01 and abs(d - 0.05) < 0.005, (a, d)


def test_pagerank_step_by_hand() -> None:
    # A->B, A->C, B->C, C->A from ranks 1: A gets 1 (from C), B 0.5, C 0.5 + 1.
    edges = np.array([[0, 1], [0, 2], [1, 2], [2, 0], [0, 1]])  # duplicate edge counts once
    r1 = pagerank_local(edges, 1)
    assert r1 == pytest.approx({0: 1.0, 1: 0.15 + 0.85 * 0.5, 2: 0.15 + 0.85 * 1.5})
    # A 3-cycle is a fixed point (every rank stays 1).
    assert pagerank_local(np.array([[0, 1], [1, 2], [2, 0]]), 10) == pytest.approx(
        {0: 1.0, 1: 1.0, 2: 1.0}
    )
    assert list(pagerank_contributions((0, ([1, 2, 3], 0.9)))) == [(1, 0.3), (2, 0.3), (3, 0.3)]


def test_spark_config_validation() -> None:
    cfg = CollectConfig.model_validate(
        {"sample": "s", "apps": [{"kind": "spark", "job": "sort", "records_per_split": 10}]}
    )
    assert isinstance(cfg.apps[0], SparkConfig) and cfg.apps[0].job == "sort"
    with pytest.raises(ValidationError, match="job"):
        SparkConfig.model_validate({})
    with pytest.raises(ValidationError, match="executor_memory_mb"):
        SparkConfig(job="wordcount", executor_memory_mb=MIN_JVM_MB - 1)
    with pytest.raises(ValidationError, match="duplicate R-MAT edges"):
        SparkConfig(job="pagerank", graph_scale=4, edges_per_split=1000)
    with pytest.raises(ValidationError, match="extra"):
        SparkConfig.model_validate({"job": "sort", "records": 5})
    for name in ("spark-wordcount", "spark-sort", "spark-pagerank"):
        assert PRESETS[name].apps[0].kind == "spark"


def test_driver_argv_and_dataset() -> None:
    cfg = SparkConfig(
        job="wordcount",
        splits_per_node=3,
        reducers_per_node=2,
        lines_per_split=100,
        words_per_line=5,
        vocab_size=10,
    )
    argv = driver_argv(cfg, 3, seed=4, go_file=Path("/x/go"))
    opt = dict(zip(argv[3::2], argv[4::2], strict=False))
    assert opt["--job"] == "wordcount" and opt["--master"] == "spark://10.77.0.1:7077"
    assert (opt["--splits"], opt["--reducers"], opt["--executors"]) == ("9", "6", "3")
    assert opt["--go-file"] == "/x/go" and opt["--seed"] == "4"
    assert dataset(cfg, 3, 4).startswith("4500 words (9 splits x 100 lines x 5)")


def _spark_skip() -> str | None:
    if shutil.which("java") is None:
        return "no java (apt-get install openjdk-17-jre-headless)"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark not installed (pip install .[collect])"
    return None


def _run_local(job: str, cwd: Path, *args: str) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "disaggsim.testbed.apps.spark_jobs",
            "--job",
            job,
            "--master",
            "local[2]",
            "--driver-host",
            "127.0.0.1",
            "--executors",
            "1",
            "--seed",
            "3",
            *args,
        ],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        timeout=240,
    )


def _read_tsv(out: Path) -> dict[str, str]:
    rows = {}
    for f in sorted(out.glob("part-*")):
        for line in f.read_text().splitlines():
            k, v = line.split("\t")
            rows[k] = v
    return rows


@pytest.mark.skipif(_spark_skip() is not None, reason=str(_spark_skip()))
def test_spark_wordcount_and_pagerank_match_the_oracles(tmp_path: Path) -> None:
    """Real PySpark (local mode) writes the counts of a Counter and the local PageRank."""
    wc = tmp_path / "wc"
    wc.mkdir()
    _run_local(
        "wordcount",
        wc,
        "--splits",
        "3",
        "--reducers",
        "2",
        "--lines-per-split",
        "300",
        "--words-per-line",
        "7",
        "--vocab-size",
        "500",
    )
    expected = Counter(
        w for s in range(3) for line in gen_words(3, s, 300, 7, 500) for w in line.split(" ")
    )
    got = _read_tsv(wc / "output")
    assert len(list((wc / "output").glob("part-*"))) == 2
    assert {k: int(v) for k, v in got.items()} == dict(expected)

    pr = tmp_path / "pr"
    pr.mkdir()
    _run_local(
        "pagerank",
        pr,
        "--splits",
        "2",
        "--reducers",
        "2",
        "--edges-per-split",
        "3000",
        "--graph-scale",
        "9",
        "--iterations",
        "4",
    )
    edges = np.concatenate([gen_edges(3, s, 3000, 9) for s in range(2)])
    oracle = pagerank_local(edges, 4)
    ranks = {int(k): float(v) for k, v in _read_tsv(pr / "output").items()}
    assert ranks.keys() == oracle.keys()
    assert all(ranks[v] == pytest.approx(oracle[v], rel=1e-8) for v in oracle)
