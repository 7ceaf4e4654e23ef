"""rmem paging traces: both text forms, meta files, errors, round trip (hand-made cases)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from disaggsim.errors import InputError
from disaggsim.traces.errors import TraceFormatError
from disaggsim.traces.paging import read_rmem, read_rmem_meta, read_rmem_meta_ns, write_rmem

START_US = 1_795_300_000_000_000


def test_batch_form_relative_with_meta(tmp_path: Path) -> None:
    trace = tmp_path / "n0.rmem"
    trace.write_text("0 1000 -100 2\n0 1000 -102 1\n\n1 5000 +7 4\n2 6000 -0 1\n")
    (tmp_path / "n0.rmem.meta").write_text(f"{START_US}\n")
    df = read_rmem(trace)
    assert df["op"].tolist() == ["R", "R", "W", "R"]
    assert df["page"].tolist() == [100, 102, 7, 0]
    assert df["npages"].tolist() == [2, 1, 4, 1]
    assert df["size_bytes"].tolist() == [8192, 4096, 16384, 4096]
    assert df["batch_id"].tolist() == [0, 0, 1, 2]
    assert df["realtime_ns"].tolist() == [(START_US + t) * 1000 for t in (1000, 1000, 5000, 6000)]
    assert df["source_record"].tolist() == [1, 2, 4, 5]  # blank line 3 skipped


def test_older_indexed_form_absolute(tmp_path: Path) -> None:
    df = read_rmem(
        _write(tmp_path, "5 -1795300000001000 100 2 4096\n6 1795300000002000 7 1 4096\n")
    )
    assert df["op"].tolist() == ["R", "W"]
    assert df["time_us"].tolist() == [1795300000001000, 1795300000002000]
    assert df["realtime_ns"].tolist() == [1795300000001000000, 1795300000002000000]
    assert df["batch_id"].tolist() == [5, 6]


def _write(d: Path, text: str, name: str = "t.rmem") -> Path:
    (d / name).write_text(text)
    return d / name


def test_meta_formats(tmp_path: Path) -> None:
    (tmp_path / "a").write_text(f"{START_US}\n")
    (tmp_path / "b").write_text(f'{{"start_time_us": {START_US + 1}}}\n')
    (tmp_path / "c").write_text("12 34\n")
    (tmp_path / "d").write_text('{"start": 1}')
    assert read_rmem_meta(tmp_path / "a") == START_US
    assert read_rmem_meta(tmp_path / "b") == START_US + 1
    with pytest.raises(TraceFormatError, match=r"c:1: field 'start_time_us'"):
        read_rmem_meta(tmp_path / "c")
    with pytest.raises(TraceFormatError, match=r"d:1: field 'start_time_us'"):
        read_rmem_meta(tmp_path / "d")


def test_meta_date_form_of_the_artifact(tmp_path: Path) -> None:
    # The artifact's rmem/ec2_get_log.sh: echo "$(date +%y%m%d%H%M%S.%N)" > .metadata.
    # Oracle: `date -u -d '2015-05-20 22:08:25' +%s` = 1432159705 and
    # `TZ=America/Los_Angeles date -d '2015-05-20 22:08:25' +%s` = 1432184905 (PDT, UTC-7).
    meta = tmp_path / "0-meta-host"
    meta.write_text("150520220825.125099223\n")
    assert read_rmem_meta_ns(meta) == 1432159705_125099223
    assert read_rmem_meta(meta) == 1432159705_125099
    assert read_rmem_meta_ns(meta, tz="America/Los_Angeles") == 1432184905_125099223
    meta.write_text("150520220825.5\n")  # fewer digits: a fraction, not ns
    assert read_rmem_meta_ns(meta) == 1432159705_500000000
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        read_rmem_meta_ns(meta, tz="Mars/Olympus")
    meta.write_text("151320220825.125099223\n")  # month 13
    with pytest.raises(TraceFormatError, match=r"0-meta-host:1: field 'start_time'"):
        read_rmem_meta_ns(meta)


def test_meta_implausible_values_are_rejected(tmp_path: Path) -> None:
    meta = tmp_path / "n.meta"
    meta.write_text("1795308431978523098\n")  # ns written where µs are expected
    with pytest.raises(TraceFormatError, match=r"n.meta:1: .*looks like ns"):
        read_rmem_meta(meta)
    meta.write_text("123\n")
    with pytest.raises(TraceFormatError, match=r"n.meta:1: .*between 2001-09-09 and 2100"):
        read_rmem_meta(meta)
    meta.unlink()
    meta.mkdir()
    with pytest.raises(InputError, match=r"n.meta: expected a meta file .*got 'a directory'"):
        read_rmem_meta(meta)


def test_relative_without_meta(tmp_path: Path) -> None:
    p = _write(tmp_path, "0 10 5 1\n")
    assert read_rmem(p)["realtime_ns"].tolist() == [-1]
    assert read_rmem(p, meta=1000)["realtime_ns"].tolist() == [1_010_000]
    with pytest.raises(ValueError, match="need a start time"):
        read_rmem(p, time_base="relative")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("0 1000 -100\n", r":1: expected 4 fields"),
        ("0 1000 x 2\n", r":1: field 'start_page': expected a signed integer"),
        ("0 1000 5 0\n", r":1: field 'npages': expected a positive integer, got '0'"),
        ("0 -1000 5 1\n", r":1: field 'timestamp_us'"),
        ("0 1000 5 1\n1 -1000 5 1 4096\n", r":2: expected the batch form"),
        ("1 1000 5 1 8192\n", r":1: field 'page_size': expected the page size 4096"),
        ("1 1000 -5 1 4096\n", r":1: field 'page'"),
        ("a 1000 5 1\n", r":1: field 'batch_id'"),
    ],
)
def test_malformed_lines(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(TraceFormatError, match=match):
        read_rmem(_write(tmp_path, text))


def test_round_trip_both_forms(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "batch_id": [0, 0, 1, 2],
            "time_us": [10, 10, 20, 35],
            "op": ["R", "W", "R", "W"],
            "page": [0, 5, 9, 0],
            "npages": [3, 1, 2, 8],
        }
    )
    write_rmem(df, tmp_path / "x.rmem", start_time_us=START_US)
    assert (tmp_path / "x.rmem").read_text().splitlines()[0] == "0 10 -0 3"
    back = read_rmem(tmp_path / "x.rmem")
    pd.testing.assert_frame_equal(back[list(df.columns)], df, check_dtype=False)
    assert back["realtime_ns"].tolist() == [(START_US + t) * 1000 for t in df["time_us"]]
    write_rmem(df, tmp_path / "y.rmem", form="indexed")
    assert (tmp_path / "y.rmem").read_text().splitlines()[1] == "0 10 5 1 4096"
    back = read_rmem(tmp_path / "y.rmem")
    pd.testing.assert_frame_equal(back[list(df.columns)], df, check_dtype=False)
    with pytest.raises(ValueError, match="op must be"):
        write_rmem(df.assign(op="X"), tmp_path / "z.rmem")
    assert not (tmp_path / "z.rmem").exists()


def test_vectorised_and_line_parsers_agree(tmp_path: Path) -> None:
    # A well-formed file takes the pyarrow path; the same records with doubled spaces
    # (which that path rejects) take the line-by-line path. Both forms, both signs.
    for text in ("0 10 -0 3\n0 10 +5 1\n7 99 12 2\n", "3 -10 0 3 4096\n4 11 5 1 4096\n"):
        (tmp_path / "a.rmem").write_text(text)
        (tmp_path / "b.rmem").write_text(text.replace(" ", "  "))
        fast, slow = read_rmem(tmp_path / "a.rmem", meta=0), read_rmem(tmp_path / "b.rmem", meta=0)
        assert fast.equals(slow), (fast, slow)
    assert fast["op"].tolist() == ["R", "W"]
