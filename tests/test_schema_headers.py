"""The CSV headers the ns-3 driver reads and writes (sim/flow-csv.cc) are the schemas of
disaggsim/schemas.py: the C++ states them as string constants, checked here column by
column, so a column added on one side only fails this test before any run does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ns3_program import BINARY, needs_ns3

from disaggsim.schemas import FCT_RECORDS, NS3_FLOWS

FLOW_CSV = Path(__file__).resolve().parents[1] / "sim" / "flow-csv.cc"


def cxx_string_constant(source: str, name: str) -> str:
    """The value of ``const char* const <name> = "..." "...";`` (adjacent literals joined)."""
    match = re.search(rf"\b{name}\s*=\s*((?:\"[^\"]*\"\s*)+);", source)
    if match is None:
        raise AssertionError(f"{FLOW_CSV}: no string constant {name}")
    return "".join(re.findall(r'"([^"]*)"', match.group(1)))


@pytest.mark.parametrize(
    ("constant", "schema_names"),
    [("kSimFlowsHeader", NS3_FLOWS.names), ("kFctRecordsHeader", FCT_RECORDS.names)],
)
def test_cxx_csv_header_is_the_schema(constant: str, schema_names: list[str]) -> None:
    header = cxx_string_constant(FLOW_CSV.read_text(), constant)
    assert header.split(",") == schema_names


def test_the_parser_joins_adjacent_literals() -> None:
    source = 'const char* const kX = "a,b,"\n    "c";'
    assert cxx_string_constant(source, "kX") == "a,b,c"


def test_every_run_key_list_is_the_campaign_keys() -> None:
    """The run keys are stated once (CAMPAIGN_KEYS); the analysis orders them for display."""
    from disaggsim.analysis.export import SELECTORS
    from disaggsim.analysis.fig7 import RUN_KEYS
    from disaggsim.analysis.stats import GROUP_KEYS
    from disaggsim.schemas import CAMPAIGN_KEYS

    assert SELECTORS == CAMPAIGN_KEYS
    assert sorted(RUN_KEYS) == sorted(CAMPAIGN_KEYS)
    assert sorted(GROUP_KEYS) == sorted(set(CAMPAIGN_KEYS) - {"seed"})


@needs_ns3
def test_config_topology_defaults_are_the_drivers() -> None:
    """Each ``[topology]`` default equals the default the driver prints for its flag
    (``disaggsim-ns3 --PrintHelp``, ``[value]``, from the ns-3 attribute): the config
    restates no value the C++ does not hold. ``mss_bytes`` is left out: the driver's 0
    means "the transport's own MSS" (1460 for every transport), the config passes it."""
    import subprocess

    from disaggsim.sim.config import TopologySection
    from disaggsim.sim.runner import DRIVER_TOPOLOGY_FLAGS

    assert BINARY is not None
    help_text = subprocess.run(
        [str(BINARY), "--PrintHelp"], capture_output=True, text=True, timeout=60, check=False
    ).stdout
    driver = dict(re.findall(r"^\s+--(\w+):.*\[([^\]]*)\]\s*$", help_text, re.MULTILINE))
    fields = TopologySection.model_fields
    checked = 0
    for key, flag in DRIVER_TOPOLOGY_FLAGS.items():
        if key not in fields or key == "mss_bytes":
            continue
        assert float(driver[flag]) == float(fields[key].default), (key, flag, driver[flag])
        checked += 1
    assert checked == 9
