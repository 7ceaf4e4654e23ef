"""Run workloads on the latency-injection remote-memory device (paper §3.1).

Two backends share one delay model (``swapdev/core/sd_delay.h``), chosen per run with
:class:`DelayModel`; the names of the models (:data:`MODEL_NAMES`) and of the uffd
backend's policies (:data:`PAGING_POLICIES`, :data:`EVICTION_POLICIES`) are read from the
C sources' one list of each (``core/sd_models.def``, ``src/policies.def``):

- ``swap``: unmodified applications in a memory cgroup (v1) whose limit is the local
  memory; the kernel swaps to a loop device (direct I/O) on a file served by
  ``swapdev-fuse``, a RAM-backed FUSE daemon that busy-waits every request's delay. The
  daemon is mlocked and runs outside the cgroup. ``vm.page-cluster`` is set for the run
  (0: one page per swap-in, as the paper's per-page model) and restored.
- ``uffd``: ``libswapdev_uffd.so`` preloaded into the application; it keeps a local-memory
  budget itself and resolves every fault with userfaultfd (microsecond accuracy). Its
  eviction policy (``SWAPDEV_EVICTION``) is ``fifo`` (of fault-in, the default) or
  ``clock`` (a two-handed clock whose reference bits are minor refaults), see
  ``swapdev/doc/swapdev.md``, "Eviction"; its paging policy (``SWAPDEV_PAGING``) is
  ``demand`` (the paper's device, the default) or ``comex`` (COMEX's prefetching read
  buffer and batched write buffers, ``src/policy_comex.c``). Its budget is the process's
  own, or with a node segment (:func:`node_segment`, ``SWAPDEV_NODE_SHM``) one budget
  shared by every device process of an emulated node, as the swap backend's memory cgroup
  holds a node's processes to one limit (``swapdev/doc/swapdev.md``, "One budget per node").

Every machine change is pushed on a :class:`collect_env.UndoStack` with its undo (using
``disaggsim.testbed.collect_env``), so the machine is left as found on success, on error and
on SIGINT.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time
import urllib.parse
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from disaggsim import owners
from disaggsim.paths import BUILD_DIR
from disaggsim.signals import deferred_signals
from disaggsim.testbed import collect_env as env

PAGE_CLUSTER: Final = env.SETTING_FILES["vm.page-cluster"]

SWAPDEV_SRC: Final = Path(__file__).resolve().parent


def read_name_table(path: Path, macro: str) -> tuple[str, ...]:
    """The names of a C name table: the second argument of each ``MACRO(ENUM, "name", ...)``
    line of ``path`` (``core/sd_models.def``, ``src/policies.def``), in order.

    Raises ValueError naming the file if it lists no name.
    """
    names = tuple(re.findall(rf'^{macro}\(\w+, "([^"]+)"', path.read_text(), re.MULTILINE))
    if not names:
        raise ValueError(f'{path}: no {macro}(ENUM, "name", ...) line')
    return names


#: The delay models (``SWAPDEV_MODEL``), from the core's one list.
MODEL_NAMES: Final = read_name_table(SWAPDEV_SRC / "core" / "sd_models.def", "SD_MODEL")
#: What configures each model (``sd_models.def`` PARAMS, lower case): ``none``; ``rate``,
#: ``latency_ns`` and ``bandwidth_bps``; ``table``, an FCT table (``fct_file``).
MODEL_PARAMS: Final = dict(
    zip(
        MODEL_NAMES,
        (
            p.lower()
            for p in re.findall(
                r'^SD_MODEL\(\w+, "[^"]+", (\w+),',
                (SWAPDEV_SRC / "core" / "sd_models.def").read_text(),
                re.MULTILINE,
            )
        ),
        strict=True,
    )
)
#: The uffd backend's paging (fetch + write-back) policies (``SWAPDEV_PAGING``).
PAGING_POLICIES: Final = read_name_table(SWAPDEV_SRC / "src" / "policies.def", "SD_PAGING")
#: The uffd backend's replacement policies (``SWAPDEV_EVICTION``).
EVICTION_POLICIES: Final = read_name_table(SWAPDEV_SRC / "src" / "policies.def", "SD_EVICT")
#: A name of :data:`MODEL_NAMES`.
ModelKind = str
#: A name of :data:`EVICTION_POLICIES`.
EvictionPolicy = str
#: A name of :data:`PAGING_POLICIES`.
PagingPolicy = str


def check_name(value: str, names: tuple[str, ...], what: str) -> str:
    """``value`` if it is one of ``names``; else ValueError "WHAT=value: expected a, b"."""
    if value not in names:
        raise ValueError(f"{what}={value}: expected one of {', '.join(names)}")
    return value


def build_dir() -> Path:
    """The swapdev build directory, ``build/swapdev`` (``make build``; override with
    ``DISAGGSIM_SWAPDEV_BUILD``); raises FileNotFoundError if it is not built."""
    path = Path(os.environ.get("DISAGGSIM_SWAPDEV_BUILD", BUILD_DIR / "swapdev"))
    if not (path / "memtouch").exists():
        raise FileNotFoundError(f"{path}: swapdev is not built (run `make build`)")
    return path


@dataclass(frozen=True)
class DelayModel:
    """One run's delay model (``swapdev/core/sd_delay.h``).

    kind: a name of :data:`MODEL_NAMES`: ``none``; ``fixed`` (``latency_ns`` + size * 8 /
    ``bandwidth_bps`` per request, paper §3.1, rmem.c); ``link`` (the same over one shared
    link served in arrival order, ``core/sd_delay.h``); ``fct-mean`` (``fct_file``:
    ``<bytes> <fct_us>`` from ``disaggsim export-fct`` / the artifact's ``fcts_*.txt``, or
    ``<pages> <fct_ns>`` /proc/rmem_cdf lines with ``fct_format="pages-ns"``);
    ``fct-sample`` (``fct_file``: ``<bytes> <cum_prob> <fct_us>`` from
    ``disaggsim export-fct --distribution``).
    Raises ValueError on an unknown kind.
    """

    kind: ModelKind = "none"
    latency_ns: int = 0
    bandwidth_bps: int = 0
    fct_file: Path | None = None
    fct_format: Literal["bytes-us", "pages-ns"] = "bytes-us"
    seed: int = 1

    def __post_init__(self) -> None:
        check_name(self.kind, MODEL_NAMES, "SWAPDEV_MODEL")

    def env(self) -> dict[str, str]:
        """The ``SWAPDEV_*`` environment that configures the device for this model."""
        out = {
            "SWAPDEV_MODEL": self.kind,
            "SWAPDEV_LATENCY_NS": str(self.latency_ns),
            "SWAPDEV_BANDWIDTH_BPS": str(self.bandwidth_bps),
            "SWAPDEV_FCT_FORMAT": self.fct_format,
            "SWAPDEV_SEED": str(self.seed),
        }
        if self.fct_file is not None:
            out["SWAPDEV_FCT_FILE"] = str(self.fct_file)
        return out


@dataclass(frozen=True)
class Histogram:
    """A delay histogram written by the device: bucket ``[lower_ns, upper_ns)`` counts."""

    n: int
    sum_ns: int
    min_ns: int
    max_ns: int
    buckets: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def mean_ns(self) -> float:
        return self.sum_ns / self.n if self.n else 0.0

    def quantile_ns(self, q: float) -> float:
        """The q-quantile (0..1), linear within its bucket (buckets are <= 1.6% wide)."""
        if not self.n:
            raise ValueError("empty histogram")
        rank = q * self.n
        seen = 0
        for lower, upper, count in self.buckets:
            if seen + count >= rank:
                upper = min(upper, self.max_ns + 1)
                return lower + (upper - lower) * max(rank - seen, 0) / count
            seen += count
        return float(self.max_ns)


def read_histograms(path: Path) -> dict[str, Histogram]:
    """Read the device's histogram file (``SWAPDEV_HIST``): ``applied`` and ``target``.

    Format: per histogram a ``# NAME n=.. sum_ns=.. min_ns=.. max_ns=..`` line, then
    ``NAME <lower_ns> <upper_ns> <count>`` per non-empty bucket. Raises ValueError naming
    the file and line on anything else.
    """
    heads: dict[str, dict[str, int]] = {}
    rows: dict[str, list[tuple[int, int, int]]] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fields = line.split()
        try:
            if fields[0] == "#":
                heads[fields[1]] = {k: int(v) for k, v in (f.split("=") for f in fields[2:])}
                rows.setdefault(fields[1], [])
            else:
                lower, upper, count = (int(x) for x in fields[1:4])
                rows[fields[0]].append((lower, upper, count))
        except (IndexError, KeyError, ValueError):
            raise ValueError(
                f"{path}:{number}: expected '# NAME n=.. sum_ns=..' or "
                f"'NAME <lower_ns> <upper_ns> <count>', got {line!r}"
            ) from None
    return {
        name: Histogram(h["n"], h["sum_ns"], h["min_ns"], h["max_ns"], rows[name])
        for name, h in heads.items()
    }


@dataclass(frozen=True)
class RunResult:
    """One memtouch run on the device: its JSON report (``swapdev/tools/memtouch.c``), the
    delay histograms and the rmem trace path."""

    report: dict[str, float]
    histograms: dict[str, Histogram]
    trace: Path
    stderr: str

    @property
    def minor_refaults(self) -> int:
        """uffd ``clock``: faults on inactive pages, served locally with no delay (the
        ``minor`` histogram; not remote accesses, not in ``applied``/``target`` or the
        trace); 0 for ``fifo`` and the swap backend."""
        minor = self.histograms.get("minor")
        return minor.n if minor is not None else 0


def run_memtouch_uffd(
    out_dir: Path,
    mib: int,
    local_bytes: int,
    model: DelayModel,
    passes: int = 1,
    random_order: bool = False,
    timeout_s: float = 600,
    fork_check: bool = False,
    eviction: EvictionPolicy = "fifo",
    hotcold: tuple[int, int] | None = None,
    paging: PagingPolicy = "demand",
    device_env: Mapping[str, str] | None = None,
) -> RunResult:
    """Run memtouch over ``mib`` MiB with ``local_bytes`` of local memory on the uffd backend
    with replacement policy ``eviction`` (``fork_check``: a child forked after the write
    pass checks every page too; ``hotcold=(hot_pages, scan_pages)``: each of the ``passes``
    rounds reads pages ``0..hot_pages-1``, then the next ``scan_pages`` of a cold stream
    over the rest, ``swapdev/tools/memtouch.c``) and paging policy ``paging``;
    ``device_env``: more ``SWAPDEV_*`` variables (e.g. the comex parameters).

    Raises RuntimeError (with the device's stderr) if memtouch fails or finds bad pages,
    ValueError on an unknown policy name.
    """
    build = build_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    trace, hist = out_dir / "uffd.rmem", out_dir / "uffd.hist"
    run_env = {
        **os.environ,
        **model.env(),
        "SWAPDEV_LOCAL_BYTES": str(local_bytes),
        "SWAPDEV_EVICTION": check_name(eviction, EVICTION_POLICIES, "SWAPDEV_EVICTION"),
        "SWAPDEV_PAGING": check_name(paging, PAGING_POLICIES, "SWAPDEV_PAGING"),
        "SWAPDEV_TRACE": str(trace),
        "SWAPDEV_HIST": str(hist),
        **(device_env or {}),
    }
    argv = [str(build / "memtouch"), str(mib), str(passes)] + (["--random"] if random_order else [])
    argv += ["--fork"] if fork_check else []
    argv += ["--hotcold", f"{hotcold[0]},{hotcold[1]}"] if hotcold else []
    # LD_PRELOAD only in memtouch's own environment (env(1) is not preloaded).
    proc = subprocess.run(
        ["env", f"LD_PRELOAD={build / 'libswapdev_uffd.so'}", *argv],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"memtouch (uffd) failed ({proc.returncode}): {proc.stdout}{proc.stderr}"
        )
    return RunResult(json.loads(proc.stdout), read_histograms(hist), trace, proc.stderr)


#: Debian's jemalloc (package libjemalloc2), preloaded after the uffd device by
#: :func:`uffd_env` so that an application's heap comes from mmap calls the device sees.
JEMALLOC: Final = Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")


def uffd_env(
    model: DelayModel,
    local_bytes: int,
    jemalloc: bool,
    eviction: EvictionPolicy = "fifo",
    paging: PagingPolicy = "demand",
    node_shm: str | None = None,
    shared_local_fraction: float | None = None,
) -> dict[str, str]:
    """The environment that runs a process on the uffd backend with ``local_bytes`` of
    local memory, replacement policy ``eviction`` and paging policy ``paging``:
    ``LD_PRELOAD`` of the device (and jemalloc) plus the model's variables. With
    ``node_shm`` (:attr:`NodeSegment.name`) ``local_bytes`` is the budget of the whole node:
    every process started with this environment, and every process they fork or exec on
    the device, shares it; without, each such process has ``local_bytes`` of its own.
    With ``shared_local_fraction`` (in (0, 1]) the device also registers shared anonymous
    mappings (``SWAPDEV_SHARED_LOCAL_FRACTION``, ``swapdev/src/uffd_shmem.c``): with
    ``node_shm`` their pages count in the node's budget (once, whichever processes map
    them); without, each such mapping has one budget, that fraction of its pages, for all
    the processes mapping it.

    The device registers only mmap calls made through the PLT (``uffd_preload.c``), so
    glibc malloc's own large blocks stay local; with ``jemalloc`` the heap comes from
    jemalloc's mmap calls, which the device sees. Set ``SWAPDEV_TRACE``/``SWAPDEV_HIST``
    on top for outputs. Raises RuntimeError if jemalloc is asked for and not installed,
    FileNotFoundError if swapdev is not built, ValueError on an unknown policy.
    """
    preload = [str(build_dir() / "libswapdev_uffd.so")]
    if jemalloc:
        if not JEMALLOC.exists():
            raise RuntimeError(f"{JEMALLOC}: not installed (apt-get install libjemalloc2)")
        preload.append(str(JEMALLOC))
    shared = (
        {}
        if shared_local_fraction is None
        else {"SWAPDEV_SHARED_LOCAL_FRACTION": repr(float(shared_local_fraction))}
    )
    return {
        **model.env(),
        "SWAPDEV_LOCAL_BYTES": str(local_bytes),
        "SWAPDEV_TRACE": "",
        "SWAPDEV_EVICTION": check_name(eviction, EVICTION_POLICIES, "SWAPDEV_EVICTION"),
        "SWAPDEV_PAGING": check_name(paging, PAGING_POLICIES, "SWAPDEV_PAGING"),
        "LD_PRELOAD": " ".join(preload),
        **shared,
        **({"SWAPDEV_NODE_SHM": node_shm} if node_shm else {}),
    }


#: Where POSIX shared memory objects live; every node segment is named NODE_SHM_PREFIX,
#: the creating process's pid, "-", a random suffix, "-", its node's namespace inode.
SHM_DIR: Final = Path("/dev/shm")
NODE_SHM_PREFIX: Final = "swapdev-node-"


def remove_shm_file(name: str) -> str:
    """Remove file or directory ``name`` of :data:`SHM_DIR` (gone already: nothing to do);
    returns "" (no process runs in a file)."""
    path = SHM_DIR / name
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    return ""


#: Files and directories in /dev/shm, each recording its owner (:mod:`disaggsim.owners`):
#: the node segments (:func:`per_node_segments`) and the memory reference's directory of
#: ``disaggsim hpe-cm`` (``swapdev/hpe_cm.py``). A SIGKILLed run's are reaped by the next
#: command that makes owned state; they hold RAM (tmpfs) until removed.
SHM_FILE: Final = owners.Kind(
    "shm",
    lambda name: f"shared memory file {SHM_DIR / name}",
    lambda name: os.path.lexists(SHM_DIR / name),
    remove_shm_file,
)

#: The node segment's header as ``src/uffd_node.h`` lays it out (struct sd_node, x86-64):
#: state, magic, budget_pages, resident, clock, peak, fallbacks, reclaimed.
NODE_HEADER_FORMAT: Final = "<IIQQQQQQ"
NODE_MAGIC: Final = 0x314E4453
#: The uffd device's default eviction batch (``SWAPDEV_EVICT_BATCH``, the kernel's
#: SWAP_CLUSTER_MAX): a node's count may pass its budget by less than one batch.
EVICT_BATCH_PAGES: Final = 32


@dataclass(frozen=True)
class NodeCounters:
    """A node segment's counters (``src/uffd_node.h``), in 4 KiB pages: the node's budget,
    its local pages now, the largest count right after a fault (``peak_pages``), faults
    that evicted locally because no other process freed pages in time (``fallbacks``) and
    slots of processes gone (killed, exec'd without the device) that were reclaimed."""

    budget_pages: int
    resident_pages: int
    peak_pages: int
    fallbacks: int
    reclaimed_slots: int


@dataclass(frozen=True)
class NodeSegment:
    """One node's segment: ``name`` for ``SWAPDEV_NODE_SHM`` ("/" + file name), ``path``
    its file under :data:`SHM_DIR`."""

    name: str
    path: Path

    def counters(self) -> NodeCounters | None:
        """The counters now; None if no device process has set the segment up yet.

        Raises RuntimeError if the file is not a node segment (wrong magic)."""
        size = struct.calcsize(NODE_HEADER_FORMAT)
        with open(self.path, "rb") as handle:
            head = handle.read(size)
        if len(head) < size:
            return None
        state, magic, budget, resident, _clock, peak, fallbacks, reclaimed = struct.unpack(
            NODE_HEADER_FORMAT, head
        )
        if state != 2:
            return None
        if magic != NODE_MAGIC:
            raise RuntimeError(f"{self.path}: not a swapdev node segment (magic {magic:#x})")
        return NodeCounters(budget, resident, peak, fallbacks, reclaimed)


def node_segments(pid: int | None = None) -> list[Path]:
    """The node segment files in :data:`SHM_DIR` (those created by process ``pid`` only,
    if given), sorted."""
    stem = NODE_SHM_PREFIX + ("" if pid is None else f"{pid}-")
    return sorted(SHM_DIR.glob(stem + "*"))


def netns_inode(path: Path = Path("/proc/self/ns/net")) -> int:
    """The inode number of a network namespace file (``/run/netns/NAME``, a process's
    ``/proc/PID/ns/net``): what the device puts for ``%n`` in ``SWAPDEV_NODE_SHM``."""
    return os.stat(path).st_ino


@contextlib.contextmanager
def per_node_segments(netns_inodes: list[int]) -> Iterator[tuple[str, list[NodeSegment]]]:
    """New, empty node segments, one per emulated node whose processes run in the network
    namespace of inode ``netns_inodes[i]``; yields the ``SWAPDEV_NODE_SHM`` value that names
    each node's own (with ``%n``, which the device replaces by its network namespace's
    inode: one environment for every node, as Spark's ``spark.executorEnv``) and the
    segments in node order. Each is unlinked on exit whatever happens (device processes
    that still map it keep their mapping); mode 0666, so that a process that drops
    privileges (memcached runs as "nobody") opens it; the first device process sets it up
    with its ``SWAPDEV_LOCAL_BYTES``. Each records this process as its owner
    (:data:`SHM_FILE`, :func:`disaggsim.testbed.collect_env.make_owned`): state that a
    process killed with SIGKILL left (its segments, its run cgroups, ...) is reaped first,
    one stderr line each. Root (the owner records are under ``/run``).

    Raises ValueError if two nodes share a namespace (their segments would be one);
    RuntimeError as :func:`disaggsim.testbed.collect_env.make_owned`."""
    if len(set(netns_inodes)) != len(netns_inodes):
        raise ValueError(
            f"nodes share a network namespace (inodes {netns_inodes}): one "
            "node segment each needs one namespace each"
        )
    stem = f"{NODE_SHM_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}-"
    names = [f"{stem}{inode}" for inode in netns_inodes]
    with env.UndoStack() as stack:
        env.make_owned(stack, SHM_FILE, names, _create_node_segment, remove_shm_file)
        yield f"/{stem}%n", [NodeSegment(f"/{name}", SHM_DIR / name) for name in names]


def _create_node_segment(name: str) -> None:
    """Create the empty node segment ``name`` in :data:`SHM_DIR`, mode 0666 whatever the
    umask."""
    path = SHM_DIR / name
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o666))
    path.chmod(0o666)


@contextlib.contextmanager
def node_segment() -> Iterator[NodeSegment]:
    """One node segment for processes that all run in this process's network namespace
    (a command and its children); as :func:`per_node_segments`, with its plain name."""
    with per_node_segments([netns_inode()]) as (_, (segment,)):
        yield segment


def recorder_env(local_bytes: int) -> dict[str, str]:
    """The environment that runs a process on the uffd backend as a paging recorder: no
    delay, ``local_bytes`` of local memory, jemalloc (so that the heap is seen), FIFO
    eviction; the collector adds ``SWAPDEV_TRACE`` (``disaggsim collect`` with
    ``paging_recorder = "swapdev-uffd"``). Raises as :func:`uffd_env`."""
    return uffd_env(DelayModel("none"), local_bytes, jemalloc=True)


@contextlib.contextmanager
def page_cluster(value: int) -> Iterator[None]:
    """Set the global ``vm.page-cluster`` (swap readahead = 2**value pages) and restore it
    (:func:`disaggsim.testbed.collect_env.change_setting`: a SIGKILLed owner's value is
    restored by the next command)."""
    with env.UndoStack() as stack:
        env.change_setting(stack, "vm.page-cluster", str(value))
        yield


@dataclass
class SwapDevice:
    """A running swap backend: the daemon, its loop device, and the limited memory cgroup."""

    daemon: subprocess.Popen[bytes]
    loop: str
    memcg: Path
    trace: Path
    hist: Path
    log: Path


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if proc.poll() is not None:
            raise RuntimeError(f"swapdev-fuse exited ({proc.returncode}) before serving {path}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"swapdev-fuse: {path} did not appear in {timeout_s} s")
        time.sleep(0.05)


def _umount_if_mounted(mountpoint: Path) -> None:
    if env.is_mountpoint(mountpoint):
        env.sh(["umount", "-l", str(mountpoint)], check=False)


def _loops_on(img: Path) -> list[str]:
    """The loop devices attached to file ``img`` (:func:`env.loops_backed_by`)."""
    return env.loops_backed_by(lambda backing: backing == img)


def _daemons_on(mnt: Path) -> list[int]:
    """The ``swapdev-fuse`` processes serving mount point ``mnt`` (their command line is
    the daemon and ``mnt``, :func:`fuse_daemon`)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except OSError:
            continue
        if len(argv) == 2 and argv[0].endswith(b"/swapdev-fuse") and argv[1] == bytes(mnt):
            pids.append(int(proc.name))
    return pids


def _swap_device_exists(name: str) -> bool:
    mnt = Path(urllib.parse.unquote(name))
    return bool(_loops_on(mnt / "dev.img") or _daemons_on(mnt) or env.is_mountpoint(mnt))


def _reap_swap_device(name: str, timeout_s: float = 30.0) -> str:
    """Reaper of :data:`SWAP_DEVICE`: undo a dead owner's device chain on mount point
    ``unquote(name)`` in the order of its undo stack: ``swapoff`` each loop device on its
    ``dev.img`` that is a swap area (the daemon still serves the pages it pages back in),
    detach it, stop the daemon (SIGTERM; SIGKILL after ``timeout_s``), unmount. Run after
    the owner's memory cgroups are reaped (:data:`disaggsim.owners.KINDS` order): their
    processes' swapped pages are freed, not paged in. Returns what it did, " (swapped off
    and detached /dev/loop3, stopped 1 daemon(s))".

    Raises RuntimeError if a command fails (a RestoreError naming each loop device that
    could not be swapped off or detached, after the others were) or the daemon outlives
    SIGKILL."""
    mnt = Path(urllib.parse.unquote(name))
    done = env.swapoff_and_detach(_loops_on(mnt / "dev.img"))
    daemons = _daemons_on(mnt)
    deadline = time.monotonic() + timeout_s
    sig = signal.SIGTERM  # the daemon writes its trace and histograms at its exit
    while alive := [pid for pid in daemons if owners.pid_alive(pid)]:
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL:
                raise RuntimeError(f"swapdev-fuse on {mnt}: pids {alive} outlive SIGKILL")
            sig, deadline = signal.SIGKILL, time.monotonic() + 5.0
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        time.sleep(0.1)
    _umount_if_mounted(mnt)
    return f" ({', '.join([*done, f'stopped {len(daemons)} daemon(s)'])})"


#: The swap backend's device chain on one mount point (:func:`fuse_daemon`: the daemon,
#: its FUSE mount, the loop device on its file and the swap area on that, as
#: :func:`fuse_loop_device` and :func:`swap_device` add them), named by the mount point
#: (``urllib.parse.quote``, no "/"): one record, written before the daemon starts and
#: removed after the mount is gone, so that a SIGKILLed owner's chain is undone whole
#: and in order by the next command (:func:`_reap_swap_device`).
SWAP_DEVICE: Final = owners.Kind(
    "swapdev",
    lambda name: f"swap device on {urllib.parse.unquote(name)}",
    _swap_device_exists,
    _reap_swap_device,
)


def fuse_daemon(
    stack: env.UndoStack, work: Path, size_bytes: int, model: DelayModel, queue_depth: int = 1
) -> SwapDevice:
    """Start ``swapdev-fuse`` (``size_bytes`` of RAM, mlocked as touched) on ``work/mnt``,
    serving ``queue_depth`` requests at once; undo on ``stack``. ``loop`` and ``memcg``
    are unset. The chain on ``work/mnt`` (this daemon, and the loop device and swap area
    the caller adds) records this process as its owner (:data:`SWAP_DEVICE`): dead
    owners' state is reaped first (:func:`disaggsim.testbed.collect_env.make_owned`).

    Raises RuntimeError if the daemon exits before serving ``dev.img``, or as
    :func:`disaggsim.testbed.collect_env.make_owned`.
    """
    build = build_dir()
    work.mkdir(parents=True, exist_ok=True)
    mnt = work.resolve() / "mnt"
    mnt.mkdir(exist_ok=True)
    # The record's undo is pushed first: it goes last, once the chain is undone.
    env.make_owned(
        stack,
        SWAP_DEVICE,
        [urllib.parse.quote(str(mnt), safe="")],
        lambda name: None,
        lambda name: None,
    )
    trace, hist, log = work / "swap.rmem", work / "swap.hist", work / "swapdev-fuse.log"
    daemon_env = {
        **model.env(),
        "SWAPDEV_SIZE_BYTES": str(size_bytes),
        "SWAPDEV_QUEUE_DEPTH": str(queue_depth),
        "SWAPDEV_TRACE": str(trace),
        "SWAPDEV_HIST": str(hist),
    }
    stack.callback(_umount_if_mounted, mnt)  # runs last: a killed daemon leaves its mount
    with deferred_signals():  # no signal between a start and the push of its stop
        logf = open(log, "ab")  # noqa: SIM115 - closed by the stack
        stack.callback(logf.close)
        daemon = subprocess.Popen(
            [str(build / "swapdev-fuse"), str(mnt)],
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **daemon_env},
        )
        stack.callback(env.stop_process, daemon, 30.0)
    _wait_for(mnt / "dev.img", daemon, 10.0)
    return SwapDevice(daemon, "", Path(), trace, hist, log)


def fuse_loop_device(
    stack: env.UndoStack, work: Path, size_bytes: int, model: DelayModel, queue_depth: int = 1
) -> SwapDevice:
    """:func:`fuse_daemon` and a direct-I/O loop device on its ``dev.img``; undo on
    ``stack``. ``memcg`` is unset.

    Raises RuntimeError if the daemon exits or ``losetup`` fails.
    """
    dev = fuse_daemon(stack, work, size_bytes, model, queue_depth)
    img = work.resolve() / "mnt" / "dev.img"  # as the daemon serves it (fuse_daemon)
    with deferred_signals():
        dev.loop = env.sh(["losetup", "--find", "--show", "--direct-io=on", str(img)]).strip()
        stack.callback(env.sh, ["losetup", "-d", dev.loop], False)
    return dev


def swap_device(
    stack: env.UndoStack,
    work: Path,
    size_bytes: int,
    limit_bytes: int,
    model: DelayModel,
    name: str = "disaggsim-swapdev",
    queue_depth: int = 1,
) -> SwapDevice:
    """Start the swap backend; every step's undo goes on ``stack`` (root only).

    :func:`fuse_loop_device` of ``size_bytes`` serving ``queue_depth`` requests at once,
    enabled as swap at the highest priority; zswap off; memory cgroup ``name`` limited to
    ``limit_bytes``. Set ``vm.page-cluster`` with :func:`page_cluster`.

    Raises:
        RuntimeError: another swap area is active, the cgroup exists, or a step failed.
    """
    dev = fuse_loop_device(stack, work, size_bytes, model, queue_depth)
    env.disable_zswap(stack)
    env.swap_area(stack, os.path.basename(dev.loop))
    dev.memcg = env.memcg_group(stack, name)
    (dev.memcg / "memory.limit_in_bytes").write_text(str(limit_bytes))
    return dev


def run_in_memcg(
    memcg: Path, argv: list[str], timeout_s: float, extra_env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` inside memory cgroup ``memcg`` (it joins before exec); capture output."""
    script = 'echo $$ > "$0" && exec "$@"'
    return subprocess.run(
        ["sh", "-c", script, str(memcg / "cgroup.procs"), *argv],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, **(extra_env or {})},
    )


def run_memtouch_swap(
    work: Path,
    mib: int,
    limit_bytes: int,
    model: DelayModel,
    passes: int = 1,
    random_order: bool = False,
    swap_bytes: int | None = None,
    page_cluster_value: int = 0,
    timeout_s: float = 600,
) -> RunResult:
    """Run memtouch over ``mib`` MiB in a cgroup of ``limit_bytes`` on the swap backend.

    Sets up and tears down the whole device (root only). Raises RuntimeError if memtouch
    fails or finds bad pages.
    """
    size = swap_bytes if swap_bytes is not None else 2 * mib * 2**20
    argv = [str(build_dir() / "memtouch"), str(mib), str(passes)]
    argv += ["--random"] if random_order else []
    with env.UndoStack() as stack:
        stack.enter_context(page_cluster(page_cluster_value))
        dev = swap_device(stack, work, size, limit_bytes, model)
        proc = run_in_memcg(dev.memcg, argv, timeout_s)
        stack.close()  # daemon exits: trace and histogram written
        log = dev.log.read_text(errors="replace")
        if proc.returncode != 0:
            raise RuntimeError(
                f"memtouch (swap) failed ({proc.returncode}): {proc.stdout}{proc.stderr}\n{log}"
            )
        return RunResult(json.loads(proc.stdout), read_histograms(dev.hist), dev.trace, log)


#: Taken around runs that change swap, loop devices, memcg or sysctls (shared with the
#: collector's system tests).
SYSTEM_LOCK: Final = Path("/run/lock/disaggsim-system.lock")


@contextlib.contextmanager
def system_lock(timeout_s: float = 1800) -> Iterator[None]:
    """Hold the machine-state lock (``flock`` on :data:`SYSTEM_LOCK`) for the block.

    Raises TimeoutError if another holder keeps it for ``timeout_s``.
    """
    import fcntl

    with open(SYSTEM_LOCK, "a") as handle:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{SYSTEM_LOCK}: held by another run for {timeout_s} s"
                    ) from None
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def comex_counters(stderr: str) -> dict[str, int]:
    """The comex policy's counters from the device's stderr lines (``src/policy_comex.c``
    ``comex_finish``, one per process that paged): ``reads``, ``prefetch_pages``,
    ``read_hits``, ``write_hits``, ``prefetched``, ``prefetched_unused``,
    ``write_batches``, ``write_pages``, ``full_waits``, summed over the lines
    (``prefetch_pages``, P, is the first line's); {} if the run printed none (no paging,
    or another policy)."""
    keys = (
        "reads",
        "prefetch_pages",
        "read_hits",
        "write_hits",
        "prefetched",
        "prefetched_unused",
        "write_batches",
        "write_pages",
        "full_waits",
    )
    out: dict[str, int] = {}
    for m in re.finditer(
        r"swapdev comex: (\d+) reads of (\d+) pages, (\d+) read-buffer hits, (\d+) "
        r"write-buffer hits, (\d+) prefetched, (\d+) prefetched unused, (\d+) write "
        r"batches \((\d+) pages\), (\d+) write-buffer-full waits",
        stderr,
    ):
        for key, value in zip(keys, (int(x) for x in m.groups()), strict=True):
            if key == "prefetch_pages":
                out.setdefault(key, value)
            else:
                out[key] = out.get(key, 0) + value
    return out


def fixed_delay_ns(latency_ns: int, bandwidth_bps: int, size_bytes: int) -> int:
    """The ``fixed`` model's delay of one request (the C core's formula, for checks):
    ``latency_ns + size_bytes * 8 * 1e9 // bandwidth_bps`` (no bandwidth term if 0)."""
    if bandwidth_bps == 0:
        return latency_ns
    return latency_ns + size_bytes * 8 * 10**9 // bandwidth_bps
