"""Rcmp's traffic: memory accesses over a CXL tier in each rack and RDMA between racks.

Rcmp (Wang et al., "Rcmp: Reconstructing RDMA-Based Memory Disaggregation via CXL", ACM
TACO 2024; ``papers/003``) builds one CXL memory pool per rack and joins the racks' pools
with RDMA through one daemon per rack (§4.2 method (b), the default "under small-scale
nodes"). :func:`generate` turns one of the paper's experiments into:

- an access log (``disaggsim.schemas.RCMP_ACCESSES``): every read and write, with the tier
  that served it: ``cxl`` when the page lives in the client's rack, ``rdma`` otherwise;
- the network flows of the ``rdma`` accesses and of the hot-page migrations
  (``disaggsim.schemas.SIM_FLOWS``, ``kind`` one of ``RCMP_FLOW_KINDS``), between the
  daemons of the two racks. Intra-rack accesses are not network flows: they are counted
  (:attr:`RcmpTraffic.counts`) and only become ``cxl`` rows with ``cxl_rows=True``, for a
  run with the ns-3 CXL tier (``topologies/doc/cxl.md``) which serves them from the pool.

The experiment (§6.3, §6.4): ``racks`` racks of ``clients_per_rack`` clients, ``items``
items of ``item_bytes`` (64 B, §6.3) laid out in 2 MiB pages (§6.1), the same number of
pages pre-allocated in each rack (§6.3: page ``p`` in rack ``p % racks``, so uniform keys
reach a remote rack with probability (R-1)/R), keys uniform or Zipfian (YCSB's
``ScrambledZipfianGenerator``, constant 0.99: Cooper et al. SoCC'10, and Rcmp §6.4
"skewness is 0.99 by default"), operation mix a micro-benchmark (``read``, ``write``: §6.3
random reads or writes) or a YCSB core workload A, B, C, D, F (Rcmp Table 5; YCSB
``workloads/workload[abcdf]``: D reads the latest inserts, ``SkewedLatestGenerator``; F is
read-modify-write). The key and operation draws are YCSB's own generators
(``disaggsim.testbed.apps.ycsb``, ``java.util.Random`` as YCSB).

Per remote access, RRPC's modes (§5.5): an access of fewer than ``rpc_threshold_bytes``
(512 B, §5.5 and Fig. 3) is one pure-RPC request and its reply, the data inside the request
(write) or the reply (read); a larger access first looks the page's address up by RPC
(once per rack and page: "once the page address is acquired via RPC, Rcmp will cache it",
§5.5), then moves the data with a one-sided READ (remote -> local daemon) or WRITE (local
-> remote). An RPC message is ``rpc_header_bytes`` plus its data: a global address (8 B:
page id and offset, §5.1) and a size (8 B), the arguments of Read/Write (Table 4); the
paper gives no message size, so this is this module's assumption.

Hot pages (§5.3): each rack keeps an expiring hotness per page (remote pages at its daemon,
local pages per client): at an access ``dt`` after the page's last one, the counts reset if
``dt > T_l`` (100 s, §6.1), the hotness is ``alpha * (Cur_r + Cur_w) + 1`` with
``alpha = exp(-lambda * dt)`` (``lambda`` 0.04 /s, §6.1), then ``Cur_r`` or ``Cur_w`` is
incremented. A remote page whose hotness exceeds ``H_p`` (4 by default, §6.1; Fig. 20 uses
3) is swapped in: (1) one queued request per page at a time (the MS's FIFO), (2) a free page
of the requesting rack, or its coldest page as victim unless that one is hot too, (3) the
owner sums the page's hotness over its clients and rejects the swap if it is higher (no
"page ping-pong"), (5) two one-sided RDMA transfers: the 2 MiB page to the requester and
the victim back. Not modelled: the read-hot page cache and the write buffer (both need the
application's RLock/WLock, §5.4); a micro-benchmark without locks uses neither.

Timing is a closed loop per client (each client issues its next access when the previous
one completes, §6.3 micro-benchmark; YCSB clients likewise): an access takes the CXL
latency in-rack (140 ns: the paper's NUMA emulation measured 138.5 and 141.1 ns, §6.2) and
``remote_access_ns`` across racks (3 µs: Rcmp's 64 B read latency with 2 racks, Fig. 14 and
Table 3); the second message of an exchange starts half of that later. A migration takes
``remote_access_ns`` plus the page at ``rdma_gbps`` (100 Gbps ConnectX-5, §6.2) and the page
stays where it was until then. These estimates only place the flows in time: the flows' FCTs
on the fabric are what a simulation of the table measures.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import math
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from disaggsim.atomic import atomic_dir
from disaggsim.errors import InputError
from disaggsim.paths import REPO_ROOT
from disaggsim.schemas import NS3_FLOWS, RCMP_ACCESSES, SIM_FLOWS
from disaggsim.testbed.apps.ycsb import (
    ZIPFIAN_CONSTANT,
    JavaRandom,
    ScrambledZipfianGenerator,
    ZipfianGenerator,
    zeta,
)

#: Rcmp's page (2 MB, §6.1) in bytes.
PAGE_BYTES: Final = 2 * 1024 * 1024
#: librcmp's header, the one definition of RRPC's numbers for the generator and the
#: emulation (``swapdev/doc/rcmp.md``).
RCMP_HEADER: Final = REPO_ROOT / "swapdev" / "rcmp" / "rcmp.h"


def c_define(path: Path, name: str) -> int:
    """The integer of a ``#define NAME <integer>`` line of a C header.

    Raises:
        InputError: no such line (names the file and the macro).
    """
    found = re.search(rf"^#define {re.escape(name)} (\d+)\s*$", path.read_text(), re.MULTILINE)
    if found is None:
        raise InputError(path, None, name, "a '#define NAME <integer>' line")
    return int(found[1])


#: RRPC's switch from pure RPC to one-sided (512 B: §5.5, Fig. 3's cut-off).
RPC_THRESHOLD_BYTES: Final = c_define(RCMP_HEADER, "RCMP_RPC_THRESHOLD_BYTES")
#: An RPC message's bytes besides its data (16 B: this project's assumption, module doc).
RPC_HEADER_BYTES: Final = c_define(RCMP_HEADER, "RCMP_RPC_HEADER_BYTES")
#: Operation proportions (read, update, insert, read-modify-write) per mix: the §6.3
#: micro-benchmarks and the YCSB core workloads of Rcmp Table 5 (E, scans, is not run:
#: "the hashtable does not support range queries", §6.4).
MIXES: Final[dict[str, tuple[float, float, float, float]]] = {
    "read": (1.0, 0.0, 0.0, 0.0),
    "write": (0.0, 1.0, 0.0, 0.0),
    "A": (0.5, 0.5, 0.0, 0.0),
    "B": (0.95, 0.05, 0.0, 0.0),
    "C": (1.0, 0.0, 0.0, 0.0),
    "D": (0.95, 0.0, 0.05, 0.0),
    "F": (0.5, 0.0, 0.0, 0.5),
}
#: Key distributions: ``uniform``; ``zipfian``, YCSB's scrambled Zipfian (hot keys
#: scattered over the key space, as a hash table's buckets are); ``zipfian-unscrambled``,
#: item i the i-th most popular (YCSB ``ZipfianGenerator`` without the scrambling), as
#: Rcmp's own micro-benchmark draws addresses: ``zipf_distribution(range / payload)``,
#: address = rank x payload (PDS-Lab/Rcmp ``test/microbench_core.hpp``), so the hot items
#: share the first pages.
DISTRIBUTIONS: Final = ("uniform", "zipfian", "zipfian-unscrambled")


@dataclass(frozen=True)
class RcmpParams:
    """One Rcmp experiment (defaults: the paper's, at reduced scale where noted).

    Attributes:
        racks: racks, each one CXL pool and one daemon (§6.3: 2).
        clients_per_rack: compute-node clients per rack (Fig. 16: 8 per rack).
        client_racks: how many racks (the first ones) run clients; None: all. The other
            racks only lend their pool (a "two-rack environment" with clients in one).
        items: items pre-loaded (the paper: 100 M, §6.3; reduced here).
        item_bytes: bytes per item (64 B, §6.3 and §6.4).
        ops_per_client: operations each client issues.
        mix: a key of :data:`MIXES`.
        distribution: one of :data:`DISTRIBUTIONS` (Zipfian: YCSB constant 0.99).
        page_bytes: page size (2 MiB, §6.1).
        hot_threshold: H_p (4, §6.1); None turns hot-page swapping off.
        decay_per_s: lambda of the hotness decay (0.04 /s, §6.1).
        lifetime_s: T_l, after which a page's counts expire (100 s, §6.1).
        free_pages_per_rack: pages a rack can take in beyond its pre-allocated ones before
            it must give a victim back (step 2); 0: the pre-allocated pages fill the pool
            (§6.3 pre-allocates the same number of pages in each rack); None: unlimited.
        rpc_threshold_bytes: RRPC's switch from pure RPC to one-sided (512 B, §5.5;
            :data:`RPC_THRESHOLD_BYTES`, librcmp's define).
        rpc_header_bytes: an RPC message's bytes besides its data (16 B, see module doc;
            :data:`RPC_HEADER_BYTES`).
        cxl_latency_ns: intra-rack access time for the closed loop (140 ns, §6.2).
        remote_access_ns: inter-rack access time for the closed loop (3 µs, Fig. 14).
        rdma_gbps: daemon NIC rate for a migration's duration (100 Gbps, §6.2).
        cxl_rows: add a ``cxl`` SIM_FLOWS row per intra-rack access (for the ns-3 CXL tier).
        seed: seed of the YCSB generators (``java.util.Random``).
    """

    racks: int = 2
    clients_per_rack: int = 8
    client_racks: int | None = None
    items: int = 1_000_000
    item_bytes: int = 64
    ops_per_client: int = 10_000
    mix: str = "read"
    distribution: str = "uniform"
    page_bytes: int = PAGE_BYTES
    hot_threshold: float | None = 4.0
    decay_per_s: float = 0.04
    lifetime_s: float = 100.0
    free_pages_per_rack: int | None = 0
    rpc_threshold_bytes: int = RPC_THRESHOLD_BYTES
    rpc_header_bytes: int = RPC_HEADER_BYTES
    cxl_latency_ns: int = 140
    remote_access_ns: int = 3000
    rdma_gbps: float = 100.0
    cxl_rows: bool = False
    seed: int = 1

    @property
    def hosts_per_rack(self) -> int:
        """Hosts per rack: the daemon (index 0) and the clients (1..clients_per_rack)."""
        return self.clients_per_rack + 1

    @property
    def items_per_page(self) -> int:
        """Items per page (``page_bytes // item_bytes``)."""
        return self.page_bytes // self.item_bytes

    def daemon_host(self, rack: int) -> int:
        """Host id of ``rack``'s daemon (rack-major ids, index 0 in the rack)."""
        return rack * self.hosts_per_rack

    def check(self) -> None:
        """Raise InputError naming the first parameter out of range."""
        rules = [
            ("racks", self.racks >= 1, "an integer >= 1"),
            ("clients_per_rack", self.clients_per_rack >= 1, "an integer >= 1"),
            (
                "client_racks",
                self.client_racks is None or 1 <= self.client_racks <= self.racks,
                "1..racks or none",
            ),
            ("items", self.items >= 1, "an integer >= 1"),
            ("item_bytes", 1 <= self.item_bytes <= self.page_bytes, "1..page_bytes"),
            ("ops_per_client", self.ops_per_client >= 0, "an integer >= 0"),
            ("mix", self.mix in MIXES, f"one of {', '.join(MIXES)}"),
            ("distribution", self.distribution in DISTRIBUTIONS, " or ".join(DISTRIBUTIONS)),
            (
                "hot_threshold",
                self.hot_threshold is None or self.hot_threshold >= 0,
                "a number >= 0 or none",
            ),
            ("decay_per_s", self.decay_per_s >= 0, "a number >= 0"),
            ("lifetime_s", self.lifetime_s > 0, "a number > 0"),
            (
                "free_pages_per_rack",
                self.free_pages_per_rack is None or self.free_pages_per_rack >= 0,
                "an integer >= 0 or none",
            ),
            ("rpc_header_bytes", self.rpc_header_bytes >= 1, "an integer >= 1"),
            ("cxl_latency_ns", self.cxl_latency_ns >= 1, "an integer >= 1"),
            ("remote_access_ns", self.remote_access_ns >= 2, "an integer >= 2"),
            ("rdma_gbps", self.rdma_gbps > 0, "a number > 0"),
        ]
        for name, ok, expected in rules:
            if not ok:
                raise InputError("rcmp parameters", None, name, expected, getattr(self, name))


@dataclass
class RcmpTraffic:
    """What :func:`generate` returns.

    Attributes:
        accesses: RCMP_ACCESSES rows, one per access, in start order.
        flows: SIM_FLOWS rows (network flows; plus ``cxl`` rows with ``cxl_rows``), flow ids
            0..N-1 in (start_ns, emission) order.
        counts: accesses per tier and op (``cxl_R``, ``rdma_W``...), ``migrations`` (pages
            moved to a requesting rack), ``victims`` (pages given back), ``swaps_rejected``
            (step 3: the owner's hotness was higher), ``swaps_stopped`` (step 2: the victim
            was hot), ``page_moves`` per page id.
        hosts: hosts of the fabric (racks * hosts_per_rack).
        makespan_ns: when the last client finished under the closed loop's estimates (so
            ``len(accesses) / makespan_ns`` is the estimated access throughput).
    """

    accesses: pd.DataFrame
    flows: pd.DataFrame
    counts: dict[str, int]
    page_moves: Counter[int] = field(default_factory=Counter)
    hosts: int = 0
    makespan_ns: int = 0


class _Hotness:
    """One page's expiring hotness as one rack (daemon) or client sees it (§5.3)."""

    __slots__ = ("cur_r", "cur_w", "last_ns")

    def __init__(self) -> None:
        self.cur_r = 0
        self.cur_w = 0
        self.last_ns = -1

    def _alpha(self, now_ns: int, decay_per_s: float, lifetime_s: float) -> float:
        if self.last_ns < 0:
            return 0.0
        dt_s = (now_ns - self.last_ns) / 1e9
        if dt_s > lifetime_s:  # "expired": the counts are cleared
            self.cur_r = self.cur_w = 0
        return math.exp(-decay_per_s * dt_s)

    def touch(self, now_ns: int, is_write: bool, decay_per_s: float, lifetime_s: float) -> float:
        """Count an access at ``now_ns``; return the page's hotness
        ``alpha * (Cur_r + Cur_w) + 1`` (computed before the count, as §5.3)."""
        alpha = self._alpha(now_ns, decay_per_s, lifetime_s)
        hot = alpha * (self.cur_r + self.cur_w) + 1.0
        if is_write:
            self.cur_w += 1
        else:
            self.cur_r += 1
        self.last_ns = now_ns
        return hot

    def held(self, now_ns: int, decay_per_s: float, lifetime_s: float) -> float:
        """The decayed count ``alpha * (Cur_r + Cur_w)`` at ``now_ns`` (no access counted):
        what the owner sums over its clients at step 3."""
        return self._alpha(now_ns, decay_per_s, lifetime_s) * (self.cur_r + self.cur_w)


def _zeta(n: int, theta: float = ZIPFIAN_CONSTANT) -> float:
    """``sum_{i=1..n} 1 / i^theta`` (YCSB ``zetastatic``), vectorized in chunks: the
    pure-Python sum of ``testbed.apps.ycsb.zeta`` takes a minute at 100 M items."""
    total = 0.0
    for lo in range(1, n + 1, 1 << 22):
        i = np.arange(lo, min(n, lo + (1 << 22) - 1) + 1, dtype=np.float64)
        total += float(np.sum(i**-theta))
    return total


class _Keys:
    """The key chooser of a mix: YCSB's uniform, scrambled Zipfian or (D) latest."""

    def __init__(self, params: RcmpParams) -> None:
        self.count = params.items
        self.rng = JavaRandom(params.seed)
        self.uniform = params.distribution == "uniform"
        self.scrambled = ScrambledZipfianGenerator(0, params.items, self.rng)
        self.ranked: ZipfianGenerator | None = None
        if params.distribution == "zipfian-unscrambled" and params.mix != "D":
            self.ranked = ZipfianGenerator(
                0, params.items - 1, ZIPFIAN_CONSTANT, _zeta(params.items), self.rng
            )
        self.latest: ZipfianGenerator | None = None
        if params.mix == "D":
            # SkewedLatestGenerator: max - zipfian(max), the zipfian over the inserted keys.
            self.latest = ZipfianGenerator(
                0, params.items - 1, ZIPFIAN_CONSTANT, _zeta(params.items), self.rng
            )

    def next_key(self) -> int:
        """A loaded key (YCSB ``CoreWorkload.nextKeynum``)."""
        if self.latest is not None:
            return self.count - 1 - self.latest.next_value()
        if self.uniform:  # UniformLongGenerator(0, count - 1)
            return int(self.rng.next_double() * self.count)
        if self.ranked is not None:
            return self.ranked.next_value()
        while True:
            k = self.scrambled.next_value()
            if k < self.count:
                return k

    def insert(self) -> int:
        """The next inserted key; the latest chooser's item count grows with it (YCSB
        ``ZipfianGenerator.nextLong(itemcount)`` re-sums zetan incrementally)."""
        key = self.count
        self.count += 1
        if self.latest is not None:
            g = self.latest
            g.zetan += 1.0 / (self.count**g.theta)
            g.items = self.count
            g.eta = (1 - (2.0 / g.items) ** (1 - g.theta)) / (1 - zeta(2, g.theta) / g.zetan)
        return key


def _op_chooser(mix: str) -> list[tuple[float, str]]:
    names = ("read", "update", "insert", "rmw")
    return [(w, n) for w, n in zip(MIXES[mix], names, strict=True) if w > 0]


def _next_op(choices: list[tuple[float, str]], rng: JavaRandom) -> str:
    """YCSB ``DiscreteGenerator.nextString``."""
    if len(choices) == 1:
        return choices[0][1]
    total = sum(w for w, _ in choices)
    val = rng.next_double()
    for w, name in choices:
        if val < w / total:
            return name
        val -= w / total
    return choices[-1][1]


class RcmpRacks:
    """The racks' state during a generation: page owners, hotness, migrations in flight,
    and the accesses and flows so far. :func:`generate` drives it with YCSB's draws; a test
    can drive :meth:`access` with a hand-made sequence.

    Attributes:
        owner: page id -> rack whose pool holds it.
        counts: as :attr:`RcmpTraffic.counts`; page_moves: moves per page id.
    """

    def __init__(self, p: RcmpParams) -> None:
        self.p = p
        self.owner: dict[int, int] = {}
        self.owned: Counter[int] = Counter()
        pages = -(-p.items // p.items_per_page)
        for page in range(pages):
            self.owner[page] = page % p.racks
            self.owned[page % p.racks] += 1
        self.initial_owned = dict(self.owned)
        # Pages of each rack no client of it has touched (hotness 0, the coldest), as a
        # min-heap of page ids checked lazily: the step-2 victim without a scan.
        self.untouched: dict[int, list[int]] = {r: [] for r in range(p.racks)}
        for page in range(pages):
            self.untouched[page % p.racks].append(page)
        self.remote_hot: dict[tuple[int, int], _Hotness] = {}  # (rack, page) at its daemon
        self.local_hot: dict[int, dict[int, _Hotness]] = {}  # page -> client host -> hotness
        self.addr_cached: set[tuple[int, int]] = set()  # (rack, page) with a known address
        self.in_flight: dict[int, tuple[int, int]] = {}  # page -> (done_ns, to rack)
        self.done_heap: list[tuple[int, int]] = []
        self.acc: list[tuple[int, int, int, int, str, int, int, int, str]] = []
        self.flows: list[tuple[int, int, int, int, str]] = []  # start, src, dst, size, kind
        self.counts: Counter[str] = Counter()
        self.page_moves: Counter[int] = Counter()

    # -- flows ------------------------------------------------------------------------
    def _flow(self, start_ns: int, src: int, dst: int, size: int, kind: str) -> None:
        self.flows.append((start_ns, src, dst, size, kind))

    def _remote_flows(self, now: int, rack: int, owner: int, page: int, is_write: bool) -> None:
        p = self.p
        here, there = p.daemon_host(rack), p.daemon_host(owner)
        half = p.remote_access_ns // 2
        hdr, size = p.rpc_header_bytes, p.item_bytes
        if size < p.rpc_threshold_bytes:  # pure RPC: data inside the request or the reply
            self._flow(now, here, there, hdr + (size if is_write else 0), "rpc")
            self._flow(now + half, there, here, hdr + (0 if is_write else size), "rpc")
            return
        start = now
        if (rack, page) not in self.addr_cached:  # address lookup, then cached (§5.5)
            self.addr_cached.add((rack, page))
            self._flow(now, here, there, hdr, "rpc")
            self._flow(now + half, there, here, hdr, "rpc")
            start = now + p.remote_access_ns
        if is_write:
            self._flow(start, here, there, size, "rdma_write")
        else:
            self._flow(start, there, here, size, "rdma_read")

    # -- hot pages ----------------------------------------------------------------------
    def _complete_migrations(self, now: int) -> None:
        while self.done_heap and self.done_heap[0][0] <= now:
            _, page = heapq.heappop(self.done_heap)
            _, to = self.in_flight.pop(page)
            self._move(page, to)

    def _move(self, page: int, to: int) -> None:
        """Step 4 and 6: the page table points at the new rack; the old hotness records
        of the page are dropped (the owner "disables hotness metadata about the page")."""
        old = self.owner[page]
        self.owner[page] = to
        self.owned[old] -= 1
        self.owned[to] += 1
        self.page_moves[page] += 1
        self.local_hot.pop(page, None)
        heapq.heappush(self.untouched[to], page)
        self.remote_hot.pop((to, page), None)
        self.addr_cached.discard((to, page))

    def _rack_hotness(self, rack: int, page: int, now: int) -> float:
        p = self.p
        records = self.local_hot.get(page, {})
        return sum(
            h.held(now, p.decay_per_s, p.lifetime_s)
            for client, h in records.items()
            if client // p.hosts_per_rack == rack
        )

    def _coldest(self, rack: int, now: int) -> int | None:
        """The rack's page of lowest hotness (lowest id among equals), not in flight."""
        heap = self.untouched[rack]
        while heap:
            q = heap[0]
            if self.owner.get(q) == rack and q not in self.in_flight and not self.local_hot.get(q):
                return q
            heapq.heappop(heap)  # moved away, in flight or touched since: not untouched
        candidates = [q for q, r in self.owner.items() if r == rack and q not in self.in_flight]
        if not candidates:
            return None
        return min(candidates, key=lambda q: (self._rack_hotness(rack, q, now), q))

    def _try_swap(self, now: int, rack: int, page: int, hot: float) -> None:
        p = self.p
        owner = self.owner[page]
        victim: int | None = None
        cap = p.free_pages_per_rack
        if cap is not None and self.owned[rack] >= self.initial_owned.get(rack, 0) + cap:
            # Step 2: no free page: the rack's coldest page, unless it is hot too.
            victim = self._coldest(rack, now)
            if victim is None:
                self.counts["swaps_stopped"] += 1
                return
            assert p.hot_threshold is not None
            if self._rack_hotness(rack, victim, now) > p.hot_threshold:
                self.counts["swaps_stopped"] += 1
                return
        # Step 3: the owner keeps the page if its clients hold it hotter (no ping-pong).
        if self._rack_hotness(owner, page, now) > hot:
            self.counts["swaps_rejected"] += 1
            return
        duration = p.remote_access_ns + math.ceil(p.page_bytes * 8 / p.rdma_gbps)
        self._flow(now, p.daemon_host(owner), p.daemon_host(rack), p.page_bytes, "migrate")
        self.counts["migrations"] += 1
        if victim is not None:
            self._flow(now, p.daemon_host(rack), p.daemon_host(owner), p.page_bytes, "migrate")
            self.counts["victims"] += 1
            self.in_flight[victim] = (now + duration, owner)
            heapq.heappush(self.done_heap, (now + duration, victim))
        self.in_flight[page] = (now + duration, rack)
        heapq.heappush(self.done_heap, (now + duration, page))

    # -- accesses -------------------------------------------------------------------------
    def access(self, now: int, client: int, key: int, is_write: bool) -> int:
        """One access at ``now`` (ns, not before the previous call's) by host ``client``
        to item ``key``; records it, its flows and any swap it triggers.

        Returns:
            Its closed-loop duration (ns): ``cxl_latency_ns`` or ``remote_access_ns``.
        """
        p = self.p
        self._complete_migrations(now)
        rack = client // p.hosts_per_rack
        page = key // p.items_per_page
        if page not in self.owner:  # an insert's new page: allocated in the local rack (§5.1)
            self.owner[page] = rack
            self.owned[rack] += 1
            self.initial_owned[rack] = self.initial_owned.get(rack, 0) + 1
        owner = self.owner[page]
        op = "W" if is_write else "R"
        tier = "cxl" if owner == rack else "rdma"
        self.acc.append((now, client, rack, owner, op, key, page, p.item_bytes, tier))
        self.counts[f"{tier}_{op}"] += 1
        if tier == "cxl":
            self.local_hot.setdefault(page, {}).setdefault(client, _Hotness()).touch(
                now, is_write, p.decay_per_s, p.lifetime_s
            )
            if p.cxl_rows:
                pool = p.daemon_host(rack)
                src, dst = (client, pool) if is_write else (pool, client)
                self._flow(now, src, dst, p.item_bytes, "cxl")
            return p.cxl_latency_ns
        self._remote_flows(now, rack, owner, page, is_write)
        hot = self.remote_hot.setdefault((rack, page), _Hotness()).touch(
            now, is_write, p.decay_per_s, p.lifetime_s
        )
        if p.hot_threshold is not None and hot > p.hot_threshold and page not in self.in_flight:
            self._try_swap(now, rack, page, hot)
        return p.remote_access_ns


def generate(params: RcmpParams) -> RcmpTraffic:
    """Generate one Rcmp experiment's accesses and flows (module docstring).

    Args:
        params: the experiment; checked first.

    Returns:
        The access log, the SIM_FLOWS table and the counts.

    Raises:
        InputError: a parameter out of range (names it and the expected range).
    """
    params.check()
    gen = RcmpRacks(params)
    keys = _Keys(params)
    choices = _op_chooser(params.mix)
    clients = [
        r * params.hosts_per_rack + 1 + i
        for r in range(params.client_racks or params.racks)
        for i in range(params.clients_per_rack)
    ]
    # (time the client is free, client, key of a read-modify-write's pending write or -1):
    # a closed loop per client, every access processed in time order.
    ready = [(0, c, -1) for c in clients]
    heapq.heapify(ready)
    left = dict.fromkeys(clients, params.ops_per_client)
    makespan_ns = 0
    while ready:
        now, client, pending = heapq.heappop(ready)
        makespan_ns = max(makespan_ns, now)
        if pending >= 0:  # the write half of a read-modify-write
            took = gen.access(now, client, pending, True)
            heapq.heappush(ready, (now + took, client, -1))
            continue
        if left[client] == 0:
            continue
        left[client] -= 1
        op = _next_op(choices, keys.rng)
        if op == "insert":
            took = gen.access(now, client, keys.insert(), True)
        else:
            key = keys.next_key()
            took = gen.access(now, client, key, op == "update")
            if op == "rmw":
                heapq.heappush(ready, (now + took, client, key))
                continue
        heapq.heappush(ready, (now + took, client, -1))
    accesses = pa.Table.from_pylist(
        [dict(zip(RCMP_ACCESSES.names, row, strict=True)) for row in gen.acc],
        schema=RCMP_ACCESSES,
    ).to_pandas()
    order = sorted(range(len(gen.flows)), key=lambda i: (gen.flows[i][0], i))
    rows = [
        {
            "flow_id": n,
            "start_ns": gen.flows[i][0],
            "src_host": gen.flows[i][1],
            "dst_host": gen.flows[i][2],
            "size_bytes": gen.flows[i][3],
            "kind": gen.flows[i][4],
        }
        for n, i in enumerate(order)
    ]
    flows = pa.Table.from_pylist(rows, schema=SIM_FLOWS).to_pandas()
    counts = dict(gen.counts)
    for name in (
        "cxl_R",
        "cxl_W",
        "rdma_R",
        "rdma_W",
        "migrations",
        "victims",
        "swaps_rejected",
        "swaps_stopped",
    ):
        counts.setdefault(name, 0)
    return RcmpTraffic(
        accesses,
        flows,
        counts,
        gen.page_moves,
        params.racks * params.hosts_per_rack,
        makespan_ns,
    )


def _of_type(value: object, default: object) -> bool:
    """``value`` has the TOML type of a field whose default is ``default`` (None: a number)."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int)
    if isinstance(default, float) or default is None:
        return isinstance(value, int | float)
    return isinstance(value, type(default))


def load_params(path: Path) -> RcmpParams:
    """Read an experiment from a TOML file's ``[rcmp]`` table (keys: RcmpParams' fields;
    ``hot_threshold`` and ``free_pages_per_rack`` may be the string ``"none"``).

    Raises:
        InputError: unreadable TOML, no ``[rcmp]`` table, an unknown key, a value of the
            wrong type, or a parameter out of range (names the file and the key).
    """
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, None, None, "a readable TOML file", str(exc)) from None
    table = data.get("rcmp")
    if not isinstance(table, dict):
        raise InputError(path, None, "rcmp", "a [rcmp] table")
    fields = {f.name: f for f in dataclasses.fields(RcmpParams)}
    values: dict[str, object] = {}
    for key, value in table.items():
        if key not in fields:
            raise InputError(path, "rcmp", key, f"one of {', '.join(fields)}")
        if value == "none" and key in ("hot_threshold", "free_pages_per_rack", "client_racks"):
            value = None
        if value is not None and not _of_type(value, getattr(RcmpParams(), key)):
            raise InputError(
                path, "rcmp", key, f"a value like {getattr(RcmpParams(), key)!r}", value
            )
        values[key] = value
    params = RcmpParams(**values)  # type: ignore[arg-type]
    try:
        params.check()
    except InputError as exc:
        raise InputError(path, "rcmp", exc.field, exc.expected, exc.got) from None
    return params


def write_traffic(traffic: RcmpTraffic, out_dir: Path) -> None:
    """Write ``flows.csv`` (SIM_FLOWS, with each flow's ``kind``), ``ns3_flows.csv``
    (NS3_FLOWS: the ns-3 program's ``--flows`` input), ``accesses.parquet``
    (RCMP_ACCESSES) and ``counts.json`` into ``out_dir``, created atomically (all or
    nothing).

    Raises:
        FileExistsError: ``out_dir`` exists.
    """
    if out_dir.exists():
        raise FileExistsError(f"{out_dir}: exists; choose a new output directory")
    with atomic_dir(out_dir) as tmp:
        traffic.flows.to_csv(tmp / "flows.csv", index=False)
        traffic.flows[NS3_FLOWS.names].to_csv(tmp / "ns3_flows.csv", index=False)
        pq.write_table(
            pa.Table.from_pandas(traffic.accesses, schema=RCMP_ACCESSES, preserve_index=False),
            tmp / "accesses.parquet",
        )
        summary = {
            **traffic.counts,
            "hosts": traffic.hosts,
            "makespan_ns": traffic.makespan_ns,
            "flows": len(traffic.flows),
        }
        (tmp / "counts.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
