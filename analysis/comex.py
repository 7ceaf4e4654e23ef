"""COMEX's request round-trip model, Eq. (1), and the queue it approximates (paper 002).

COMEX (Srinuan, Yuan, Tzeng, IEEE TPDS 2020; ``/work/shared/papers/002_*.txt``) §3.3.3
sizes its free-frame replenishing threshold from the expected round trip of one request
from a compute node to a memory node, ``RTT = T_NW + T_S + T_Q``:

- ``T_NW``, the network's hardware latency: 4.54 µs on its testbed ("four trips over NICs
  ... and two switch trips": ~1 µs per ConnectX-3 NIC traversal, 270 ns per switch);
- ``T_S``, the memory node's service time per request, measured 4.0-6.0 µs (Eq. (1) takes
  6.0 µs);
- ``T_Q = T_S * E[R]``: the tagged request waits for every request that the other
  ``N - 1`` compute nodes send to the same memory node "at the same time". Each compute
  node sends one request with probability ``P`` to one of ``M`` memory nodes uniformly,
  so R ~ Binomial(N - 1, P / M) and E[R] = (N - 1) P / M.

Eq. (1): ``RTT = 4.54 µs + 6.0 µs + 6.0 µs * (N - 1) / M * P``; its worked example (§3.3.3,
10 compute and 12 memory nodes, P -> 1) gives a threshold of
``50 pages/µs * (10.54 + 6.0 * 9/12) µs = 752`` pages, "some 750".

What the model assumes, and :func:`fifo_waits` lets a simulation drop: that the requests
of one instant are all served before the tagged one (with random order the tagged request
waits for half of them on average: ``T_S * E[R] / 2``), and that nothing is left from the
previous instant: a memory node offered ``rho = N * P / M`` requests per ``T_S`` builds a
backlog that the model never sees once rho nears 1 (its RTT then grows without bound with
time, Eq. (1) stays linear in P).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Final, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from disaggsim.sim.config import load_config_model

#: §3.3.3: "a minimal of 4.54 µs in total" (4 NIC trips ~1 µs, 2 switch trips 270 ns).
NETWORK_NS: Final = 4540
#: §3.3.3: T_S "ranges from 4.0 µs to 6.0 µs"; Eq. (1) uses 6.0 µs.
SERVICE_NS: Final = 6000
#: §3.3.3: "the measured rate on our testbed to reach up to 50 pages per microsecond".
RECLAIM_PAGES_PER_US: Final = 50


def _check(n_compute: int, m_memory: int, p_request: float) -> None:
    if n_compute < 1 or m_memory < 1 or not 0 <= p_request <= 1:
        raise ValueError(
            f"comex Eq. (1): expected N >= 1, M >= 1, 0 <= P <= 1; got "
            f"N={n_compute}, M={m_memory}, P={p_request}"
        )


def expected_others(n_compute: int, m_memory: int, p_request: float) -> float:
    """E[R]: requests the other ``N - 1`` compute nodes send to one memory node at once,
    summed over the binomial distribution as §3.3.3 derives it:
    ``sum_k k * C(N-1, k) * P'^k * (1 - P')^(N-1-k)`` with ``P' = P / M``.

    Raises ValueError on N < 1, M < 1 or P outside [0, 1].
    """
    _check(n_compute, m_memory, p_request)
    q = p_request / m_memory
    n = n_compute - 1
    return sum(k * math.comb(n, k) * q**k * (1 - q) ** (n - k) for k in range(1, n + 1))


def eq1_rtt_ns(
    n_compute: int,
    m_memory: int,
    p_request: float,
    service_ns: float = SERVICE_NS,
    network_ns: float = NETWORK_NS,
) -> float:
    """Eq. (1): ``network_ns + service_ns + service_ns * (N - 1) * P / M`` (ns).

    Raises ValueError as :func:`expected_others`.
    """
    _check(n_compute, m_memory, p_request)
    return network_ns + service_ns + service_ns * (n_compute - 1) * p_request / m_memory


def replenish_threshold_pages(
    rtt_ns: float, reclaim_pages_per_us: float = RECLAIM_PAGES_PER_US
) -> float:
    """§3.3.3: pages a compute node must hold to keep reclaiming for one RTT:
    ``reclaim rate x RTT``."""
    return reclaim_pages_per_us * rtt_ns / 1000


def fifo_waits(arrival_ns: npt.ArrayLike, service_ns: float) -> npt.NDArray[np.float64]:
    """Wait before service of each request at one FIFO server of constant service time
    (Lindley's recursion: ``start_i = max(arrival_i, start_{i-1} + service)``), in the
    order given (ties keep their order). Returns waits (ns), same shape as the input.

    Raises ValueError if the arrivals are not non-decreasing.
    """
    arr = np.asarray(arrival_ns, dtype=np.float64)
    if arr.size and np.any(np.diff(arr) < 0):
        raise ValueError("fifo_waits: arrivals must be in non-decreasing order")
    waits = np.empty_like(arr)
    free = -math.inf
    for i, a in enumerate(arr):
        start = max(a, free)
        waits[i] = start - a
        free = start + service_ns
    return waits


def slotted_requests(
    n_compute: int, m_memory: int, p_request: float, slots: int, slot_ns: int, seed: int
) -> npt.NDArray[np.int64]:
    """Eq. (1)'s arrival process: in each of ``slots`` slots of ``slot_ns``, each compute
    node sends one request with probability P to a memory node drawn uniformly. Returns
    rows ``(start_ns, compute, memory)`` sorted by start then compute node.

    Raises ValueError as :func:`expected_others`, or on slots < 1 or slot_ns < 1.
    """
    _check(n_compute, m_memory, p_request)
    if slots < 1 or slot_ns < 1:
        raise ValueError(f"slotted_requests: expected slots, slot_ns >= 1; got {slots}, {slot_ns}")
    rng = np.random.default_rng(seed)
    send = rng.random((slots, n_compute)) < p_request
    dest = rng.integers(0, m_memory, size=(slots, n_compute))
    slot, node = np.nonzero(send)
    return np.column_stack([slot.astype(np.int64) * slot_ns, node, dest[slot, node]])


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class FabricSection(_Strict):
    """``[comex_fabric]``: COMEX's requests on the simulated fabric (``bench/comex_fabric.py``).

    N compute and M memory blades (``compute_nodes`` x ``memory_nodes`` grids) on one
    switch (``switch``: one rack of N + M hosts) and on the Clos (``clos``: the default 9 x
    16 fabric, compute blades in rack 0, memory blades in the other racks), on each of
    ``fabrics``; each transport of ``protocols`` at ``rate_gbps`` (COMEX: 10 GbE,
    §5.1.2). ``request_probability``: Eq. (1)'s P per slot of ``service_ns`` (T_S);
    ``slots`` slots per run. ``trace_*``: the
    second part, a comex run's converted rmem log replayed from N compute blades.
    """

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    out_dir: Annotated[Path, Field(strict=False)]
    topologies: list[Literal["switch", "clos"]] = Field(min_length=1)
    #: ``lossy`` (drop-tail port buffers) and/or ``lossless`` (PFC, the fabric RoCE runs on;
    #: README "Fabrics", topologies/doc/lossless.md).
    fabrics: list[Literal["lossy", "lossless"]] = Field(["lossy"], min_length=1)
    protocols: list[str] = Field(min_length=1)
    rate_gbps: float = Field(10.0, gt=0)
    compute_nodes: list[Annotated[int, Field(ge=1, le=15)]] = Field(min_length=1)
    memory_nodes: list[Annotated[int, Field(ge=1, le=64)]] = Field(min_length=1)
    request_probability: list[Annotated[float, Field(ge=0, le=1)]] = Field(min_length=1)
    slots: int = Field(300, ge=1)
    service_ns: int = Field(SERVICE_NS, ge=0)
    message_bytes: int = Field(64, ge=1)
    seed: int = 1
    trace_compute_nodes: list[Annotated[int, Field(ge=1, le=15)]] = []
    trace_memory_nodes: int = Field(4, ge=1, le=64)
    trace_window_ns: int = Field(50_000_000, gt=0)


class FabricConfig(_Strict):
    """A whole ``bench/comex_fabric.py`` config; ``base_dir`` is set by the loader."""

    comex_fabric: FabricSection
    base_dir: Path


def load_fabric_config(path: str | Path) -> FabricConfig:
    """Read and validate a ``[comex_fabric]`` config (TOML).

    Raises:
        ConfigError: unreadable, syntax error, unknown key or bad value, named by file,
            line and key (``disaggsim.sim.config.load_config_model``).
    """
    return load_config_model(path, FabricConfig)[0]
