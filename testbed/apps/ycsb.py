"""YCSB core workload (A/B) against memcached, run as a client process on a node.

The key chooser, key names, operation mix and record shape follow the YCSB core workload
(Cooper et al., "Benchmarking Cloud Serving Systems with YCSB", SoCC'10; code
brianfrankcooper/YCSB ``site.ycsb.workloads.CoreWorkload``):

- ``requestdistribution=zipfian``: ``ScrambledZipfianGenerator(0, recordcount)`` (the
  ``insertstart + insertcount + expectednewkeys`` upper bound with no inserts), i.e. a
  ``ZipfianGenerator(0, ITEM_COUNT=10^16, theta=0.99, zetan=26.46902820178302)`` whose value is
  scrambled as ``min + fnvhash64(v) % itemcount``; a key number ``> recordcount - 1`` is
  drawn again (``CoreWorkload.nextKeynum``). The zipfian draw is Gray et al., "Quickly
  Generating Billion-Record Synthetic Databases", SIGMOD'94.
- keys: ``"user" + str(fnvhash64(keynum))`` (``insertorder=hashed``, ``zeropadding=1``).
- records: ``fieldcount=10`` fields ``field0..field9`` of ``fieldlength=100`` bytes, stored as
  one JSON object like YCSB's memcached binding (about 1.1 KB per value).
- workload A: read 0.5 / update 0.5; workload B: read 0.95 / update 0.05 (workloads/workloada,
  workloadb). Updates write all fields (``writeallfields=true``) so a value keeps its size.
- ``-target``: the client paces operations to a target throughput as YCSB's ``-target``.

The random source is ``java.util.Random`` (48-bit LCG, seed 1 as YCSB's ZipfianGenerator) so
the key sequence of a seed is the one the Java code draws.

Run ``python -m disaggsim.testbed.apps.ycsb --help``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Final

MASK48: Final = (1 << 48) - 1
MASK64: Final = (1 << 64) - 1
FNV_OFFSET_BASIS_64: Final = 0xCBF29CE484222325
FNV_PRIME_64: Final = 1099511628211
ZIPFIAN_CONSTANT: Final = 0.99
#: ScrambledZipfianGenerator.ITEM_COUNT and ZETAN (YCSB core, site.ycsb.generator).
SCRAMBLED_ITEM_COUNT: Final = 10_000_000_000_000_000
SCRAMBLED_ZETAN: Final = 26.46902820178302
FIELD_COUNT: Final = 10
FIELD_LENGTH: Final = 100
#: Read proportion of the YCSB core workloads (the rest are updates).
READ_PROPORTION: Final = {"a": 0.5, "b": 0.95}


class JavaRandom:
    """``java.util.Random``: the 48-bit linear congruential generator of the JDK."""

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ 0x5DEECE66D) & MASK48

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * 0x5DEECE66D + 0xB) & MASK48
        return self._seed >> (48 - bits)

    def next_double(self) -> float:
        """``nextDouble()``: uniform in [0, 1) with 53 random bits."""
        return ((self._next(26) << 27) + self._next(27)) * (1.0 / (1 << 53))


def _to_signed64(v: int) -> int:
    v &= MASK64
    return v - (1 << 64) if v >= 1 << 63 else v


def fnvhash64(val: int) -> int:
    """YCSB ``Utils.fnvhash64``: FNV-1a over the 8 low bytes of ``val`` (Java long), then
    ``Math.abs`` of the signed 64-bit result."""
    hashval = FNV_OFFSET_BASIS_64
    v = _to_signed64(val)
    for _ in range(8):
        octet = v & 0xFF
        v >>= 8  # arithmetic shift, as Java's >> on a long
        hashval = ((hashval ^ octet) * FNV_PRIME_64) & MASK64
    return abs(_to_signed64(hashval))


def zeta(n: int, theta: float) -> float:
    """``zetastatic(n, theta) = sum_{i=1..n} 1 / i^theta``."""
    return math.fsum(1.0 / (i**theta) for i in range(1, n + 1))


class ZipfianGenerator:
    """YCSB ``ZipfianGenerator`` over ``[min_item, max_item]`` (item ``min`` most popular).

    ``zetan`` may be given precomputed (as ScrambledZipfianGenerator does); otherwise it is
    summed, O(items).
    """

    def __init__(
        self,
        min_item: int,
        max_item: int,
        theta: float = ZIPFIAN_CONSTANT,
        zetan: float | None = None,
        rng: JavaRandom | None = None,
    ) -> None:
        self.items = max_item - min_item + 1
        self.base = min_item
        self.theta = theta
        self.zeta2theta = zeta(2, theta)
        self.alpha = 1.0 / (1.0 - theta)
        self.zetan = zeta(self.items, theta) if zetan is None else zetan
        self.eta = (1 - (2.0 / self.items) ** (1 - theta)) / (1 - self.zeta2theta / self.zetan)
        self.rng = rng if rng is not None else JavaRandom(1)
        self.next_value()  # the Java constructor draws once

    def next_value(self) -> int:
        """Next item (``nextLong(items)``)."""
        u = self.rng.next_double()
        uz = u * self.zetan
        if uz < 1.0:
            return self.base
        if uz < 1.0 + 0.5**self.theta:
            return self.base + 1
        return self.base + int(self.items * (self.eta * u - self.eta + 1) ** self.alpha)


class ScrambledZipfianGenerator:
    """YCSB ``ScrambledZipfianGenerator(min, max)``: zipfian popularity, scattered keys."""

    def __init__(self, min_item: int, max_item: int, rng: JavaRandom | None = None) -> None:
        self.min = min_item
        self.itemcount = max_item - min_item + 1
        self.gen = ZipfianGenerator(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN, rng)

    def next_value(self) -> int:
        """Next key number in ``[min, max]``."""
        return self.min + fnvhash64(self.gen.next_value()) % self.itemcount


class CoreWorkloadKeys:
    """Key chooser of the core workload for ``recordcount`` loaded records."""

    def __init__(self, recordcount: int, seed: int = 1) -> None:
        if recordcount < 1:
            raise ValueError(f"recordcount: expected >= 1, got {recordcount}")
        self.recordcount = recordcount
        self.chooser = ScrambledZipfianGenerator(0, recordcount, JavaRandom(seed))

    def next_keynum(self) -> int:
        """``CoreWorkload.nextKeynum``: redraw until the key was loaded."""
        while True:
            k = self.chooser.next_value()
            if k <= self.recordcount - 1:
                return k


def key_name(keynum: int) -> str:
    """``CoreWorkload.buildKeyName`` with hashed insert order: ``"user" + fnvhash64(k)``."""
    return f"user{fnvhash64(keynum)}"


def record_value(keynum: int, version: int) -> bytes:
    """A 10-field x 100-byte record as JSON (the memcached binding's value encoding)."""
    fields = {}
    for f in range(FIELD_COUNT):
        seed = fnvhash64(keynum * 131 + f * 7 + version)
        text = (f"{seed:020d}" * (FIELD_LENGTH // 20 + 1))[:FIELD_LENGTH]
        fields[f"field{f}"] = text
    return json.dumps(fields, separators=(",", ":")).encode()


def _client(server: str) -> object:
    from pymemcache.client.base import Client  # type: ignore[import-not-found]

    host, port = server.rsplit(":", 1)
    client = Client((host, int(port)), connect_timeout=10, timeout=60, no_delay=True)
    deadline = time.monotonic() + 30
    while True:  # the server may still be starting
        try:
            client.version()
            return client
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def load(server: str, recordcount: int, client_id: int, n_clients: int) -> dict[str, float]:
    """YCSB load phase share of this client: insert keys ``client_id, client_id+n, ...``."""
    client = _client(server)
    t0 = time.monotonic()
    n = 0
    for k in range(client_id, recordcount, n_clients):
        client.set(key_name(k), record_value(k, 0), noreply=False)  # type: ignore[attr-defined]
        n += 1
    return {"inserted": n, "load_s": time.monotonic() - t0}


def run(
    server: str,
    recordcount: int,
    workload: str,
    duration_s: float,
    target_ops_per_s: float,
    seed: int,
    operationcount: int = 0,
) -> dict[str, float]:
    """YCSB run phase for ``duration_s`` at ``target_ops_per_s`` (0 = as fast as possible);
    with ``operationcount`` > 0 it ends after that many operations (YCSB's
    ``operationcount``) if that comes first, so ``run_s`` is a job completion time.

    Returns counts and latency percentiles (µs).
    """
    if workload not in READ_PROPORTION:
        raise ValueError(f"workload: expected one of {sorted(READ_PROPORTION)}, got {workload!r}")
    client = _client(server)
    keys = CoreWorkloadKeys(recordcount, seed)
    op_rng = JavaRandom(seed + 7919)
    read_p = READ_PROPORTION[workload]
    lat_us: list[float] = []
    reads = updates = misses = 0
    t0 = time.monotonic()
    end = t0 + duration_s
    interval = 1.0 / target_ops_per_s if target_ops_per_s > 0 else 0.0
    ops = 0
    while True:
        now = time.monotonic()
        if now >= end or (operationcount and ops >= operationcount):
            break
        if interval:
            due = t0 + ops * interval
            if due > now:
                time.sleep(min(due - now, end - now))
                continue
        k = keys.next_keynum()
        start = time.monotonic()
        if op_rng.next_double() < read_p:
            if client.get(key_name(k)) is None:  # type: ignore[attr-defined]
                misses += 1
            reads += 1
        else:
            client.set(key_name(k), record_value(k, ops + 1), noreply=False)  # type: ignore[attr-defined]
            updates += 1
        lat_us.append((time.monotonic() - start) * 1e6)
        ops += 1
    lat_us.sort()

    def pct(p: float) -> float:
        return lat_us[min(len(lat_us) - 1, int(p * len(lat_us)))] if lat_us else 0.0

    return {
        "ops": ops,
        "reads": reads,
        "updates": updates,
        "read_misses": misses,
        "run_s": time.monotonic() - t0,
        "p50_us": pct(0.5),
        "p99_us": pct(0.99),
    }


def main(argv: list[str] | None = None) -> int:
    """CLI: ``load`` or ``run`` phase; prints one JSON line of statistics."""
    ap = argparse.ArgumentParser(prog="python -m disaggsim.testbed.apps.ycsb")
    ap.add_argument("phase", choices=["load", "run"])
    ap.add_argument("--server", required=True, help="memcached host:port")
    ap.add_argument("--recordcount", type=int, required=True)
    ap.add_argument("--client-id", type=int, default=0)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--workload", default="a")
    ap.add_argument("--duration-s", type=float, default=10.0)
    ap.add_argument("--target-ops-per-s", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--operationcount", type=int, default=0, help="0: run for --duration-s")
    args = ap.parse_args(argv)
    if args.phase == "load":
        stats = load(args.server, args.recordcount, args.client_id, args.clients)
    else:
        stats = run(
            args.server,
            args.recordcount,
            args.workload,
            args.duration_s,
            args.target_ops_per_s,
            args.seed,
            args.operationcount,
        )
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
