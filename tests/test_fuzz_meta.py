"""Fuzzing meta.json and `disaggsim convert` on a whole directory.

Seeds: a small real sample cut from traces/samples/dask-sort (three nodes: the first
lines of each paging trace with its meta, the first records of each disk blktrace), once
with our meta.json and once in the original artifact's layout (``<n>-mem-<host>``
indexed form, ``date`` meta, blktrace without anchor). Mutations: random JSON values in
any meta.json field, deleted fields, raw byte mutations of meta.json or of one trace
file. Each run of the CLI ends with exit code 0 and both outputs, or exit code 2, one
line on stderr naming the file (and line, offset or field), no traceback and no output
file. The corpus under tests/fixtures/fuzz/metajson replays as regular tests.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from _fuzz_traces import CORPUS, FUZZ_SETTINGS, mutated
from hypothesis import given, settings
from hypothesis import strategies as st

from disaggsim.cli import main
from disaggsim.traces.blktrace import read_records
from disaggsim.traces.paging import read_rmem_meta

SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "samples" / "dask-sort"
CLI_SETTINGS = settings(FUZZ_SETTINGS, max_examples=60)


def _make_seed(d: Path) -> dict[str, object]:
    """A three-node sample with our meta.json layout, cut from the bundled real one."""
    meta = json.loads((SAMPLE / "meta.json").read_text())
    d.mkdir()
    nodes = []
    for n in meta["nodes"]:
        rmem = n["paging"]
        lines = (SAMPLE / rmem).read_text().splitlines(True)[:30]
        (d / rmem).write_text("".join(lines))
        shutil.copy(SAMPLE / (rmem + ".meta"), d / (rmem + ".meta"))
        for f in sorted(SAMPLE.glob(n["disk_blktrace"] + ".blktrace.*")):
            rec = read_records(f)
            data = f.read_bytes()
            end = int(rec["offset"][20]) if len(rec) > 20 else len(data)
            (d / f.name).write_bytes(data[:end])
        nodes.append({k: n[k] for k in ("node", "ip", "paging", "disk_blktrace")})
    small = {
        "sample": "fuzz",
        "nodes": nodes,
        "trace_clock_offset_ns": meta["trace_clock_offset_ns"],
        "page_bytes": 4096,
    }
    (d / "meta.json").write_text(json.dumps(small))
    return small


def _to_artifact(src: Path, d: Path) -> None:
    """The same small sample in the artifact's layout and formats."""
    d.mkdir()
    meta = json.loads((src / "meta.json").read_text())
    for n in meta["nodes"]:
        i, host = n["node"], f"h{n['node']}"
        start_us = read_rmem_meta(src / (n["paging"] + ".meta"))
        out = []
        for idx, line in enumerate((src / n["paging"]).read_text().splitlines()):
            _, ts, page, npages = line.split()
            sign = "-" if page.startswith("-") else ""
            out.append(f"{idx} {sign}{start_us + int(ts)} {page.lstrip('+-')} {npages} 4096\n")
        (d / f"{i}-mem-{host}").write_text("".join(out))
        t = dt.datetime.fromtimestamp(start_us // 10**6, tz=dt.UTC)
        (d / f"{i}-meta-{host}").write_text(f"{t:%y%m%d%H%M%S}.{start_us % 10**6:06d}000\n")
        for f in src.glob(n["disk_blktrace"] + ".blktrace.*"):
            shutil.copy(f, d / f"{i}-disk-{host}.blktrace.{f.name.rsplit('.', 1)[1]}")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("seeds")
    _make_seed(base / "ours")
    _to_artifact(base / "ours", base / "artifact")
    return base / "ours", base / "artifact"


def _run_cli(d: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Convert ``d``; check the outcome contract (see module docstring)."""
    capsys.readouterr()
    rc = main(["convert", str(d), "--out", str(out / "t")])
    err = capsys.readouterr().err
    produced = sorted(q.name for q in out.iterdir()) if out.exists() else []
    if rc == 0:
        assert produced == ["t.csv", "t.parquet"]
        return
    assert rc == 2
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert str(d) in err or "meta.json" in err or "node" in err, err
    assert produced == [], produced


def test_seeds_convert(
    seeds: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i, d in enumerate(seeds):
        assert main(["convert", str(d), "--out", str(tmp_path / str(i) / "t")]) == 0
    capsys.readouterr()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
TOP_KEYS = ["sample", "nodes", "trace_clock_offset_ns", "page_bytes", "swap_bytes", "disk_bytes"]
NODE_KEYS = ["node", "ip", "paging", "disk_blktrace", "swap_blktrace", "trace_clock_offset_ns"]


@CLI_SETTINGS
@given(
    where=st.one_of(
        st.tuples(st.just(-1), st.sampled_from(TOP_KEYS)),
        st.tuples(st.integers(0, 2), st.sampled_from(NODE_KEYS)),
    ),
    value=JSON,
    delete=st.booleans(),
)
def test_meta_json_fields(
    seeds: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    where: tuple[int, str],
    value: object,
    delete: bool,
) -> None:
    d = tmp_path / "case"
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(seeds[0], d)
    meta = json.loads((d / "meta.json").read_text())
    obj = meta if where[0] < 0 else meta["nodes"][where[0]]
    if delete:
        obj.pop(where[1], None)
    else:
        obj[where[1]] = value
    (d / "meta.json").write_text(json.dumps(meta))
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    _run_cli(d, out, capsys)


@CLI_SETTINGS
@given(pick=st.integers(0, 10**6), layout=st.sampled_from([0, 1]), data=st.data())
def test_one_mutated_file(
    seeds: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pick: int,
    layout: int,
    data: st.DataObject,
) -> None:
    d = tmp_path / "case"
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(seeds[layout], d)
    files = sorted(q for q in d.iterdir() if q.is_file())
    victim = files[pick % len(files)]
    victim.write_bytes(data.draw(mutated(victim.read_bytes()[:4096])))
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    _run_cli(d, out, capsys)


@pytest.mark.parametrize("case", sorted((CORPUS / "metajson").glob("*.json")), ids=lambda p: p.stem)
def test_metajson_corpus(
    seeds: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Path
) -> None:
    """Each corpus file is a JSON patch {"top": {...}, "nodes": {"<i>": {...}}} applied to
    the seed's meta.json; each once gave a wrong table or a traceback, now exit code 2."""
    d = tmp_path / "case"
    shutil.copytree(seeds[0], d)
    meta = json.loads((d / "meta.json").read_text())
    patch = json.loads(case.read_text())
    meta.update(patch.get("top", {}))
    for i, fields in patch.get("nodes", {}).items():
        meta["nodes"][int(i)].update(fields)
    (d / "meta.json").write_text(json.dumps(meta))
    capsys.readouterr()
    assert main(["convert", str(d), "--out", str(tmp_path / "out" / "t")]) == 2
    err = capsys.readouterr().err
    assert "meta.json: field '" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
