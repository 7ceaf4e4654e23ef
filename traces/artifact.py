"""The original artifact's results directory (NetSys/disaggregation ``rmem/results/<run>/``).

Written by the artifact's ``rmem/ec2_run.sh``: for the ``n``-th slave ``host``,

- ``<n>-mem-<host>``: the rmem paging trace (``/proc/rmem_log``), in the
  ``<idx> <±timestamp_us> <page> <npages> <page_size>`` form (``paging.read_rmem``;
  ``idx`` is a running line number, a negative timestamp a swap-in);
- ``<n>-meta-<host>``: ``date +%y%m%d%H%M%S.%N`` (local time) written just before
  blktrace started (``rmem/ec2_get_log.sh``; ``paging.read_rmem_meta_ns``);
- ``<n>-disk-<host>.blktrace.<cpu>``: blktrace of the node's disk (``/dev/xvda1``).

There is no pcap, hence no IP addresses, no net flows and no attribution. Node ``n`` is
the artifact's ``n``; its blades are ``n * BLADES_PER_NODE + {compute, memory, disk}``
(``disaggsim.schemas``), and its memory and disk accesses are requested by its own compute
blade (``blades.memory_flows``/``disk_flows`` with no ``requester_node``), spread over all
nodes' memory/disk blades by the address-space partition. Any node's file may be missing
(the published run 150520220958 has all 40) or empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from disaggsim.traces.errors import TraceFormatError

ARTIFACT_FILE: Final = re.compile(
    r"(?P<node>[0-9]+)-(?P<kind>mem|meta|disk)-(?P<host>.+?)(?:\.blktrace\.(?P<cpu>[0-9]+))?"
)
LAYOUT: Final = "<n>-mem-<host>, <n>-meta-<host>, <n>-disk-<host>.blktrace.<cpu>"


@dataclass(frozen=True)
class ArtifactNode:
    """One slave of an artifact run: its index, host name and files (None if absent).

    ``disk_blktrace`` is the blktrace prefix ``<dir>/<n>-disk-<host>``.
    """

    node: int
    host: str
    paging: Path | None = None
    meta: Path | None = None
    disk_blktrace: Path | None = None


def is_artifact_run(run_dir: str | Path, sample_meta: str = "meta.json") -> bool:
    """True if ``run_dir`` has no ``sample_meta`` (our layout) and holds a file of the
    artifact's layout."""
    d = Path(run_dir)
    if not d.is_dir() or (d / sample_meta).exists():
        return False
    return any(ARTIFACT_FILE.fullmatch(q.name) for q in d.iterdir())


def scan_artifact_run(run_dir: str | Path, max_nodes: int) -> list[ArtifactNode]:
    """The nodes of an artifact run directory, by node index.

    Raises:
        FileNotFoundError: no file of the layout in ``run_dir``.
        TraceFormatError: a node index >= ``max_nodes``, two host names for one index, a
            disk file without ``.blktrace.<cpu>`` or a mem/meta file with it (names the file).
    """
    d = Path(run_dir)
    found: dict[int, dict[str, Path | str]] = {}
    for q in sorted(d.iterdir()) if d.is_dir() else []:
        m = ARTIFACT_FILE.fullmatch(q.name)
        if m is None:
            continue
        node = int(m["node"])
        if node >= max_nodes:
            raise TraceFormatError(q, None, "node", f"a node index below {max_nodes}", node)
        entry = found.setdefault(node, {"host": m["host"]})
        if entry["host"] != m["host"]:
            raise TraceFormatError(
                q,
                None,
                "host",
                f"the host {entry['host']!r} of node {node}'s other files",
                m["host"],
            )
        if m["kind"] == "disk":
            if m["cpu"] is None:
                raise TraceFormatError(
                    q, None, None, f"a per-CPU blktrace file {node}-disk-<host>.blktrace.<cpu>"
                )
            entry["disk"] = d / f"{node}-disk-{m['host']}"
        elif m["cpu"] is not None:
            raise TraceFormatError(q, None, None, f"{node}-{m['kind']}-<host> (no .blktrace)")
        else:
            entry[m["kind"]] = q
    if not found:
        raise FileNotFoundError(f"{d}: no meta.json and no artifact files ({LAYOUT})")

    def path(e: dict[str, Path | str], key: str) -> Path | None:
        v = e.get(key)
        return v if isinstance(v, Path) else None

    return [
        ArtifactNode(
            node=n,
            host=str(e["host"]),
            paging=path(e, "mem"),
            meta=path(e, "meta"),
            disk_blktrace=path(e, "disk"),
        )
        for n, e in sorted(found.items())
    ]
