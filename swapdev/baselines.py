"""Local-swap baselines of COMEX's evaluation as delay models of the swap device.

COMEX (Srinuan, Yuan, Tzeng, IEEE TPDS 2020; ``/work/shared/papers/002_*.txt``) reports
its speed-up over the same host swapping to a local disk (§5.1.2, Fig. 13: "Western
Digital 2-TB 5,400RPM SATA hard disk drive with 64 MB buffer cache") and to a SATA SSD
(§5.3.5, Fig. 17: "SATA Transcend 64 GB SSD340", "530 MB/s read bandwidth"). Here each
is a delay model of the device (``swapdev/core/sd_models.def``), asked per request:

- ``hdd-5400``: seek + rotational latency + transfer (:mod:`disaggsim.swapdev.hdd_model`,
  Ruemmler and Wilkes 1994) at 5,400 rpm, a uniformly drawn rotation over one
  revolution (11.1 ms; mean 5.56 ms), the single-track seek of 1.0 ms (Hitachi Travelstar
  5K320, the 5,400 rpm sheet hdd_model cites: a swap area is a few tracks wide) and a
  100 MB/s media rate. WD's sheet for its 2 TB 5,400 rpm class drive (WD20EZRZ, 64 MB
  cache) gives no seek time or media rate, so those two are the cited 5K320 value and
  hdd_model's stated assumption. Written as an ``fct-sample`` table; mean for a 4 KiB
  page 6.60 ms. The drive's cache and sequential shortcuts are not modelled (every
  request seeks and rotates), so the baseline is pessimistic for sequential swapping.
- ``ssd-sata``: ``fixed``, 50 µs + size / 530 MB/s per request: the read bandwidth the
  paper gives for its SSD340, and a SATA SSD's typical 4 KiB read latency (Intel SSD DC
  S3500 product specification, "Latency: Read 50 µs, typical"; Transcend's SSD340 sheet
  states none). 57.7 µs for a 4 KiB page. Writes are timed as reads (the device's
  models do not tell the two apart by rate).

Both are run with the ``demand`` paging policy (one 4 KiB swap-in per fault, one
swap-out per contiguous run of an eviction batch), which has no swap readahead: Linux
3.10 reads 8 pages per swap fault (paper §5.2.2), so against a real kernel's disk swap the
speed-ups measured here are upper bounds (README, bench/RESULTS.md "COMEX (#23)").
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal, get_args

from disaggsim.swapdev import device, hdd_model

BaselineName = Literal["hdd-5400", "ssd-sata"]
BASELINE_NAMES: Final[tuple[str, ...]] = get_args(BaselineName)

#: The paging policy a baseline runs with: Linux's swap, one page per fault (module doc).
BASELINE_PAGING: Final = "demand"
#: §5.1.2: "5,400RPM SATA hard disk drive".
HDD_RPM: Final = 5400
#: §5.3.5: the SSD340's "530 MB/s read bandwidth", in bit/s for the ``fixed`` model.
SSD_BANDWIDTH_BPS: Final = 530_000_000 * 8
#: Intel SSD DC S3500 product specification: read latency 50 µs (typical).
SSD_READ_LATENCY_NS: Final = 50_000


def baseline_model(name: str, table_dir: Path) -> device.DelayModel:
    """The delay model of baseline ``name`` (module doc); an HDD's ``fct-sample`` table is
    ``table_dir/<name>.cdf`` (written by :func:`write_tables`, not here).

    Raises ValueError on an unknown name.
    """
    if name == "hdd-5400":
        return device.DelayModel("fct-sample", fct_file=table_dir / f"{name}.cdf")
    if name == "ssd-sata":
        return device.DelayModel(
            "fixed", latency_ns=SSD_READ_LATENCY_NS, bandwidth_bps=SSD_BANDWIDTH_BPS
        )
    raise ValueError(f"baseline={name}: expected one of {', '.join(BASELINE_NAMES)}")


def write_tables(names: list[str], table_dir: Path) -> None:
    """Write the ``fct-sample`` table of each HDD baseline in ``names`` to ``table_dir``
    (atomically; the directory is created)."""
    for name in names:
        if name == "hdd-5400":
            table_dir.mkdir(parents=True, exist_ok=True)
            hdd_model.write_hdd_cdf(table_dir / f"{name}.cdf", HDD_RPM)
