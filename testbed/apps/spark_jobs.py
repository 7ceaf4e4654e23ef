"""The Spark jobs ``disaggsim collect`` runs (WordCount, Sort, PageRank) and their data.

Paper Table 2 (Gao et al., OSDI'16) traces Spark WordCount, Spark Sort and GraphLab; here
all three are PySpark RDD jobs run on a Spark standalone cluster (the driver of this module
on node 0, see :mod:`disaggsim.testbed.apps.spark`). There is no HDFS: each map task
generates its input split in memory from ``(seed, split)``, so any executor makes the same
split and the dataset is reproducible offline; the shuffle goes over the network and through
the executors' local directories on the nodes' data disks (``SPARK_LOCAL_DIRS``), and every
reduce task writes its output to its node's disk (the executor's working directory).

Data (pure functions, unit-tested):

- WordCount text (:func:`gen_words`): words of a ``vocab_size``-word vocabulary drawn with
  Zipf's law, P(rank k) proportional to 1/k (the rank-frequency law of natural-language text;
  Zipf 1949), ``words_per_line`` words a line; word ``k`` is spelt ``w<k>`` in base 36.
- Sort records (:func:`gen_records`): sort-benchmark records as in ``gensort``
  (sortbenchmark.org): 100 bytes, a 10-byte uniform random key, then the record number in 32
  hex digits and filler; the same bytes as :mod:`disaggsim.testbed.apps.dask_sort`'s input.
- PageRank graph (:func:`gen_edges`): R-MAT (Chakrabarti, Zhan, Faloutsos, SDM'04) with the
  Graph500 parameters a=0.57, b=c=0.19, d=0.05 (graph500.org, "Kronecker generator"), a
  power-law degree distribution like the web and social graphs GraphLab ran on; self loops
  dropped.

- Big Data Benchmark tables (:func:`gen_rankings`, :func:`gen_uservisits`): the AMPLab Big
  Data Benchmark's ``rankings`` and ``uservisits`` with its published schemas
  (https://amplab.cs.berkeley.edu/benchmark/, "Schemas"; the tables of Pavlo et al., SIGMOD'09):
  ``rankings(pageURL VARCHAR(300), pageRank INT, avgDuration INT)``, ``uservisits(sourceIP
  VARCHAR(116), destURL VARCHAR(100), visitDate DATE, adRevenue FLOAT, userAgent
  VARCHAR(256), countryCode CHAR(3), languageCode CHAR(6), searchWord VARCHAR(32), duration
  INT)``. The values are ours (the benchmark ships data, not a generator): page ``i``'s URL
  is :func:`page_url`, ``pageRank`` Zipf(1.3) capped at 10 000 (a heavy tail, so the scan's
  threshold selects a minority), a visit's ``destURL`` is a ranked page drawn with Zipf's
  law (:func:`zipf_ranks`), ``sourceIP`` uniform IPv4, ``visitDate`` uniform over
  1970-2009, ``adRevenue`` uniform [0, 1000).

Jobs: WordCount is ``flatMap -> map(w, 1) -> reduceByKey`` (Spark's examples/wordcount.py),
Sort is ``sortByKey`` (range partitioning by sampled keys: Spark's TeraSort structure), PageRank
is Spark's examples/pagerank.py iteration (links ``join`` ranks, contributions
``reduceByKey``, ``0.15 + 0.85 x sum``; Page et al. 1999 with damping 0.85, dangling mass
dropped as in that example); SQL BDB runs the benchmark's queries 1B, 2A and 3A in Spark SQL
(:data:`BDB_QUERIES`: a scan, an aggregation and a join).

Run ``python -m disaggsim.testbed.apps.spark_jobs --help`` (inside the cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

import numpy as np

RECORD_BYTES: Final = 100
KEY_BYTES: Final = 10
#: R-MAT quadrant probabilities of the Graph500 Kronecker generator (a, b, c; d = rest).
RMAT_ABC: Final = (0.57, 0.19, 0.19)
DAMPING: Final = 0.85


def word(rank: int) -> str:
    """The spelling of vocabulary word ``rank`` (0-based): ``w`` + rank in base 36."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    n = rank
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return "w" + out


def zipf_ranks(n: int, vocab_size: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` word ranks in ``[0, vocab_size)`` with P(k) = (1/(k+1)) / H(vocab_size)."""
    weights = 1.0 / np.arange(1, vocab_size + 1)
    cdf = np.cumsum(weights / weights.sum())
    cdf[-1] = 1.0
    return np.searchsorted(cdf, rng.random(n), side="right")


def gen_words(seed: int, split: int, lines: int, words_per_line: int, vocab_size: int) -> list[str]:
    """Split ``split`` of the WordCount text: ``lines`` lines of ``words_per_line`` words.

    Deterministic in ``(seed, split)`` (NumPy PCG64).
    """
    rng = np.random.Generator(np.random.PCG64([seed, 1, split]))
    ranks = zipf_ranks(lines * words_per_line, vocab_size, rng).reshape(lines, words_per_line)
    vocab = [word(k) for k in range(vocab_size)]
    return [" ".join(vocab[k] for k in row) for row in ranks]


def gen_records(seed: int, first_record: int, n_records: int) -> np.ndarray:
    """``n_records`` sort-benchmark records (uint8 array, shape (n, 100)), numbered from
    ``first_record``; keys from PCG64 seeded by ``(seed, first_record)``."""
    rng = np.random.Generator(np.random.PCG64([seed, first_record]))
    recs = np.empty((n_records, RECORD_BYTES), dtype=np.uint8)
    recs[:, :KEY_BYTES] = rng.integers(0, 256, size=(n_records, KEY_BYTES), dtype=np.uint8)
    numbers = np.char.zfill(
        np.char.mod("%x", np.arange(first_record, first_record + n_records)), 32
    ).astype("S32")
    recs[:, KEY_BYTES : KEY_BYTES + 32] = np.frombuffer(numbers.tobytes(), np.uint8).reshape(
        n_records, 32
    )
    recs[:, KEY_BYTES + 32 :] = ord("A")
    recs[:, -2:] = np.frombuffer(b"\r\n", np.uint8)
    return recs


def gen_edges(seed: int, split: int, n_edges: int, scale: int) -> np.ndarray:
    """``n_edges`` R-MAT edges over ``2**scale`` vertices (int64 array, shape (m, 2)), self
    loops removed (so m <= n_edges). Deterministic in ``(seed, split)``."""
    rng = np.random.Generator(np.random.PCG64([seed, 2, split]))
    a, b, c = RMAT_ABC
    src = np.zeros(n_edges, dtype=np.int64)
    dst = np.zeros(n_edges, dtype=np.int64)
    for bit in range(scale):
        u = rng.random(n_edges)
        # quadrant: a = (0,0), b = (0,1), c = (1,0), d = (1,1)
        src_bit = u >= a + b
        dst_bit = ((u >= a) & (u < a + b)) | (u >= a + b + c)
        src |= src_bit.astype(np.int64) << bit
        dst |= dst_bit.astype(np.int64) << bit
    keep = src != dst
    return np.stack([src[keep], dst[keep]], axis=1)


#: The Big Data Benchmark queries run (its page, "Queries": 1 scan with X = 100 (1B),
#: 2 aggregation with X = 8 (2A), 3 join with X = 1980-04-01 (3A)), in Spark SQL.
BDB_QUERIES: Final = {
    "scan": "SELECT pageURL, pageRank FROM rankings WHERE pageRank > 100",
    "aggregation": (
        "SELECT SUBSTR(sourceIP, 1, 8), SUM(adRevenue) FROM uservisits "
        "GROUP BY SUBSTR(sourceIP, 1, 8)"
    ),
    "join": (
        "SELECT sourceIP, totalRevenue, avgPageRank FROM (SELECT sourceIP, "
        "AVG(pageRank) AS avgPageRank, SUM(adRevenue) AS totalRevenue FROM rankings AS R, "
        "uservisits AS UV WHERE R.pageURL = UV.destURL AND UV.visitDate BETWEEN "
        "DATE '1980-01-01' AND DATE '1980-04-01' GROUP BY UV.sourceIP) "
        "ORDER BY totalRevenue DESC LIMIT 1"
    ),
}
_AGENTS: Final = (
    "Mozilla/5.0 (X11; Linux x86_64)",
    "Mozilla/5.0 (Windows NT 10.0; Win64)",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15)",
    "curl/7.88.1",
)
_COUNTRIES: Final = ("USA", "DEU", "FRA", "CHN", "IND", "BRA", "JPN", "GBR")
_LANGUAGES: Final = ("en-US", "de-DE", "fr-FR", "zh-CN", "hi-IN", "pt-BR", "ja-JP", "en-GB")
#: visitDate range: 1970-01-01 .. 2009-12-31, as days since the epoch.
_LAST_VISIT_DAY: Final = 14609


def page_url(i: int) -> str:
    """The URL of ranked page ``i``."""
    return f"http://www.{word(i)}.example.com/page{i:09d}.html"


def gen_rankings(seed: int, first: int, n: int) -> list[tuple[str, int, int]]:
    """``rankings`` rows for pages ``first .. first+n-1``: (pageURL, pageRank,
    avgDuration); deterministic in ``(seed, first)``."""
    rng = np.random.Generator(np.random.PCG64([seed, 3, first]))
    ranks = np.minimum(rng.zipf(1.3, n), 10_000)
    durations = rng.integers(1, 100, n)
    return [(page_url(first + k), int(ranks[k]), int(durations[k])) for k in range(n)]


def gen_uservisits(seed: int, split: int, n: int, n_pages: int) -> list[tuple[Any, ...]]:
    """``n`` ``uservisits`` rows of split ``split`` whose destURLs are among ``n_pages``
    ranked pages (Zipf); the schema's column order; deterministic in ``(seed, split)``."""
    import datetime

    rng = np.random.Generator(np.random.PCG64([seed, 4, split]))
    dest = zipf_ranks(n, n_pages, rng)
    ips = rng.integers(0, 256, size=(n, 4))
    days = rng.integers(0, _LAST_VISIT_DAY + 1, n)
    revenue = rng.random(n) * 1000
    pick = rng.integers(0, len(_AGENTS), size=(n, 3))
    words_ = zipf_ranks(n, 1000, rng)
    durations = rng.integers(1, 10, n)
    epoch = datetime.date(1970, 1, 1)
    return [
        (
            f"{ips[k, 0]}.{ips[k, 1]}.{ips[k, 2]}.{ips[k, 3]}",
            page_url(int(dest[k])),
            epoch + datetime.timedelta(days=int(days[k])),
            float(revenue[k]),
            _AGENTS[pick[k, 0]],
            _COUNTRIES[pick[k, 1] * 2 % 8],
            _LANGUAGES[pick[k, 2] * 2 % 8],
            word(int(words_[k])),
            int(durations[k]),
        )
        for k in range(n)
    ]


def pagerank_contributions(
    item: tuple[Any, tuple[Iterable[Any], float]],
) -> Iterator[tuple[Any, float]]:
    """One vertex's rank split evenly over its out-links (Spark's examples/pagerank.py)."""
    _, (links, rank) = item
    urls = list(links)
    for url in urls:
        yield url, rank / len(urls)


def pagerank_local(edges: np.ndarray, iterations: int) -> dict[int, float]:
    """The same iteration as the Spark job, in one process (the tests' oracle and a check
    on small graphs): ranks of the vertices with out-links after ``iterations`` steps,
    starting from 1.0; duplicate edges count once."""
    links: dict[int, list[int]] = {}
    for s, d in sorted({(int(s), int(d)) for s, d in edges}):
        links.setdefault(s, []).append(d)
    ranks = dict.fromkeys(links, 1.0)
    for _ in range(iterations):
        contrib: dict[int, float] = {}
        for s, outs in links.items():
            if s in ranks:
                for d in outs:
                    contrib[d] = contrib.get(d, 0.0) + ranks[s] / len(outs)
        ranks = {v: 1 - DAMPING + DAMPING * r for v, r in contrib.items()}
    return ranks


# --- the jobs (run in the driver; functions shipped to executors are module-level) ---------


def _write_local(name: str, lines: Iterable[bytes]) -> int:
    """Write an output partition to the executor's working directory (the node's disk)."""
    out = Path(os.getcwd()) / "output"
    out.mkdir(exist_ok=True)
    tmp = out / (name + ".tmp")
    n = 0
    with open(tmp, "wb") as fh:
        for line in lines:
            fh.write(line)
            n += 1
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, out / name)
    return n


def _wordcount(sc: Any, a: argparse.Namespace) -> dict[str, Any]:
    from operator import add

    seed, lines, wpl, vocab = a.seed, a.lines_per_split, a.words_per_line, a.vocab_size
    text = sc.parallelize(range(a.splits), a.splits).flatMap(
        lambda s: gen_words(seed, s, lines, wpl, vocab)
    )
    counts = (
        text.flatMap(lambda line: line.split(" "))
        .map(lambda w: (w, 1))
        .reduceByKey(add, a.reducers)
    )

    def save(idx: int, it: Iterator[tuple[str, int]]) -> Iterator[tuple[int, int, str, int]]:
        rows = list(it)
        _write_local(f"part-{idx:05d}", (f"{w}\t{c}\n".encode() for w, c in rows))
        top = max(rows, key=lambda r: r[1]) if rows else ("", 0)
        yield len(rows), sum(c for _, c in rows), top[0], top[1]

    parts = counts.mapPartitionsWithIndex(save).collect()
    top = max(parts, key=lambda p: p[3])
    words = sum(p[1] for p in parts)
    if words != a.splits * lines * wpl:
        raise AssertionError(f"wordcount counted {words} words, generated {a.splits * lines * wpl}")
    return {
        "words": words,
        "distinct_words": sum(p[0] for p in parts),
        "top_word": top[2],
        "top_count": top[3],
    }


def _sort(sc: Any, a: argparse.Namespace) -> dict[str, Any]:
    seed, per = a.seed, a.records_per_split

    def records(s: int) -> Iterator[tuple[bytes, bytes]]:
        recs = gen_records(seed, s * per, per)
        for r in recs:
            b = r.tobytes()
            yield b[:KEY_BYTES], b[KEY_BYTES:]

    data = sc.parallelize(range(a.splits), a.splits).flatMap(records)
    ordered = data.sortByKey(numPartitions=a.reducers)

    def save(idx: int, it: Iterator[tuple[bytes, bytes]]) -> Iterator[tuple[int, bytes, bytes]]:
        first = last = b""
        n = 0
        prev = b""

        def lines() -> Iterator[bytes]:
            nonlocal first, last, n, prev
            for k, v in it:
                if n == 0:
                    first = k
                elif k < prev:
                    raise AssertionError(f"partition {idx} not sorted")
                prev = last = k
                n += 1
                yield k + v

        _write_local(f"part-{idx:05d}", lines())
        yield n, first, last

    parts = [p for p in ordered.mapPartitionsWithIndex(save).collect() if p[0]]
    for prev, cur in zip(parts, parts[1:], strict=False):
        if prev[2] > cur[1]:
            raise AssertionError("output partitions overlap: not globally sorted")
    n = sum(p[0] for p in parts)
    if n != a.splits * per:
        raise AssertionError(f"sort wrote {n} records, generated {a.splits * per}")
    return {"records_out": n, "partitions": a.reducers}


def _pagerank(sc: Any, a: argparse.Namespace) -> dict[str, Any]:
    from operator import add

    seed, per, scale = a.seed, a.edges_per_split, a.graph_scale
    edges = sc.parallelize(range(a.splits), a.splits).flatMap(
        lambda s: [(int(u), int(v)) for u, v in gen_edges(seed, s, per, scale)]
    )
    links = edges.distinct(a.reducers).groupByKey().cache()
    ranks = links.map(lambda kv: (kv[0], 1.0))
    for _ in range(a.iterations):
        contribs = links.join(ranks).flatMap(pagerank_contributions)
        ranks = contribs.reduceByKey(add, a.reducers).mapValues(lambda r: 1 - DAMPING + DAMPING * r)

    def save(idx: int, it: Iterator[tuple[int, float]]) -> Iterator[tuple[int, float, int, float]]:
        rows = list(it)
        _write_local(f"part-{idx:05d}", (f"{v}\t{r:.9g}\n".encode() for v, r in rows))
        top = max(rows, key=lambda r: r[1]) if rows else (-1, 0.0)
        yield len(rows), sum(r for _, r in rows), top[0], top[1]

    parts = ranks.mapPartitionsWithIndex(save).collect()
    top = max(parts, key=lambda p: p[3])
    return {
        "vertices_ranked": sum(p[0] for p in parts),
        "links": links.count(),
        "rank_sum": round(sum(p[1] for p in parts), 6),
        "top_vertex": top[2],
        "top_rank": round(top[3], 6),
        "iterations": a.iterations,
    }


def _sql_bdb(sc: Any, a: argparse.Namespace) -> dict[str, Any]:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import (
        DateType,
        FloatType,
        IntegerType,
        StringType,
        StructField,
        StructType,
    )

    spark = SparkSession(sc)
    seed, n_rank, n_visit = a.seed, a.rankings_per_split, a.uservisits_per_split
    n_pages = a.splits * n_rank
    rankings_schema = StructType(
        [
            StructField("pageURL", StringType()),
            StructField("pageRank", IntegerType()),
            StructField("avgDuration", IntegerType()),
        ]
    )
    uservisits_schema = StructType(
        [
            StructField("sourceIP", StringType()),
            StructField("destURL", StringType()),
            StructField("visitDate", DateType()),
            StructField("adRevenue", FloatType()),
            StructField("userAgent", StringType()),
            StructField("countryCode", StringType()),
            StructField("languageCode", StringType()),
            StructField("searchWord", StringType()),
            StructField("duration", IntegerType()),
        ]
    )
    rankings = spark.createDataFrame(
        sc.parallelize(range(a.splits), a.splits).flatMap(
            lambda s: gen_rankings(seed, s * n_rank, n_rank)
        ),
        rankings_schema,
    ).cache()
    visits = spark.createDataFrame(
        sc.parallelize(range(a.splits), a.splits).flatMap(
            lambda s: gen_uservisits(seed, s, n_visit, n_pages)
        ),
        uservisits_schema,
    ).cache()
    rankings.createOrReplaceTempView("rankings")
    visits.createOrReplaceTempView("uservisits")
    out: dict[str, Any] = {"rankings": rankings.count(), "uservisits": visits.count()}
    for name, sql in BDB_QUERIES.items():
        t0 = time.monotonic()
        rows = spark.sql(sql).collect()
        out[f"{name}_rows"] = len(rows)
        out[f"{name}_s"] = round(time.monotonic() - t0, 3)
        if name == "join" and rows:
            out["join_top"] = [rows[0][0], round(float(rows[0][1]), 2), float(rows[0][2])]
    return out


JOBS: Final = {"wordcount": _wordcount, "sort": _sort, "pagerank": _pagerank, "sql-bdb": _sql_bdb}


def main(argv: list[str] | None = None) -> int:
    """Driver: connect to ``--master``, wait for ``--executors`` (and ``--go-file``), run
    ``--job``, print its statistics as one JSON line."""
    ap = argparse.ArgumentParser(prog="python -m disaggsim.testbed.apps.spark_jobs")
    ap.add_argument("--job", choices=sorted(JOBS), required=True)
    ap.add_argument("--master", required=True)
    ap.add_argument("--driver-host", required=True)
    ap.add_argument("--executors", type=int, required=True)
    ap.add_argument("--executor-memory-mb", type=int, default=512)
    ap.add_argument("--driver-memory-mb", type=int, default=512)
    ap.add_argument("--splits", type=int, required=True)
    ap.add_argument("--reducers", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lines-per-split", type=int, default=10_000)
    ap.add_argument("--words-per-line", type=int, default=10)
    ap.add_argument("--vocab-size", type=int, default=50_000)
    ap.add_argument("--records-per-split", type=int, default=100_000)
    ap.add_argument("--edges-per-split", type=int, default=100_000)
    ap.add_argument("--graph-scale", type=int, default=16)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--rankings-per-split", type=int, default=20_000)
    ap.add_argument("--uservisits-per-split", type=int, default=100_000)
    ap.add_argument(
        "--jvm-options",
        default="-XX:+UseSerialGC",
        help="extra options of the driver's and executors' JVMs",
    )
    ap.add_argument(
        "--go-file",
        type=Path,
        default=None,
        help="after the executors registered, wait for this file to exist",
    )
    ap.add_argument(
        "--executor-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment of the executors (spark.executorEnv.KEY)",
    )
    a = ap.parse_args(argv)
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setMaster(a.master)
        .setAppName(f"disaggsim-{a.job}")
        .set("spark.driver.host", a.driver_host)
        .set("spark.driver.bindAddress", a.driver_host)
        .set("spark.executor.memory", f"{a.executor_memory_mb}m")
        .set("spark.driver.memory", f"{a.driver_memory_mb}m")
        .set("spark.executor.cores", "1")
        .set("spark.cores.max", str(a.executors))
        .set("spark.ui.enabled", "false")
        .set("spark.default.parallelism", str(a.reducers))
        .set("spark.executor.extraJavaOptions", a.jvm_options)
        .set("spark.driver.extraJavaOptions", a.jvm_options)
        .set("spark.python.worker.reuse", "true")
        .set("spark.ui.showConsoleProgress", "false")
    )
    for pair in a.executor_env:
        key, sep, value = pair.partition("=")
        if not sep:
            ap.error(f"--executor-env {pair!r}: expected KEY=VALUE")
        conf.set(f"spark.executorEnv.{key}", value)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("WARN")
    deadline = time.monotonic() + 180
    # getExecutorMemoryStatus: one entry per block manager, the driver's included (local
    # mode, for tests: the driver is the executor).
    want = 1 if a.master.startswith("local") else a.executors + 1
    while sc._jsc.sc().getExecutorMemoryStatus().size() < want:
        if time.monotonic() > deadline:
            raise SystemExit(f"spark: fewer than {a.executors} executors after 180 s")
        time.sleep(0.2)
    print("executors registered", flush=True)
    while a.go_file is not None and not a.go_file.exists():
        time.sleep(0.05)
    t0 = time.monotonic()
    stats = JOBS[a.job](sc, a)
    stats["job_s"] = round(time.monotonic() - t0, 3)
    sc.stop()
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
