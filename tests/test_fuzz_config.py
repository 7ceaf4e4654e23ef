"""Fuzzing campaign configs (sim/config.py) and ``disaggsim run``'s validation.

TOML files made from a valid campaign config by truncation, bit flips, deleted, duplicated
or retyped lines, renamed keys and values of the wrong type or range must each end in a
validated :class:`CampaignConfig` whose workloads resolve, or a :class:`ConfigError` whose
every line starts with the config file (and names the line wherever the key is in the file).
Through ``disaggsim run`` a rejected config gives exit 2, one message and no traceback,
and leaves no output directory behind.

Hypothesis runs derandomized with a bounded number of examples; configs that once broke
the loader are kept in tests/fixtures/fuzz/config/ and replayed as plain tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _fuzz_traces import FUZZ_SETTINGS
from hypothesis import given, settings
from hypothesis import strategies as st

from disaggsim.cli import main
from disaggsim.sim.config import CampaignConfig, ConfigError, load_config

SAMPLE = Path(__file__).parent / "fixtures" / "traces" / "sample_lo"
CORPUS = Path(__file__).parent / "fixtures" / "fuzz" / "config"
FUZZ = settings(FUZZ_SETTINGS, max_examples=400)
VALID = f"""\
[campaign]
name = "fuzz"
out_dir = "out"
jobs = 2

[[workloads]]
kind = "trace_sample"
path = "{SAMPLE}"
window_ns = 1000000000
convert = {{ idle_gap_ns = 100000 }}

[[workloads]]
kind = "synthetic"
name = "ws"
cdf = "websearch"
load = 0.5
n_flows = 50

[convert]
attribute_disk = false

[topology]
racks = 2
hosts_per_rack = 4
spines = 2
buffer_bytes = 36864

[grid]
protocols = ["tcp", "dctcp"]
rates_gbps = [40, 100]
scopes = ["datacenter", "rack"]
seeds = [1, 2]

[protocols.dctcp.attributes]
"ns3::TcpSocketBase::MinRto" = "+200us"

[limits]
run_timeout_s = 600
"""
VALUES = [
    '"fast"',
    "-1",
    "0",
    "1.5",
    "1e400",
    "nan",
    "[]",
    "{}",
    "true",
    '"../nope"',
    "99999999999999999999",
    '["tcp", "tcp"]',
    '"Not A Name"',
    '"ns3::X"',
    "[1, -2]",
]
KEYS = [
    "bogus",
    "racks",
    "name",
    "kind",
    "base_dir",
    "source",
    "protocols",
    "seeds",
    '"ns3::TcpSocketBase::NoSuch"',
    "path",
]


@st.composite
def configs(draw: st.DrawFn) -> bytes:
    lines = VALID.splitlines(keepends=True)
    kind = draw(st.sampled_from(["truncate", "flip", "delete", "dup", "value", "key"]))
    if kind == "truncate":
        return VALID.encode()[: draw(st.integers(0, len(VALID)))]
    if kind == "flip":
        data = bytearray(VALID.encode())
        for _ in range(draw(st.integers(1, 3))):
            pos = draw(st.integers(0, len(data) - 1))
            data[pos] ^= 1 << draw(st.integers(0, 7))
        return bytes(data)
    i = draw(st.integers(0, len(lines) - 1))
    if kind == "delete":
        del lines[i]
    elif kind == "dup":
        lines.insert(draw(st.integers(0, len(lines))), lines[i])
    else:
        assigned = [k for k, line in enumerate(lines) if " = " in line]
        k = draw(st.sampled_from(assigned))
        key, _, value = lines[k].partition(" = ")
        if kind == "value":
            value = draw(st.sampled_from(VALUES)) + "\n"
        else:
            key = draw(st.sampled_from(KEYS))
        lines[k] = f"{key} = {value}"
    return "".join(lines).encode()


_FILE_LINE = re.compile(r"^(?P<path>.+?\.toml)(:(?P<line>\d+))?: ")


def check_load(path: Path) -> CampaignConfig | None:
    """The property: a config whose workloads resolve, or a ConfigError naming the file on
    every line (and a line that exists, when it names one)."""
    n_lines = path.read_bytes().count(b"\n") + 1
    try:
        config = load_config(path)
        config.resolved_workloads()
    except ConfigError as exc:
        for line in str(exc).splitlines():
            m = _FILE_LINE.match(line)
            assert m is not None and m["path"] == str(path), f"file not named: {line}"
            assert m["line"] is None or 1 <= int(m["line"]) <= n_lines, line
        return None
    assert config.grid.protocols and config.workloads
    return config


def check_cli(tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith(f"disaggsim run: error: {path}"), err
    assert not (tmp_path / "out").exists()


@FUZZ
@given(data=configs())
def test_config_validates_or_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(data)
    if check_load(path) is None:
        check_cli(tmp_path, path, capsys)


def test_valid_config_loads(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(VALID)
    config = check_load(path)
    assert config is not None
    assert [w.name for w in config.resolved_workloads()] == ["sample_lo", "ws"]
    assert config.attributes_for("dctcp") == {"ns3::TcpSocketBase::MinRto": "+200us"}


@pytest.mark.parametrize("case", sorted(CORPUS.glob("*.toml")), ids=lambda p: p.name)
def test_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Path) -> None:
    """Configs that once gave a traceback or passed validation wrongly (README.md)."""
    path = tmp_path / "c.toml"
    path.write_bytes(case.read_bytes().replace(b"@SAMPLE@", str(SAMPLE).encode()))
    assert check_load(path) is None
    check_cli(tmp_path, path, capsys)
