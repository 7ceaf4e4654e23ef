"""An HDD-like delay model for the swap device: seek + rotational latency + transfer.

The service time of one request of ``size_bytes`` on a disk drive is the sum of a seek, a
rotational latency and the media transfer (Ruemmler and Wilkes, "An introduction to disk
drive modeling", IEEE Computer 27(3), 1994, §"Disk drive modeling"):

- seek: ``seek_ms``, a constant. A swap area is a small contiguous partition, so the head
  moves over a few tracks, not the whole platter: the default is the single-track seek of a
  7,200 rpm drive, 1.0 ms read / 1.1 ms write typical (Hitachi Deskstar 7K320 SATA OEM
  specification, §4.4.2.3; the 5,400 rpm Travelstar 5K320 quotes the same). Its average
  seek over the whole disk is 12 ms (§4.4.2.1): pass that for a random-access model;
- rotational latency: uniform over one revolution, ``60 / rpm`` s: 8.3 ms at 7,200 rpm
  (average 4.2 ms, 7K320 §4.4.2.4), 11.1 ms at 5,400 rpm (average 5.5 ms, 5K320 Table 8);
- transfer: ``size_bytes / transfer_bytes_per_s`` (the sustained media rate; 100 MB/s by
  default, an assumption of the order of such drives, not a datasheet value).

The drive's own caches (read-ahead of the next sectors, write-back) and the seek's
dependence on distance are not modelled: every request pays a seek and a rotation. The
paper's HDD is an "HPE 1TB 6G SATA 7.2K rpm" drive (Ruan et al., papers/004, Table 1).

The swap device draws each request's delay from a distribution (``fct-sample``,
``swapdev/core/sd_delay.h``: per request size, the inverse CDF at a uniform draw, from the
largest listed size not above the request). :func:`hdd_cdf_lines` writes that distribution:
for each size, ``points`` equally likely rotational latencies at the midpoints of equal
slices of a revolution (so their mean is exactly half a revolution), plus seek and
transfer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from disaggsim.atomic import atomic_path

#: Hitachi Deskstar 7K320 (7,200 rpm) single-track seek, read, typical (ms), §4.4.2.3.
SINGLE_TRACK_SEEK_MS: Final = 1.0
DEFAULT_TRANSFER_BYTES_PER_S: Final = 100_000_000
#: Request sizes listed (bytes): every whole number of 4 KiB pages up to 512 KiB (the swap
#: device's largest merged writes were ~130 KiB, swapdev/doc/swapdev.md); a larger
#: request is served as 512 KiB (its transfer under-counted by <= 5 ms per extra MiB).
DEFAULT_SIZES: Final = tuple(4096 * k for k in range(1, 129))


def service_time_ns(
    size_bytes: int,
    rpm: float,
    seek_ms: float,
    transfer_bytes_per_s: float,
    rotation_fraction: float,
) -> float:
    """One request's service time (ns): ``seek + rotation_fraction * 60/rpm + size/rate``.

    Raises ValueError on rpm or rate <= 0, seek < 0 or a fraction outside [0, 1].
    """
    if rpm <= 0 or transfer_bytes_per_s <= 0 or seek_ms < 0 or not 0 <= rotation_fraction <= 1:
        raise ValueError(
            f"hdd model: expected rpm > 0, transfer > 0, seek >= 0, fraction in "
            f"[0, 1]; got rpm={rpm}, transfer={transfer_bytes_per_s}, "
            f"seek_ms={seek_ms}, fraction={rotation_fraction}"
        )
    return seek_ms * 1e6 + rotation_fraction * 60e9 / rpm + size_bytes * 1e9 / transfer_bytes_per_s


def mean_service_time_ns(
    size_bytes: int,
    rpm: float,
    seek_ms: float = SINGLE_TRACK_SEEK_MS,
    transfer_bytes_per_s: float = DEFAULT_TRANSFER_BYTES_PER_S,
) -> float:
    """The mean service time (ns): seek + half a revolution + transfer."""
    return service_time_ns(size_bytes, rpm, seek_ms, transfer_bytes_per_s, 0.5)


def hdd_cdf_lines(
    rpm: float,
    seek_ms: float = SINGLE_TRACK_SEEK_MS,
    transfer_bytes_per_s: float = DEFAULT_TRANSFER_BYTES_PER_S,
    sizes: Sequence[int] = DEFAULT_SIZES,
    points: int = 50,
) -> list[str]:
    """The ``fct-sample`` lines ``<bytes> <cum_prob> <fct_us>`` of the model (module doc):
    per size (ascending), ``points`` lines with cum_prob ``i/points`` and the service time
    at rotation fraction ``(i - 0.5) / points``, in us with 3 decimals (whole ns).

    Raises ValueError on bad parameters, sizes not ascending positive, or points < 1.
    """
    if points < 1 or not sizes or any(s <= 0 for s in sizes) or list(sizes) != sorted(set(sizes)):
        raise ValueError(
            f"hdd model: expected points >= 1 and ascending distinct sizes > 0, "
            f"got points={points}, sizes={list(sizes)[:5]}..."
        )
    lines = []
    for size in sizes:
        for i in range(1, points + 1):
            ns = round(
                service_time_ns(size, rpm, seek_ms, transfer_bytes_per_s, (i - 0.5) / points)
            )
            prob = "1" if i == points else f"{i / points:.9f}".rstrip("0")
            lines.append(f"{size} {prob} {ns // 1000}.{ns % 1000:03d}\n")
    return lines


def write_hdd_cdf(
    path: Path,
    rpm: float,
    seek_ms: float = SINGLE_TRACK_SEEK_MS,
    transfer_bytes_per_s: float = DEFAULT_TRANSFER_BYTES_PER_S,
) -> Path:
    """Write :func:`hdd_cdf_lines` to ``path`` atomically; returns ``path``."""
    with atomic_path(path) as tmp:
        tmp.write_text("".join(hdd_cdf_lines(rpm, seek_ms, transfer_bytes_per_s)))
    return path
