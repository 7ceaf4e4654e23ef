"""Campaign configuration: one TOML file describes a whole simulation campaign.

A campaign is the cross product ``workload x protocol x rate_gbps x scope x seed`` of ns-3
runs on one topology (Gao et al., OSDI'16 §4.2 "Simulation Setup"). The file format, every
key, its unit, default and source are documented in ``configs/README.md``; this module is
the validating loader.

TOML is the preferred format. YAML is accepted (``.yaml``/``.yml``, read with
``yaml.safe_load``) but YAML 1.1 reads ``1e6`` as the *string* ``"1e6"``; write ``1000000``
or ``1.0e+6`` there.

Every table is validated by pydantic v2 with ``extra="forbid"``: an unknown key or a wrong
type raises :class:`ConfigError` whose message names the file, the (best-effort) line and the
key path, e.g. ``configs/x.toml:14: grid.rates_gbps[1]: Input should be greater than 0``.

Relative paths (``campaign.out_dir``, ``workloads[].path``) are resolved against the
directory of the config file, so a campaign runs the same from any working directory.
"""

from __future__ import annotations

import glob as globmod
import json
import re
import tomllib
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from disaggsim.errors import InputError, display_path
from disaggsim.guards import read_regular

#: Scopes of disaggregation (paper §2.3, §4.2): "rack" keeps every flow's endpoints in one
#: rack, "datacenter" places blades anywhere.
SCOPES = ("datacenter", "rack")

#: ns-3 attribute path, as accepted by ``--ns3::Class::Attribute=value`` on the command line.
_ATTRIBUTE_RE = re.compile(r"^ns3::[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_PROTOCOL_RE = re.compile(r"^[a-z][a-z0-9_-]*$")

AttributeValue = str | bool | int | float
#: Largest fabric the ns-3 program builds: host ids are 16-bit
#: (``ClosTopology``, topologies/model/clos-topology.cc).
MAX_HOSTS = 65535


class ConfigError(ValueError):
    """A campaign config that cannot be read or does not validate (message names file+key)."""


class _Strict(BaseModel):
    """Strict types (issue #21, class 8): no coercion (``true`` is not a number, ``"2"`` not
    an integer; an integer is accepted where a float is expected), no inf or nan."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class CampaignSection(_Strict):
    """``[campaign]``: name, output directory and how runs are executed."""

    name: Annotated[str, Field(pattern=_NAME_RE.pattern)]
    #: Output directory (runs, caches, collected tables); relative to the config file.
    out_dir: Annotated[Path, Field(strict=False)]
    #: Parallel processes of the local executor (each runs one ns-3 process).
    jobs: Annotated[int, Field(ge=1)] = 2
    #: "local": a process pool on this machine. "slurm": run the pending runs as one Slurm
    #: array job (``disaggsim.sim.slurm``; README "Running a campaign on Slurm").
    executor: Literal["local", "slurm"] = "local"
    #: executor "slurm": submit the array with sbatch and wait for it (True), or only write
    #: ``out_dir/slurm/array.sbatch`` for the user to submit (False, e.g. on a remote cluster).
    slurm_submit: bool = True
    #: executor "slurm": the array's task count is at most this (and at most the cluster's
    #: MaxArraySize); the pending runs are spread evenly over the tasks, so a task executes
    #: ceil(runs / tasks) runs one after the other and per-task scheduler overhead stays small.
    slurm_tasks: Annotated[int, Field(ge=1)] = 100
    #: executor "slurm": extra sbatch options, e.g. ["--partition=short", "--account=net"];
    #: on the sbatch command line they override the script's #SBATCH lines.
    slurm_sbatch_args: list[str] = Field(default_factory=list)

    @field_validator("slurm_sbatch_args")
    @classmethod
    def _sbatch_options(cls, value: list[str]) -> list[str]:
        for arg in value:
            if not arg.startswith("-") or arg.split("=")[0] in ("--array", "-a", "--parsable"):
                raise ValueError(
                    f"{arg!r}: expected an sbatch option such as '--partition=short' "
                    "(not --array or --parsable, which the runner sets)"
                )
        return value


class _WorkloadBase(_Strict):
    #: Workload name used in CAMPAIGN_KEYS ("workload" column); default: the path's stem.
    name: Annotated[str | None, Field(pattern=_NAME_RE.pattern)] = None
    #: Keep only flows with start_ns < window_ns (after conversion). None: keep all.
    window_ns: Annotated[int | None, Field(gt=0)] = None
    #: Keep only the first max_flows flows in flow_id order (after window_ns). None: all.
    max_flows: Annotated[int | None, Field(gt=0)] = None


class _Replicable(_WorkloadBase):
    #: Copies of the traced cluster that load the fabric (``disaggsim.sim.replication``;
    #: the OSDI'16 artifact's generator, NetSys/simulator run/flow_generator.cpp). At rack
    #: scope each copy takes one rack, at datacenter scope its blades go anywhere. 1: the
    #: trace alone.
    copies: Annotated[int, Field(ge=1)] = 1
    #: How a copy's flows are made: "replay" (the trace, shifted by a random offset per copy
    #: and wrapped around) or "pair-cdf" (drawn from per-blade-pair size and inter-arrival
    #: CDFs built from the trace, akshayknarayan/disaggregation-flowgen
    #: processForSimulation.py). The run's seed seeds both.
    replication: Literal["replay", "pair-cdf"] = "replay"
    #: Merge the flows of one blade pair and kind that start at the same ns into one flow
    #: (``disaggsim.sim.replication.squash_coarrivals``): the artifact sends a paging
    #: batch as one flow per blade pair (flowgen-spark/ProcessTrace.scala).
    squash: bool = False


class TraceSampleWorkload(_Replicable):
    """A trace sample directory (``traces/samples/<name>/`` with ``meta.json``), converted
    to a flow table by ``disaggsim.traces.convert.convert``. ``path`` may be a glob
    (``../traces/samples/*``): it expands to every matching directory holding ``meta.json``,
    one workload each, named after the directory (``name`` must then be unset)."""

    kind: Literal["trace_sample"]
    path: str
    #: Converter options for this workload, merged over the top-level ``[convert]`` table.
    convert: dict[str, Any] = Field(default_factory=dict)


class FlowTableWorkload(_Replicable):
    """A flow table already converted (``disaggsim convert`` output): ``.parquet`` or ``.csv``
    with the columns of ``disaggsim.schemas.FLOW_TABLE``."""

    kind: Literal["flow_table"]
    path: str


class YapsWorkload(_WorkloadBase):
    """A YAPS flow file, imported by ``disaggsim.traces.yaps``."""

    kind: Literal["yaps"]
    path: str


class RcmpWorkload(_WorkloadBase):
    """Rcmp's inter-rack traffic (papers/003; ``disaggsim.sim.rcmp``): ``path`` is an
    experiment file with one ``[rcmp]`` table, the input of ``disaggsim rcmp-gen`` (keys:
    ``RcmpParams``' fields), and the flows are that generator's table (RRPC messages,
    one-sided transfers, 2 MiB migrations, and ``cxl`` rows with ``cxl_rows = true``)
    between the racks' daemon hosts. The hosts are fixed by the experiment, so the
    workload runs with scope "datacenter" only, on a topology with the experiment's
    ``racks`` and ``hosts_per_rack`` (``clients_per_rack + 1``); ``cxl`` rows need
    ``ns3::CxlRackTier::Enabled = true`` in the run's attributes."""

    kind: Literal["rcmp"]
    path: str


class SyntheticWorkload(_Strict):
    """A standard synthetic datacenter workload generated per run by
    ``disaggsim.traces.workloads.generate``: Poisson arrivals at an offered ``load``,
    flow sizes from an empirical CDF (pFabric SIGCOMM'13 §5.1; pHost CoNEXT'15 §4; the
    "prior work" setup of OSDI'16 §4.2). Hosts are drawn directly (no blade placement): the
    run's rate_gbps sets the arrival rate, its scope confines destinations to the source's
    rack, its seed seeds the generator. Every flow has kind "net"."""

    kind: Literal["synthetic"]
    name: Annotated[str, Field(pattern=_NAME_RE.pattern)]
    #: Shipped CDF name ("websearch", "hpcc-fbhadoop", ...) or a CDF file in YAPS's or
    #: HPCC's format (a path relative to the config file).
    cdf: str
    #: Offered load: fraction of access-link capacity summed over all hosts, in (0, 1].
    load: Annotated[float, Field(gt=0, le=1)]
    n_flows: Annotated[int, Field(ge=1)]
    matrix: Literal["all_to_all", "permutation"] = "all_to_all"
    #: Header bytes per 1460 B packet counted in the load (40 matches YAPS).
    header_bytes: Annotated[int, Field(ge=0)] = 0


Workload = Annotated[
    TraceSampleWorkload | FlowTableWorkload | YapsWorkload | RcmpWorkload | SyntheticWorkload,
    Field(discriminator="kind"),
]
WORKLOAD_KINDS = ("trace_sample", "flow_table", "yaps", "rcmp", "synthetic")


class TopologySection(_Strict):
    """``[topology]``: the Clos fabric of paper §4.2 with Table 4's delays.

    Defaults: 9 racks, 36 KB per-port buffers, full bisection (paper §4.2, after pFabric
    [27] whose fabric has 9 racks x 16 hosts and 4 spines, spine links 4x the access rate);
    240 ns switching, 4 m intra-rack and 40 m inter-rack cables at 5 ns/m (Table 4, §3.3).
    """

    racks: Annotated[int, Field(ge=1)] = 9
    hosts_per_rack: Annotated[int, Field(ge=1)] = 16
    spines: Annotated[int, Field(ge=1)] = 4
    buffer_bytes: Annotated[int, Field(gt=0)] = 36864
    switch_delay_ns: Annotated[int, Field(ge=0)] = 240
    #: An integer, as ns3::ClosTopology::SpineRateFactor (a UintegerValue) takes it.
    spine_rate_factor: Annotated[int, Field(ge=1)] = 4
    intra_rack_cable_m: Annotated[float, Field(ge=0)] = 4.0
    inter_rack_cable_m: Annotated[float, Field(ge=0)] = 40.0
    prop_ns_per_m: Annotated[float, Field(ge=0)] = 5.0
    mss_bytes: Annotated[int, Field(gt=0, le=9000)] = 1460
    #: Link-delay preset (``disaggsim.sim.delays``): "table4" (the keys above) or
    #: "authors-sim" (the authors' simulator's DDC delays: 110 ns host links, 400 ns spine
    #: links, no switching delay; the switching and cable keys are then ignored).
    delays: Literal["table4", "authors-sim"] = "table4"
    #: Loss model (``ns3::ClosTopology::Fabric``): "lossy" (per-port drop-tail buffers of
    #: ``buffer_bytes``) or "lossless" (each switch a shared buffer of ``buffer_bytes`` x its
    #: ports plus PFC headroom, with PFC and RED-ECN; tune it with ``[attributes]``
    #: ``ns3::SwitchMmu::*``;
    #: topologies/doc/lossless.md).
    fabric: Literal["lossy", "lossless"] = "lossy"

    @model_validator(mode="after")
    def _host_ids_fit(self) -> TopologySection:
        if self.racks * self.hosts_per_rack > MAX_HOSTS:
            raise ValueError(
                f"racks x hosts_per_rack = {self.racks * self.hosts_per_rack} hosts: expected "
                f"at most {MAX_HOSTS} (16-bit host ids, topologies/model/clos-topology.cc)"
            )
        return self


class GridSection(_Strict):
    """``[grid]``: the axes of the campaign; every combination is one ns-3 run."""

    protocols: Annotated[list[str], Field(min_length=1)]
    rates_gbps: Annotated[list[Annotated[float, Field(gt=0)]], Field(min_length=1)] = [
        40.0,
        100.0,
    ]
    scopes: Annotated[list[Literal["datacenter", "rack"]], Field(min_length=1)] = [
        "datacenter",
        "rack",
    ]
    #: ns-3 RNG seeds (and ECMP hash salts). At least 1: ns-3's RngSeedManager::SetSeed
    #: aborts the program on seed 0 ("invalid Seed 0").
    seeds: Annotated[list[Annotated[int, Field(ge=1, lt=2**32)]], Field(min_length=1)] = [1]

    @field_validator("protocols")
    @classmethod
    def _protocol_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _PROTOCOL_RE.match(name):
                raise ValueError(
                    f"protocol {name!r}: expected a lower-case name such as 'tcp', 'dctcp', "
                    "'pfabric', 'phost', 'fastpass'"
                )
        return value

    @model_validator(mode="after")
    def _no_duplicates(self) -> GridSection:
        for key in ("protocols", "rates_gbps", "scopes", "seeds"):
            values = getattr(self, key)
            if len(set(values)) != len(values):
                raise ValueError(f"{key}: duplicate values in {values}")
        return self


def _check_attributes(value: dict[str, AttributeValue]) -> dict[str, AttributeValue]:
    for path in value:
        if not _ATTRIBUTE_RE.match(path):
            raise ValueError(
                f"attribute {path!r}: expected an ns-3 attribute path 'ns3::Class::Attribute'"
            )
    return value


class ProtocolSection(_Strict):
    """``[protocols.<name>]``: ns-3 attribute overrides for one protocol's runs."""

    #: ``"ns3::Class::Attribute" = value``; passed as ``--ns3::Class::Attribute=value``.
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)

    _attrs = field_validator("attributes")(_check_attributes)


class LimitsSection(_Strict):
    """``[limits]``: simulated-time cap and wall-clock timeout of each run."""

    #: Simulated time at which ns-3 stops (flows not done by then are "unfinished").
    #: None: the ns-3 program's default, the last flow's start + its ``--drainNs`` (1 s).
    stop_time_ns: Annotated[int | None, Field(gt=0)] = None
    #: Wall-clock limit of one ns-3 process; the run fails when it is exceeded.
    run_timeout_s: Annotated[float, Field(gt=0)] = 3600.0


class CampaignConfig(_Strict):
    """A validated campaign config (see ``configs/README.md`` for every key)."""

    campaign: CampaignSection
    workloads: Annotated[list[Workload], Field(min_length=1)]
    convert: dict[str, Any] = Field(default_factory=dict)
    topology: TopologySection = TopologySection()
    grid: GridSection
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)
    protocols: dict[str, ProtocolSection] = Field(default_factory=dict)
    limits: LimitsSection = LimitsSection()
    #: Directory of the config file; relative paths are resolved against it (not a key).
    base_dir: Annotated[Path, Field(strict=False)] = Field(default=Path("."), exclude=True)
    #: The config file (set by :func:`load_config`; not a key): errors name its lines.
    source: Path | None = Field(default=None, exclude=True)

    _attrs = field_validator("attributes")(_check_attributes)

    @property
    def out_dir(self) -> Path:
        """``campaign.out_dir`` resolved against the config file's directory."""
        return (self.base_dir / self.campaign.out_dir).resolve()

    def attributes_for(self, protocol: str) -> dict[str, str]:
        """ns-3 attribute overrides of ``protocol``'s runs: ``[attributes]`` updated by
        ``[protocols.<protocol>.attributes]``, values rendered as ns-3 strings, sorted."""
        merged: dict[str, AttributeValue] = dict(self.attributes)
        if protocol in self.protocols:
            merged.update(self.protocols[protocol].attributes)
        return {k: attribute_string(merged[k]) for k in sorted(merged)}

    def resolved_workloads(self) -> list[ResolvedWorkload]:
        """Workloads with globs expanded, paths made absolute and names assigned.

        Raises:
            ConfigError: a path or glob matches nothing, or two workloads share a name
                (prefixed with ``<file>:<line>: `` when the config was loaded from a file).
        """
        try:
            return self._resolved_workloads()
        except ConfigError as exc:
            if self.source is None:
                raise
            key = re.match(r"^workloads(\[(\d+)\]\.(\w+))?", str(exc))
            loc: tuple[int | str, ...] = ("workloads",)
            if key is not None and key[1]:
                loc = ("workloads", int(key[2]), key[3])
            raise ConfigError(f"{config_location(self.source, loc)}: {exc}") from None

    def _resolved_workloads(self) -> list[ResolvedWorkload]:
        out: list[ResolvedWorkload] = []
        for index, workload in enumerate(self.workloads):
            key = f"workloads[{index}]"
            if isinstance(workload, SyntheticWorkload):
                cdf = workload.cdf
                is_file = "/" in cdf or cdf.endswith(".txt")
                cdf_path = (self.base_dir / cdf).resolve() if is_file else None
                if cdf_path is not None and not (cdf_path.exists() or cdf_path.is_symlink()):
                    raise ConfigError(f"{key}.cdf: {cdf_path} does not exist")
                out.append(ResolvedWorkload(workload.name, cdf_path, workload, {}))
                continue
            raw = self.base_dir / workload.path
            if isinstance(workload, TraceSampleWorkload) and globmod.has_magic(workload.path):
                if workload.name is not None:
                    raise ConfigError(f"{key}.name: must be unset when path is a glob")
                matches = sorted(
                    Path(p).resolve()
                    for p in globmod.glob(str(raw))
                    if (Path(p) / "meta.json").is_file()
                )
                if not matches:
                    raise ConfigError(
                        f"{key}.path: glob {workload.path!r} matches no directory with "
                        f"meta.json (looked in {raw.parent.resolve()})"
                    )
                for match in matches:
                    out.append(ResolvedWorkload(match.name, match, workload, self.convert))
                continue
            path = raw.resolve()
            if not path.exists():
                raise ConfigError(f"{key}.path: {path} does not exist")
            if isinstance(workload, TraceSampleWorkload) and not (path / "meta.json").is_file():
                raise ConfigError(f"{key}.path: {path} is not a trace sample (no meta.json)")
            name = workload.name or (path.name if path.is_dir() else path.stem)
            out.append(ResolvedWorkload(name, path, workload, self.convert))
        names = [w.name for w in out]
        for name in names:
            if names.count(name) > 1:
                raise ConfigError(
                    f"workloads: two workloads are named {name!r}; set distinct 'name' keys"
                )
        return out


class ResolvedWorkload:
    """One concrete workload: a unique ``name``, an absolute ``path`` (for ``synthetic``:
    the CDF file, or None for a shipped CDF name) and its spec."""

    def __init__(
        self,
        name: str,
        path: Path | None,
        spec: (
            TraceSampleWorkload
            | FlowTableWorkload
            | YapsWorkload
            | RcmpWorkload
            | SyntheticWorkload
        ),
        convert_defaults: dict[str, Any],
    ) -> None:
        self.name = name
        self.path = path
        self.spec = spec
        self.convert_options: dict[str, Any] = {}
        if isinstance(spec, TraceSampleWorkload):
            self.convert_options = {**convert_defaults, **spec.convert}

    @property
    def kind(self) -> str:
        """The workload kind: one of WORKLOAD_KINDS."""
        return self.spec.kind

    def __repr__(self) -> str:
        return f"ResolvedWorkload({self.name!r}, {str(self.path)!r}, kind={self.kind!r})"


def attribute_string(value: AttributeValue) -> str:
    """Render an attribute value the way ns-3's command line parses it.

    Booleans become ``true``/``false`` (ns-3 ``BooleanValue``); numbers use ``repr``
    (exact round trip); strings pass unchanged (e.g. ``"+5ms"`` for a ``TimeValue``).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def load_config(path: str | Path) -> CampaignConfig:
    """Read and validate a campaign config (TOML, or YAML by extension).

    Args:
        path: ``.toml`` (preferred), ``.yaml`` or ``.yml`` file.

    Returns:
        The validated :class:`CampaignConfig`, with ``base_dir`` = the file's directory.

    Raises:
        ConfigError: unreadable file, syntax error, unknown key, wrong type or value; the
            message starts with ``<file>[:<line>]: <key path>: ``.
    """
    path = Path(path)
    config, text = load_config_model(path, CampaignConfig, {"source": path})
    problems = _convert_option_problems(path, text, config)
    if problems:
        raise ConfigError("\n".join(problems))
    unknown = sorted(set(config.protocols) - set(config.grid.protocols))
    if unknown:
        line = _find_line(text, ("protocols", unknown[0], "attributes"), yaml=_is_yaml(path))
        raise ConfigError(
            f"{path}{f':{line}' if line else ''}: protocols.{unknown[0]}: not in "
            f"grid.protocols {config.grid.protocols} (remove the section or add the "
            "protocol to the grid)"
        )
    return config


M = TypeVar("M", bound=BaseModel)


def load_config_model(
    path: str | Path, model: type[M], extra: dict[str, Any] | None = None
) -> tuple[M, str]:
    """Read a TOML (or ``.yaml``/``.yml``, or ``.json`` as a run records its config) config
    file and validate it as ``model``.

    The one config-loading path of the project's config files (campaigns here, ``disaggsim
    emulate`` configs in :mod:`disaggsim.swapdev.emulate`). ``base_dir`` (the file's
    resolved directory) and ``extra`` are added to the file's top-level table; the file
    must not set them itself.

    Returns:
        The validated model and the file's text (for later checks that name lines, see
        :func:`config_location`).

    Raises:
        ConfigError: unreadable file, not UTF-8, syntax error, unknown key, wrong type or
            value; every message line starts with ``<file>[:<line>]: <key path>: ``.
    """
    path = Path(path)
    try:
        raw = read_regular(path, "a config file")
    except (OSError, InputError) as exc:
        raise ConfigError(f"{display_path(path)}: cannot read config: {exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path}:{bad_line}: expected UTF-8 text, got byte {raw[exc.start : exc.start + 1]!r} "
            f"at offset {exc.start}"
        ) from None
    data = _parse(path, text)
    added = {"base_dir": path.parent.resolve(), **(extra or {})}
    for key in added:
        if key in data:
            raise ConfigError(f"{path}: {key}: not a config key (set by the loader)")
    try:
        return model.model_validate({**data, **added}), text
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            loc = _clean_loc(error["loc"])
            line = _find_line(text, loc, yaml=_is_yaml(path))
            where = f"{path}:{line}" if line else str(path)
            lines.append(f"{where}: {_format_loc(loc)}: {error['msg']}")
        raise ConfigError("\n".join(lines)) from None


def config_location(path: Path, loc: tuple[int | str, ...]) -> str:
    """``<file>:<line>`` of the key at ``loc`` in a config file (``<file>`` if not found).

    Used by later checks (``disaggsim.sim.campaign.preflight``) to name the line of a key
    whose value the ns-3 program or the workloads reject.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return str(path)
    line = _find_line(text, loc, yaml=_is_yaml(Path(path)))
    return f"{path}:{line}" if line else str(path)


def _convert_option_problems(path: Path, text: str, config: CampaignConfig) -> list[str]:
    """Check ``[convert]`` and each ``workloads[i].convert`` table against the converter's
    options (``disaggsim.traces.convert.ConvertOptions``: unknown keys and wrong types),
    so a bad option fails at load time rather than when its workload is converted."""
    import dataclasses

    # import here: the converters (pcap, blktrace readers) load only for a config that has
    # convert tables; swapdev's emulate reads its configs through this module too.
    from disaggsim.traces.convert import ConvertOptions

    known = {f.name for f in dataclasses.fields(ConvertOptions)}
    hints = typing.get_type_hints(ConvertOptions)
    tables: list[tuple[tuple[int | str, ...], dict[str, Any]]] = [(("convert",), config.convert)]
    tables += [
        (("workloads", i, "convert"), w.convert)
        for i, w in enumerate(config.workloads)
        if isinstance(w, TraceSampleWorkload)
    ]
    problems: list[str] = []
    for prefix, options in tables:
        for key in options:
            if key not in known:
                loc = (*prefix, key)
                problems.append(
                    f"{_where(path, text, loc)}: {_format_loc(loc)}: unknown converter "
                    f"option; expected one of {', '.join(sorted(known))}"
                )
        errors: list[tuple[tuple[int | str, ...], Any]] = []
        # Strict, as every other table (issue #21 class 8): no "5" for 5, no 1 for true, no
        # 1.0 for 1. A nested dataclass (a partition) is given as a TOML table, so it alone
        # is validated lax; a TOML array is the tuple a tuple-typed option holds.
        for key, value in options.items():
            if key not in known:
                continue
            lax = dataclasses.is_dataclass(hints[key])
            try:
                TypeAdapter(hints[key]).validate_python(
                    tuple(value) if isinstance(value, list) else value, strict=not lax
                )
            except ValidationError as exc:
                # a union member's name is no part of where the value stands
                errors += [
                    ((key, *(x for x in e["loc"] if isinstance(x, int))), e) for e in exc.errors()
                ]
        if errors:
            for where, error in errors:
                loc = (*prefix, *where)
                problems.append(
                    f"{_where(path, text, loc)}: {_format_loc(loc)}: {error['msg']}, "
                    f"got {error['input']!r}"
                )
    return problems


def _where(path: Path, text: str, loc: tuple[int | str, ...]) -> str:
    line = _find_line(text, loc, yaml=_is_yaml(path))
    return f"{path}:{line}" if line else str(path)


def _is_yaml(path: Path) -> bool:
    return path.suffix.lower() in (".yaml", ".yml")


def _parse(path: Path, text: str) -> dict[str, Any]:
    if _is_yaml(path):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
            raise ConfigError(f"{where}: YAML syntax error: {exc}") from None
    elif path.suffix.lower() == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            line = re.search(r"at line (\d+)", str(exc))
            where = f"{path}:{line.group(1)}" if line else str(path)
            raise ConfigError(f"{where}: TOML syntax error: {exc}") from None
    elif path.suffix.lower() == ".json":  # what a run writes of its config (sweep.json)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{exc.lineno}: JSON syntax error: {exc.msg}") from None
    else:
        raise ConfigError(f"{path}: expected a .toml, .yaml, .yml or .json file")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table of sections at the top level")
    return data


def _clean_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """Drop pydantic's discriminator tags (``workloads[0].trace_sample.path``)."""
    out: list[int | str] = []
    for i, part in enumerate(loc):
        if (
            i >= 2
            and part in WORKLOAD_KINDS
            and loc[0] == "workloads"
            and isinstance(loc[i - 1], int)
        ):
            continue
        out.append(part)
    return tuple(out)


def _format_loc(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text or "(top level)"


def _find_line(text: str, loc: tuple[int | str, ...], yaml: bool) -> int | None:
    """Best-effort 1-based line of the key at ``loc`` (None if not found).

    Finds the section header of ``loc[0]`` (the i-th ``[[workloads]]`` for list entries),
    then the first line after it that assigns the last key name of ``loc``.
    """
    lines = text.splitlines()
    keys = [p for p in loc if isinstance(p, str)]
    if not keys:
        return None
    start = 0
    if not yaml:
        section = keys[0]
        index = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else None
        headers = [
            i
            for i, line in enumerate(lines)
            if re.match(rf"^\s*\[\[?\s*{re.escape(section)}[\].]", line)
        ]
        if index is not None and index < len(headers):
            start = headers[index]
        elif headers:
            start = headers[0]
            # Nested tables such as [protocols.dctcp.attributes]: prefer the deepest header.
            dotted = ".".join(keys[:-1])
            for i, line in enumerate(lines):
                if re.match(rf"^\s*\[\s*{re.escape(dotted)}\s*\]", line):
                    start = i
        if len(keys) == 1:
            return start + 1 if headers else None
        whole = re.compile(rf"^\s*\[\s*{re.escape('.'.join(keys))}\s*\]")
        for i, line in enumerate(lines):
            if whole.match(line):
                return i + 1
    name = re.escape(keys[-1])
    sep = ":" if yaml else "="
    pattern = re.compile(rf"^\s*(-\s*)?(\"{name}\"|'{name}'|{name})\s*{sep}")
    for i in range(start, len(lines)):
        if pattern.match(lines[i]):
            return i + 1
    return None
