"""Link-delay presets of the Clos fabric, and the ideal FCT each one divides by.

``[topology] delays`` selects one:

- ``"table4"`` (default): the paper's Table 4 and §3.3: 0.24 us cut-through switching at
  every switch, 4 m host-ToR and 40 m ToR-spine cables at 5 ns/m (20 ns and 200 ns); the
  delays come from ``switch_delay_ns``, ``intra_rack_cable_m``, ``inter_rack_cable_m`` and
  ``prop_ns_per_m``.
- ``"authors-sim"``: the link delays of the authors' own simulator in its DDC mode
  (NetSys/simulator ``coresim/queue.cpp``, ``Queue::Queue`` with ``params.ddc != 0``): 10 ns
  on a host's uplink (queue location 0), 400 ns on ToR<->spine links (locations 1, 2),
  210 ns on a ToR's downlink to a host (location 3), and no switching delay of its own
  (its switches forward after the propagation delay: ``coresim/event.cpp``). Our cables
  have one delay for both directions; every host-to-host path crosses exactly one host
  uplink and one host downlink, so 110 ns each way gives every path, and every switch's
  arrival pattern, the same timing as 10 ns up + 210 ns down. The switching and cable keys
  of ``[topology]`` are ignored under this preset.

Ideal FCT: with either preset the ns-3 program divides by the flow's FCT alone in the
network on its path under that preset's delays (``ns3::ClosTopology::IdealFct``, which
reads the same ``GetIntraRackDelay``/``GetInterRackDelay`` as the cables, so a lone flow's
slowdown is 1). The authors' oracle (``PFabricTopology::get_oracle_fct`` in
``coresim/topology.cpp`` with ``ddc != 0``) adds a round trip instead: 0.44 us within a rack
(2 x (10 + 210) ns) and 2.04 us across racks (2 x (10 + 400 + 400 + 210) ns) plus the
serialization of the data and one ACK, because its FCT ends when the sender has the last
ACK; our FCT ends when the receiver has the last byte (``disaggsim.schemas.FCT_RECORDS``).
:func:`authors_oracle_fct_ns` computes that oracle for comparisons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Preset names accepted by ``[topology] delays``.
PRESETS = ("table4", "authors-sim")

#: The authors' DDC-mode link delays in ns (NetSys/simulator coresim/queue.cpp).
AUTHORS_HOST_UPLINK_NS = 10
AUTHORS_HOST_DOWNLINK_NS = 210
AUTHORS_SPINE_LINK_NS = 400
#: The authors' oracle propagation in us (coresim/topology.cpp, ddc != 0).
AUTHORS_ORACLE_PROP_INTRA_US = 0.440
AUTHORS_ORACLE_PROP_INTER_US = 2.040


@dataclass(frozen=True)
class DelayPreset:
    """The ns-3 settings of one preset.

    Attributes:
        name: one of :data:`PRESETS`.
        attributes: ns-3 attributes to pass (``{"ns3::ClosTopology::X": value}``); empty
            for table4 (the cable keys and ``switch_delay_ns`` apply).
        switch_delay_ns: the switching delay to pass (None: ``[topology]``'s).
        ideal_fct: how the ideal FCT the slowdown divides by is computed (for reports).
    """

    name: str
    attributes: dict[str, str]
    switch_delay_ns: int | None
    ideal_fct: str


def preset(name: str) -> DelayPreset:
    """The :class:`DelayPreset` called ``name``.

    Raises:
        ValueError: an unknown name (the message lists :data:`PRESETS`).
    """
    if name == "table4":
        return DelayPreset(
            "table4",
            {},
            None,
            "lone-flow FCT on its path: serialization + 2 x host cable (+ 2 x spine cable) "
            "+ 1 (3) x switching delay + re-serialization (ns3::ClosTopology::IdealFct)",
        )
    if name == "authors-sim":
        host_ns = (AUTHORS_HOST_UPLINK_NS + AUTHORS_HOST_DOWNLINK_NS) // 2
        return DelayPreset(
            "authors-sim",
            {
                "ns3::ClosTopology::HostLinkDelay": f"{host_ns}ns",
                "ns3::ClosTopology::SpineLinkDelay": f"{AUTHORS_SPINE_LINK_NS}ns",
            },
            0,
            "lone-flow FCT on its path with the authors' DDC delays: serialization + 220 ns "
            "within a rack, + 1020 ns + re-serialization across racks "
            "(ns3::ClosTopology::IdealFct)",
        )
    raise ValueError(f"unknown delay preset {name!r}: expected one of {PRESETS}")


def authors_oracle_fct_ns(
    size_bytes: int, rate_gbps: float, same_rack: bool, mss_bytes: int = 1460, hdr_bytes: int = 40
) -> float:
    """The authors' ideal FCT in ns (NetSys/simulator ``PFabricTopology::get_oracle_fct``,
    ``ddc != 0``, store-and-forward branch; ``params.hdr_size`` = 40, ``mss`` = 1460).

    ``prop + (bytes with headers + 2 x hdr for the ACK) x 8 / rate`` plus, across racks,
    ``2 x (largest packet + 2 x hdr) x 8 / (4 x rate)``; prop 0.44 us within a rack,
    2.04 us across racks.
    """
    packets = size_bytes / mss_bytes
    full = math.floor(packets)
    leftover = int((packets - full) * mss_bytes)
    wire = (mss_bytes + hdr_bytes) * full + (leftover + hdr_bytes)
    bits_per_us = rate_gbps * 1e3
    tx_us = (wire + 2.0 * hdr_bytes) * 8.0 / bits_per_us
    prop_us = AUTHORS_ORACLE_PROP_INTRA_US if same_rack else AUTHORS_ORACLE_PROP_INTER_US
    if not same_rack:
        largest = leftover if full == 0 else mss_bytes
        tx_us += 2 * (largest + 2 * hdr_bytes) * 8.0 / (4 * bits_per_us)
    return (prop_us + tx_us) * 1e3
