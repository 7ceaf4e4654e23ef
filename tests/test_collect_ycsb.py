"""YCSB core-workload key chooser (testbed/apps/ycsb.py) against the JDK and analytic values."""

from __future__ import annotations

from collections import Counter

import pytest
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture

from disaggsim.testbed.apps.ycsb import (
    SCRAMBLED_ZETAN,
    CoreWorkloadKeys,
    JavaRandom,
    ScrambledZipfianGenerator,
    ZipfianGenerator,
    fnvhash64,
    key_name,
    record_value,
    zeta,
)


def test_java_random_matches_jdk() -> None:
    # `new java.util.Random(1).nextDouble()` twice, printed by OpenJDK 17 on this machine.
    rng = JavaRandom(1)
    assert rng.next_double() == 0.7308781907032909
    assert rng.next_double() == 0.41008081149220166


@pytest.mark.parametrize(
    ("val", "expected"),
    [  # YCSB Utils.fnvhash64 compiled and run with OpenJDK 17 on this machine.
        (0, 6284781860667377211),
        (1, 8517097267634966620),
        (12345, 1792800413050876852),
        (-5, 8164698058649250233),
    ],
)
def test_fnvhash64_matches_jdk(val: int, expected: int) -> None:
    assert fnvhash64(val) == expected


def test_zeta_small_exact() -> None:
    # zeta(2, 1) = 1 + 1/2; zeta(3, 0) = 3.
    assert zeta(2, 1.0) == 1.5
    assert zeta(3, 0.0) == 3.0


def test_zipfian_head_probabilities() -> None:
    # Gray et al.'s generator returns item 0 iff u*zetan < 1 and item 1 iff
    # 1 <= u*zetan < 1 + 0.5^theta: exactly P0 = 1/zetan, P1 = 0.5^theta/zetan.
    n, theta, draws = 1000, 0.99, 200_000
    gen = ZipfianGenerator(0, n - 1, theta, rng=JavaRandom(42))
    counts = Counter(gen.next_value() for _ in range(draws))
    zn = zeta(n, theta)
    for item, p in ((0, 1 / zn), (1, 0.5**theta / zn)):
        sigma = (p * (1 - p) / draws) ** 0.5
        assert abs(counts[item] / draws - p) < 5 * sigma, item
    assert max(counts) <= n - 1 and min(counts) >= 0


def test_scrambled_zipfian_hottest_key() -> None:
    # The hottest key is fnvhash64(0) % itemcount with probability 1/ZETAN = 3.78 %.
    items, draws = 10_001, 100_000
    gen = ScrambledZipfianGenerator(0, items - 1, JavaRandom(7))
    counts = Counter(gen.next_value() for _ in range(draws))
    hot = fnvhash64(0) % items
    p = 1 / SCRAMBLED_ZETAN
    assert counts.most_common(1)[0][0] == hot
    assert abs(counts[hot] / draws - p) < 5 * (p * (1 - p) / draws) ** 0.5


def test_core_workload_keys_in_range_and_names() -> None:
    keys = CoreWorkloadKeys(500, seed=3)
    ks = [keys.next_keynum() for _ in range(5000)]
    assert min(ks) >= 0 and max(ks) <= 499
    assert key_name(0) == "user6284781860667377211"


def test_record_is_ten_fields_of_100_bytes() -> None:
    import json

    rec = json.loads(record_value(12, 0))
    assert sorted(rec) == [f"field{i}" for i in range(10)]
    assert all(len(v) == 100 for v in rec.values())
    assert record_value(12, 0) != record_value(12, 1)


def test_core_workload_rejects_empty() -> None:
    with pytest.raises(ValueError, match="recordcount"):
        CoreWorkloadKeys(0)
