"""Fuzzing the rmem paging readers (both text forms, both parsers) and the rmem meta.

- Differential: the vectorised pyarrow parser (``paging._fast_parse``) accepts exactly
  what the line parser (``paging._parse_lines``) accepts, with the same values; it may
  decline (None), never disagree.
- Mutations of real seed files (traces/samples/dask-sort, the artifact's indexed form and
  its ``date`` meta): each ends in a table within the documented limits or a
  TraceFormatError naming the file and the line.
- The corpus under tests/fixtures/fuzz/paging and fuzz/meta (cases found by fuzzing)
  replays as regular tests.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from _fuzz_traces import CORPUS, FUZZ_SETTINGS, assert_names_location, mutated
from hypothesis import given
from hypothesis import strategies as st

from disaggsim.traces.errors import TraceFormatError
from disaggsim.traces.paging import (
    MAX_EPOCH_US,
    MAX_PAGE,
    _fast_parse,
    _parse_lines,
    read_rmem,
    read_rmem_meta_ns,
)

SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "samples" / "dask-sort"
BATCH_SEED = "".join(SAMPLE.joinpath("node1.rmem").read_text().splitlines(True)[:40]).encode()
INDEXED_SEED = b"".join(
    f"{i} {'-' if op == 'R' else ''}{1432159608224491 + 37 * i} {p} 1 4096\n".encode()
    for i, (op, p) in enumerate([("R", 0), ("R", 1400096), ("W", 233235), ("W", 233237)] * 5)
)
META_SEEDS = [
    b"150520220825.125099223\n",
    b"1432159705125099\n",
    b'{"start_time_us": 1432159705125099}',
]

TOKENS = st.one_of(
    st.integers(-(2**40), 2**40).map(str),
    st.integers(0, 2**70).map(str),
    st.sampled_from(
        [
            "+5",
            "-0",
            "+-5",
            "-+5",
            "0x10",
            "1e3",
            "5.0",
            "",
            "+",
            "-",
            "00",
            "٣",
            "²",
            "4096",
            "1432159608224491",
            "-1432159608224491",
            "2147483648",
            "nan",
            '"7"',
            "9" * 19,
        ]
    ),
)


@st.composite
def rmem_text(draw: st.DrawFn) -> str:
    nfields = draw(st.sampled_from([4, 5]))
    lines = draw(
        st.lists(st.lists(TOKENS, min_size=nfields, max_size=nfields), min_size=1, max_size=6)
    )
    sep = draw(st.sampled_from([" ", " ", " ", "  "]))
    return "".join(sep.join(f) + "\n" for f in lines)


def _line_parse(p: Path) -> pd.DataFrame | None:
    try:
        _, rows = _parse_lines(p, 4096)
    except TraceFormatError:
        return None
    df = pd.DataFrame(
        rows, columns=["batch_id", "time_us", "op", "page", "npages", "source_record"]
    )
    for c in ("batch_id", "time_us", "page", "npages", "source_record"):
        df[c] = df[c].astype("int64")
    df["op"] = df["op"].astype(object)
    return df


@FUZZ_SETTINGS
@given(text=rmem_text())
def test_fast_and_line_parsers_agree(tmp_path: Path, text: str) -> None:
    p = tmp_path / "d.rmem"
    p.write_text(text)
    fast = _fast_parse(p, 4096)
    slow = _line_parse(p)
    if fast is not None:
        assert slow is not None, f"fast parser accepted what the line parser rejects: {text!r}"
        pd.testing.assert_frame_equal(fast.reset_index(drop=True), slow, check_dtype=False)


def _check_table(df: pd.DataFrame) -> None:
    assert (df["npages"] > 0).all() and (df["npages"] <= MAX_PAGE).all()
    assert (df["page"] >= 0).all() and (df["page"] <= MAX_PAGE).all()
    assert (df["time_us"] >= 0).all() and (df["time_us"] < MAX_EPOCH_US).all()
    assert ((df["realtime_ns"] == -1) | (df["realtime_ns"] >= 0)).all()


@FUZZ_SETTINGS
@given(data=st.one_of(mutated(BATCH_SEED), mutated(INDEXED_SEED)))
def test_mutated_traces(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "m.rmem"
    p.write_bytes(data)
    try:
        df = read_rmem(p, meta=1_795_300_000_000_000)
    except TraceFormatError as exc:
        assert_names_location(exc, p, r":\d+: ")
        return
    _check_table(df)


@FUZZ_SETTINGS
@given(data=st.one_of(*(mutated(s) for s in META_SEEDS)))
def test_mutated_meta(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "m.meta"
    p.write_bytes(data)
    try:
        ns = read_rmem_meta_ns(p)
    except TraceFormatError as exc:
        assert_names_location(exc, p)
        return
    assert 10**18 <= ns < MAX_EPOCH_US * 1000


def _corpus(kind: str) -> list[Path]:
    return sorted((CORPUS / kind).iterdir())


@pytest.mark.parametrize("path", _corpus("paging"), ids=lambda p: p.name)
def test_paging_corpus(path: Path) -> None:
    """Each case once made a reader crash, overflow or disagree; now a named error."""
    with pytest.raises(TraceFormatError) as info:
        read_rmem(path, meta=1_795_300_000_000_000)
    assert_names_location(info.value, path, r":\d+: ")
    if _line_parse(path) is None:  # the parsers agree
        assert _fast_parse(path, 4096) is None


@pytest.mark.parametrize("path", _corpus("meta"), ids=lambda p: p.name)
def test_meta_corpus(path: Path) -> None:
    with pytest.raises(TraceFormatError) as info:
        read_rmem_meta_ns(path)
    assert_names_location(info.value, path)
