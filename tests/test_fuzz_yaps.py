"""Fuzzing the YAPS flow-file reader (traces/yaps.py) and a campaign's YAPS workload.

Files made from a valid YAPS file (the disaggregation artifact's format) by truncation,
bit flips, token swaps (numbers out of range, negative, fractional, non-ASCII digits),
duplicated and reordered lines must each end in NS3_FLOWS that ns-3 accepts (unique ids,
src != dst, start >= 0, size > 0) or a TraceFormatError naming the file and a line that
exists. Through ``disaggsim run``, a malformed YAPS file is rejected before any simulation,
in one line naming the YAPS file and line, with no traceback and no output tables.

Hypothesis runs derandomized with a bounded number of examples; inputs that once broke the
reader are kept in tests/fixtures/fuzz/yaps/ and replayed as plain tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from _fuzz_traces import FUZZ_SETTINGS
from hypothesis import given, settings
from hypothesis import strategies as st

from disaggsim.cli import main
from disaggsim.schemas import NS3_FLOWS
from disaggsim.traces.errors import TraceFormatError
from disaggsim.traces.yaps import read_yaps, write_yaps

CORPUS = Path(__file__).parent / "fixtures" / "fuzz" / "yaps"
FUZZ = settings(FUZZ_SETTINGS, max_examples=800)
VALID = pd.DataFrame(
    {
        "flow_id": [0, 1, 2, 3, 4],
        "start_ns": [0, 1_500, 20_000, 20_000, 2_000_000_001],
        "src_host": [3, 6, 0, 7, 1],
        "dst_host": [7, 2, 5, 0, 6],
        "size_bytes": [4096, 1460, 1, 100_000, 64],
    }
)
TOKENS = [
    "0",
    "1",
    "-1",
    "1.5",
    "4294967295",
    "4294967296",
    "1e3",
    "nan",
    "inf",
    "",
    "\u0663",
    "\u00b2",
    "0x10",
    "+2",
    "1.0000000005",
    "0.5",
    "99999999999999999999",
]


@st.composite
def yaps_files(draw: st.DrawFn, valid_text: str) -> bytes:
    lines = valid_text.splitlines(keepends=True)
    kind = draw(st.sampled_from(["truncate", "flip", "token", "dup", "shuffle", "fields"]))
    if kind == "truncate":
        data = valid_text.encode()
        return data[: draw(st.integers(0, len(data)))]
    if kind == "flip":
        data = bytearray(valid_text.encode())
        for _ in range(draw(st.integers(1, 4))):
            pos = draw(st.integers(0, len(data) - 1))
            data[pos] ^= 1 << draw(st.integers(0, 7))
        return bytes(data)
    if kind == "token":
        i = draw(st.integers(0, len(lines) - 1))
        fields = lines[i].split()
        fields[draw(st.integers(0, 8))] = draw(st.sampled_from(TOKENS))
        lines[i] = " ".join(fields) + "\n"
    elif kind == "dup":
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines)))
        lines.insert(j, lines[i])
    elif kind == "shuffle":
        lines = draw(st.permutations(lines))
    else:
        i = draw(st.integers(0, len(lines) - 1))
        fields = lines[i].split()
        n = draw(st.integers(0, 11))
        lines[i] = " ".join((fields * 2)[:n]) + "\n"
    return "".join(lines).encode()


_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): ")


def check_read(path: Path) -> pd.DataFrame | None:
    n_lines = path.read_bytes().count(b"\n") + 1
    try:
        df = read_yaps(path)
    except TraceFormatError as exc:
        m = _LINE.match(str(exc))
        assert m is not None, f"no file:line in {exc}"
        assert m["path"] == str(path) and 1 <= int(m["line"]) <= n_lines, str(exc)
        return None
    assert list(df.columns) == NS3_FLOWS.names
    assert df["flow_id"].is_unique
    assert (df["src_host"] != df["dst_host"]).all()
    assert (df["start_ns"] >= 0).all() and (df["size_bytes"] > 0).all()
    assert (df["size_bytes"] % 1460 == 0).all()
    return df


@FUZZ
@given(st.data())
def test_reader_gives_flows_ns3_accepts_or_names_the_line(
    tmp_path: Path, data: st.DataObject
) -> None:
    valid = tmp_path / "valid.yaps"
    write_yaps(VALID, valid)
    path = tmp_path / "f.yaps"
    path.write_bytes(data.draw(yaps_files(valid.read_text())))
    check_read(path)


def test_valid_file_reads_back() -> None:
    # the oracle of the fuzz test's starting point: sizes in whole 1460 B packets
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v.yaps"
        write_yaps(VALID, path)
        df = check_read(path)
    assert df is not None
    assert df["size_bytes"].tolist() == [3 * 1460, 1460, 1460, 69 * 1460, 1460]


def run_cli(tmp_path: Path, yaps_file: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``disaggsim run`` on a campaign with this YAPS workload: rejected before ns-3 runs."""
    config = tmp_path / "c.toml"
    config.write_text(
        f'[campaign]\nname = "y"\nout_dir = "out"\n\n[[workloads]]\nkind = "yaps"\n'
        f'path = "{yaps_file}"\n\n[topology]\nracks = 2\nhosts_per_rack = 4\nspines = 2\n\n'
        '[grid]\nprotocols = ["tcp"]\nrates_gbps = [40]\n'
    )
    assert main(["run", str(config), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"disaggsim run: error: {yaps_file}:"), err
    out = tmp_path / "out"
    assert not (out / "runs").exists() and not (out / "fct.parquet").exists()
    return err


#: Corpus case -> (line, field) of the expected error (what each did before: README.md).
EXPECTED = {
    "duplicate_id.yaps": (2, "id"),
    "src_equals_dst.yaps": (1, "dst"),
    "start_before_1s.yaps": (2, "start_time"),
    "unicode_digit.yaps": (1, None),
    "start_beyond_int64.yaps": (2, "start_time"),
}


def test_corpus_is_listed() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.yaps")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """Malformed YAPS files that once passed the reader or raised a bare ValueError (ns-3
    then failed mid-campaign naming its generated CSV): each is rejected with the YAPS
    line, also through ``disaggsim run``."""
    case = CORPUS / name
    line, field = EXPECTED[name]
    assert check_read(case) is None
    err = run_cli(tmp_path, case, capsys)
    what = f"field '{field}': " if field else "expected ASCII text"
    assert err.startswith(f"disaggsim run: error: {case}:{line}: {what}"), err
