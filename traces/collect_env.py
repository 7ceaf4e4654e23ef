"""System resources of an emulated cluster, each set up with its undo on an ExitStack.

Every function here changes one piece of machine state and pushes the callback that undoes
it onto the caller's :class:`contextlib.ExitStack`, so the collector leaves the machine as it
found it on success, on an exception and on SIGINT/SIGTERM (the stack unwinds in reverse).

- network: one namespace per node (``dsim-nN``, address ``10.77.0.(N+1)/24`` on ``eth0``)
  and a switch namespace (``dsim-sw``) holding a Linux bridge and the host ends of the veth
  pairs (``vethN``); the root namespace is not touched, nothing is routed outside.
- memory: a memcg v1 group per node (``/sys/fs/cgroup/memory/disaggsim-nodeN``).
- storage: loop devices on sparse files, an ext4 data disk per node, one swap area.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

MEMCG_ROOT: Final = Path("/sys/fs/cgroup/memory")
TRACEFS: Final = Path("/sys/kernel/tracing")
SWITCH_NS: Final = "dsim-sw"
SUBNET_PREFIX: Final = "10.77.0."


def sh(cmd: Sequence[str], check: bool = True) -> str:
    """Run ``cmd``; return stdout. Raises RuntimeError with the command and stderr on failure."""
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"command failed ({proc.returncode}): {' '.join(cmd)}: {proc.stderr.strip()}"
        )
    return proc.stdout


def node_ns(node: int) -> str:
    """Network namespace name of ``node``."""
    return f"dsim-n{node}"


def node_ip(node: int) -> str:
    """IPv4 address of ``node`` (``10.77.0.(node+1)``)."""
    return f"{SUBNET_PREFIX}{node + 1}"


def ns_exec(ns: str) -> list[str]:
    """Command prefix running a program inside network namespace ``ns``."""
    return ["ip", "netns", "exec", ns]


def ensure_tracefs(stack: contextlib.ExitStack) -> Path:
    """Mount tracefs at /sys/kernel/tracing unless mounted; unmount on unwind if we did."""
    if not (TRACEFS / "trace_pipe").exists():
        sh(["mount", "-t", "tracefs", "nodev", str(TRACEFS)])
        stack.callback(sh, ["umount", str(TRACEFS)])
    return TRACEFS


def make_cluster_network(stack: contextlib.ExitStack, n_nodes: int) -> None:
    """Create the switch namespace with bridge ``br0`` and one namespace + veth per node.

    IPv6 is disabled inside the new namespaces so that the captures hold only the cluster's
    IPv4 traffic (no router solicitations). Deleting a namespace deletes its interfaces.

    Raises:
        RuntimeError: a namespace of that name exists already (another collection running).
    """
    existing = sh(["ip", "netns", "list"]).split()
    names = [SWITCH_NS] + [node_ns(i) for i in range(n_nodes)]
    for name in names:
        if name in existing:
            raise RuntimeError(f"network namespace {name} exists: is another collection running?")
    for name in names:
        sh(["ip", "netns", "add", name])
        stack.callback(sh, ["ip", "netns", "del", name], False)
        sh(ns_exec(name) + ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
        sh(ns_exec(name) + ["sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"])
        sh(ns_exec(name) + ["ip", "link", "set", "lo", "up"])
    sw = ns_exec(SWITCH_NS)
    sh(sw + ["ip", "link", "add", "br0", "type", "bridge"])
    sh(sw + ["ip", "link", "set", "br0", "up"])
    for i in range(n_nodes):
        ns = node_ns(i)
        sh(sw + ["ip", "link", "add", f"veth{i}", "type", "veth", "peer", "name", "eth0",
                 "netns", ns])
        sh(sw + ["ip", "link", "set", f"veth{i}", "master", "br0", "up"])
        sh(ns_exec(ns) + ["ip", "addr", "add", f"{node_ip(i)}/24", "dev", "eth0"])
        sh(ns_exec(ns) + ["ip", "link", "set", "eth0", "up"])
    # Bridge ports forward at once (STP off); wait until every link reports carrier.
    deadline = time.monotonic() + 10
    for i in range(n_nodes):
        while "LOWER_UP" not in sh(ns_exec(node_ns(i)) + ["ip", "link", "show", "eth0"]):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{node_ns(i)}: eth0 has no carrier")
            time.sleep(0.05)


def loop_device(stack: contextlib.ExitStack, backing: Path, size_bytes: int) -> str:
    """Create a sparse file of ``size_bytes`` and attach a loop device (direct I/O) to it.

    Returns the device name (e.g. ``loop3``); detaches it and deletes the file on unwind.
    """
    with open(backing, "wb") as fh:
        fh.truncate(size_bytes)
    stack.callback(backing.unlink, missing_ok=True)
    dev = sh(["losetup", "--find", "--show", "--direct-io=on", str(backing)]).strip()
    stack.callback(sh, ["losetup", "-d", dev], False)
    return os.path.basename(dev)


def ext4_disk(stack: contextlib.ExitStack, dev: str, mountpoint: Path) -> None:
    """Make an ext4 file system on ``/dev/DEV`` and mount it at ``mountpoint`` (unmounted on
    unwind)."""
    sh(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", f"/dev/{dev}"])
    mountpoint.mkdir(parents=True, exist_ok=True)
    sh(["mount", "-o", "noatime", f"/dev/{dev}", str(mountpoint)])
    stack.callback(sh, ["umount", str(mountpoint)], False)


def swap_area(stack: contextlib.ExitStack, dev: str) -> None:
    """``mkswap`` + ``swapon`` on ``/dev/DEV`` at the highest priority; ``swapoff`` on unwind.

    Raises:
        RuntimeError: another swap area is active (the paging trace would miss its pages).
    """
    active = Path("/proc/swaps").read_text().splitlines()[1:]
    if active:
        raise RuntimeError(f"/proc/swaps: swap already active ({active[0].split()[0]}); "
                           "swapoff it first so every swap-out lands on the traced device")
    sh(["mkswap", "-q", f"/dev/{dev}"])
    sh(["swapon", "-p", "32767", f"/dev/{dev}"])
    stack.callback(sh, ["swapoff", f"/dev/{dev}"], False)


def disable_zswap(stack: contextlib.ExitStack) -> None:
    """Turn zswap off (it would keep swap-outs in RAM, off the traced device); restore."""
    param = Path("/sys/module/zswap/parameters/enabled")
    if param.exists() and param.read_text().strip() in ("Y", "1"):
        param.write_text("N")
        stack.callback(param.write_text, "Y")


def kill_tasks(memcg: Path, timeout_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL, every task in memory cgroup ``memcg`` until it is empty."""
    deadline = time.monotonic() + timeout_s
    sig = signal.SIGTERM
    while True:
        try:
            pids = [int(p) for p in (memcg / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        time.sleep(0.1)
        if time.monotonic() > deadline - timeout_s / 2:
            sig = signal.SIGKILL
        if time.monotonic() > deadline:
            raise RuntimeError(f"{memcg}: tasks left after SIGKILL: {pids}")


def memcg_group(stack: contextlib.ExitStack, name: str) -> Path:
    """Create memory cgroup ``/sys/fs/cgroup/memory/NAME``; on unwind kill its tasks, rmdir.

    Raises:
        RuntimeError: cgroup v1 memory controller not mounted, or the group exists.
    """
    if not (MEMCG_ROOT / "memory.limit_in_bytes").exists():
        raise RuntimeError(f"{MEMCG_ROOT}: cgroup v1 memory controller not mounted")
    path = MEMCG_ROOT / name
    if path.exists():
        raise RuntimeError(f"{path} exists: is another collection running?")
    path.mkdir()

    def remove() -> None:
        kill_tasks(path)
        for _ in range(50):
            try:
                path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
        path.rmdir()

    stack.callback(remove)
    return path


def memcg_read_int(memcg: Path, name: str) -> int:
    """Read an integer control file ``memcg/NAME``."""
    return int((memcg / name).read_text().split()[0])


def memcg_stat(memcg: Path) -> dict[str, int]:
    """Parse ``memory.stat`` into ``{key: value}``."""
    out = {}
    for line in (memcg / "memory.stat").read_text().splitlines():
        key, value = line.split()
        out[key] = int(value)
    return out


def memcg_tasks(memcg: Path) -> list[int]:
    """Thread ids (as in block records' ``pid``) currently in ``memcg`` (``tasks`` file)."""
    try:
        return [int(t) for t in (memcg / "tasks").read_text().split()]
    except FileNotFoundError:
        return []


def memcg_reset(memcg: Path) -> None:
    """Empty the group's charges (``force_empty``) and reset its peak usage counter."""
    with contextlib.suppress(OSError):
        (memcg / "memory.force_empty").write_text("0")
    (memcg / "memory.max_usage_in_bytes").write_text("0")


def spawn_in_node(
    stack: contextlib.ExitStack,
    memcg: Path,
    ns: str,
    argv: Sequence[str],
    log: Path,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` inside memory cgroup ``memcg`` and network namespace ``ns``.

    The process joins the cgroup before it execs (a shell writes its own pid to
    ``cgroup.procs``), so all its memory is charged to the node. Output goes to ``log``.
    On unwind the process group is killed.
    """
    script = 'echo $$ > "$0" && exec "$@"'
    cmd = ["sh", "-c", script, str(memcg / "cgroup.procs"), *ns_exec(ns), *argv]
    logf = open(log, "ab")  # noqa: SIM115 - closed by the stack
    stack.callback(logf.close)
    proc = subprocess.Popen(
        cmd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, **(env or {})},
    )
    stack.callback(stop_process, proc)
    return proc


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float = 5.0) -> None:
    """SIGTERM the process group of ``proc``, SIGKILL after ``timeout_s``, reap it."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def system_state() -> dict[str, list[str]]:
    """Snapshot of the state the collector changes: netns, swaps, loop devices, memory
    cgroups, tracer, zswap (compared before/after by the tests)."""
    tracer = (TRACEFS / "current_tracer")
    zswap = Path("/sys/module/zswap/parameters/enabled")
    return {
        "netns": sorted(sh(["ip", "netns", "list"]).split()),
        "swaps": Path("/proc/swaps").read_text().splitlines()[1:],
        "loop": sorted(sh(["losetup", "-a"]).splitlines()),
        "memcg": sorted(p.name for p in MEMCG_ROOT.iterdir() if p.is_dir()),
        "current_tracer": [tracer.read_text().strip()] if tracer.exists() else ["(no tracefs)"],
        "tracefs_mounted": [str((TRACEFS / "trace_pipe").exists())],
        "zswap": [zswap.read_text().strip()] if zswap.exists() else [],
    }
