"""tracefs save/restore (testbed/collect_tracefs.py, arm_blk_tracer) against a fake tracefs
that shows and rejects what the kernel does (tests/fake_tracefs.py names its kernel sources)."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import subprocess
import tempfile
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from collect_machine_state import machine_left_as_found  # noqa: F401 - autouse fixture
from fake_tracefs import CLOCKS, FakeTracefs, fake_block_device
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disaggsim import owners
from disaggsim.testbed import collect_env as env
from disaggsim.testbed.collect_blk import TRACEFS_SETTINGS, arm_blk_tracer
from disaggsim.testbed.collect_env import RestoreError
from disaggsim.testbed.collect_tracefs import (
    TRACEFS,
    BufferSize,
    Tracefs,
    parse_buffer_size_kb,
    parse_choice,
    read_tracefs_state,
    restore_tracefs,
    ring_buffer_kb,
    save_tracefs,
    tracefs_state,
)


@pytest.fixture(autouse=True)
def own_records_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The owner records of these tests' fake tracefs files (arm_blk_tracer records each
    file it changes) in a directory of the test's own: not the machine's, whose dead
    owners the real reaping would restore, and whose live collector would make these
    tests refuse."""
    records = tmp_path / "owners"
    monkeypatch.setattr(owners, "OWNERS_DIR", records)
    return records


def test_parse_every_buffer_size_format() -> None:
    assert parse_buffer_size_kb("1410") == BufferSize(1410)
    assert parse_buffer_size_kb("7 (expanded: 1408)\n") == BufferSize(7, 1408)
    assert parse_buffer_size_kb("X") == BufferSize(None)
    with pytest.raises(ValueError, match=r"/t/buffer_size_kb: expected 'N', .* got 'big'"):
        parse_buffer_size_kb("big", "/t/buffer_size_kb")


def test_parse_choice_files() -> None:
    assert parse_choice("[local] global counter mono") == "local"
    assert parse_choice("local global [mono] mono_raw") == "mono"
    assert parse_choice("nop") == "nop"


def test_ring_buffer_rounding() -> None:
    # 32768 KiB -> ceil(33554432 / 4080) = 8225 sub-buffers -> 33558000 B -> 32771 (measured
    # on this machine: `echo 32768 > buffer_size_kb` reads back 32771).
    assert ring_buffer_kb(32768) == 32771
    assert ring_buffer_kb(1408) == 1410  # 354 sub-buffers
    assert ring_buffer_kb(1) == 7  # at least 2 sub-buffers: 8160 B
    assert all(ring_buffer_kb(ring_buffer_kb(k)) == ring_buffer_kb(k) for k in range(1, 3000))


def test_fake_shows_the_kernel_formats(tmp_path: Path) -> None:
    fs = FakeTracefs(tmp_path)
    assert fs.read("buffer_size_kb") == "7 (expanded: 1408)"
    with pytest.raises(OSError, match="Invalid argument"):
        fs.write("buffer_size_kb", "7 (expanded: 1408)")
    fs.write("current_tracer", "nop")  # first use of tracing grows the buffer
    assert fs.read("buffer_size_kb") == "1410"
    fs.write("per_cpu/cpu1/buffer_size_kb", "2048")
    assert fs.read("buffer_size_kb") == "X"
    with pytest.raises(OSError, match="Invalid argument"):
        fs.write("trace_clock", "[local]")


def test_unexpanded_buffer_restores_on_fresh_boot(tmp_path: Path) -> None:
    # The issue-6 failure: on a freshly booted machine buffer_size_kb reads
    # "7 (expanded: 1408)"; writing that back fails with EINVAL and left 32771 KiB behind.
    fs = FakeTracefs(tmp_path / "tracing")
    loop = fake_block_device(tmp_path / "block", "loop3")
    before = tracefs_state(fs)
    assert before["buffer_size_kb"] == "1410"  # the size a tracer gets: M, rounded
    restore = arm_blk_tracer(fs, ["loop3"], 32768, "0xffff", sys_block=tmp_path / "block")
    assert fs.read("buffer_size_kb") == "32771"
    assert fs.read("current_tracer") == "blk" and parse_choice(fs.read("trace_clock")) == "mono"
    assert (loop / "enable").read_text() == "1"
    restore()
    assert tracefs_state(fs) == before
    # The kernel cannot un-expand: the restored buffer is the boot size M it would grow to.
    assert fs.read("buffer_size_kb") == "1410"
    assert fs.read("per_cpu/cpu0/buffer_size_kb") == "1410"
    assert (loop / "enable").read_text() == "0"
    assert fs.read("trace_clock").startswith("[local] ")
    assert fs.read("options/bin") == "0" and fs.read("options/context-info") == "1"


def test_per_cpu_sizes_restored_when_they_differ(tmp_path: Path) -> None:
    fs = FakeTracefs(tmp_path, n_cpus=3, expanded=True)
    fs.write("per_cpu/cpu1/buffer_size_kb", "4096")
    fs.write("tracing_on", "0")
    fs.write("trace_clock", "global")
    fs.write("current_tracer", "function")
    before = tracefs_state(fs)
    assert fs.read("buffer_size_kb") == "X"
    saved = save_tracefs(fs, TRACEFS_SETTINGS)
    assert saved.writes[-1] == ("tracing_on", "0")
    # 4096 KiB -> ceil(4194304 / 4080) = 1029 sub-buffers -> 4198320 B -> 4099 KiB.
    assert ("per_cpu/cpu1/buffer_size_kb", "4099") in saved.writes
    restore = arm_blk_tracer(fs, [], 32768, "0xffff")
    assert fs.read("buffer_size_kb") == "32771"
    restore()
    assert tracefs_state(fs) == before
    assert [fs.read(f"per_cpu/cpu{c}/buffer_size_kb") for c in range(3)] == ["1410", "4099", "1410"]
    assert fs.read("current_tracer") == "function" and fs.read("tracing_on") == "0"


def test_restore_does_every_step_and_reports_all_failures(tmp_path: Path) -> None:
    fs = FakeTracefs(tmp_path / "tracing", expanded=True)
    fake_block_device(tmp_path / "block", "loop3")
    before = tracefs_state(fs)
    restore = arm_blk_tracer(fs, ["loop3"], 32768, "0xffff", sys_block=tmp_path / "block")
    fs.refuse = {"trace_clock": {"local"}, "options/bin": {"0"}}
    with pytest.raises(RestoreError) as err:
        restore()
    assert len(err.value.failures) == 2
    assert "trace_clock: writing 'local': Input/output error" in str(err.value)
    assert "options/bin: writing '0': Input/output error" in str(err.value)
    after = tracefs_state(fs)
    assert {k for k in before if before[k] != after[k]} == {"trace_clock", "options/bin"}
    assert (tmp_path / "block/loop3/trace/enable").read_text() == "0"


def test_failed_arming_restores_what_it_changed(tmp_path: Path) -> None:
    fs = FakeTracefs(tmp_path / "tracing")
    loop = fake_block_device(tmp_path / "block", "loop3")
    before = tracefs_state(fs)
    fs.refuse = {"current_tracer": {"blk"}}
    with pytest.raises(OSError, match="Input/output error"):
        arm_blk_tracer(fs, ["loop3"], 32768, "0xffff", sys_block=tmp_path / "block")
    assert tracefs_state(fs) == before
    assert (loop / "enable").read_text() == "0"


@pytest.mark.skipif(os.geteuid() != 0, reason="reading tracefs needs root")
def test_real_tracefs_state_parses() -> None:
    # Read-only: mounted tracefs is read in place, else through a private mount namespace.
    state = read_tracefs_state()
    assert int(state["buffer_size_kb"]) >= 7
    assert state["tracing_on"] in ("0", "1") and " " not in state["trace_clock"]
    assert int(state["per_cpu/cpu0/buffer_size_kb"]) >= 7


@pytest.fixture
def kernel_instance(tmp_path: Path) -> Iterator[Tracefs]:
    """A fresh tracefs instance (``instances/NAME``: its own ring buffer, clock, tracer and
    options) of the real kernel, removed afterwards; tracefs is mounted at a temp dir for the
    test if it is not mounted. Changes kernel state for the test: run under the system lock."""
    if os.geteuid() != 0 or "tracefs" not in Path("/proc/filesystems").read_text():
        pytest.skip("needs root and tracefs")
    root, mounted = TRACEFS, False
    if not (TRACEFS / "trace_pipe").exists():
        root = tmp_path / "tracing"
        root.mkdir()
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(root)], check=True)
        mounted = True
    inst = root / "instances" / f"dsim-test-{os.getpid()}"
    try:
        inst.mkdir()
        try:
            yield Tracefs(inst)
        finally:
            inst.rmdir()
    finally:
        if mounted:
            subprocess.run(["umount", str(root)], check=True)


def test_fake_matches_the_kernel(kernel_instance: Tracefs, tmp_path: Path) -> None:
    # Same writes on a real (expanded) instance and on the fake: same texts, same refusals.
    fake = FakeTracefs(tmp_path / "fake", n_cpus=len(kernel_instance.cpus()), expanded=True)
    files = ("buffer_size_kb", "per_cpu/cpu0/buffer_size_kb", "trace_clock", "tracing_on")
    writes = [
        ("buffer_size_kb", "4096"),
        ("trace_clock", "mono"),
        ("buffer_size_kb", "1408"),
        ("per_cpu/cpu0/buffer_size_kb", "7"),
        ("tracing_on", "0"),
    ]
    for name, value in writes:
        kernel_instance.write(name, value)
        fake.write(name, value)
        assert [kernel_instance.read(f) for f in files] == [fake.read(f) for f in files], name
    for name, value in (
        ("buffer_size_kb", "X"),
        ("buffer_size_kb", "7 (expanded: 1408)"),
        ("trace_clock", "[local]"),
        ("current_tracer", "nosuch"),
        ("buffer_size_kb", "0"),
    ):
        for fs in (kernel_instance, fake):
            with pytest.raises(OSError) as err:
                fs.write(name, value)
            assert err.value.errno == errno.EINVAL, (fs, name, value)


def test_kernel_round_trip_per_cpu_sizes_and_clock(kernel_instance: Tracefs) -> None:
    fs = kernel_instance
    fs.write("per_cpu/cpu0/buffer_size_kb", "2048")
    fs.write("trace_clock", "global")
    fs.write("tracing_on", "0")
    before = tracefs_state(fs)
    # 2048 KiB -> ceil(2097152 / 4080) = 515 sub-buffers -> 2101200 B -> 2051 KiB.
    assert fs.read("buffer_size_kb") == "X" and before["per_cpu/cpu0/buffer_size_kb"] == "2051"
    saved = save_tracefs(
        fs,
        ("tracing_on", "current_tracer", "trace_clock", "buffer_size_kb", "options/context-info"),
    )
    fs.write("buffer_size_kb", "4096")
    fs.write("trace_clock", "mono")
    fs.write("options/context-info", "0")
    fs.write("tracing_on", "1")
    assert tracefs_state(fs) != before
    assert restore_tracefs(fs, saved) == []
    assert tracefs_state(fs) == before


def _dead(owner: owners.Owner) -> owners.Owner:
    """``owner`` as a SIGKILLed process is: same pid, another start time (pid reused)."""
    return owners.Owner(owner.pid, owner.start_ticks + 1, owner.boot_id)


def _kill_owner_of_records() -> list[Path]:
    """Make this process's owner records a dead owner's, as a SIGKILL would leave them."""
    records = owners.records(env.SETTING.name)
    for record in records:
        owner = owners.read_record(record)
        assert owner is not None
        owners.write_record(record, _dead(owner))
    return records


@contextlib.contextmanager
def _reaper_writes_through(fs: FakeTracefs) -> Iterator[None]:
    """The reaper's writes to files of ``fs`` go through the fake (which validates them as
    the kernel does and updates the files it derives, as the kernel's would), the rest
    (the fake block device's enable) to the file."""
    write = env.write_setting

    def through(path: Path, value: str) -> None:
        if path.is_relative_to(fs.root):
            fs.write(str(path.relative_to(fs.root)), value)
        else:
            write(path, value)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(env, "write_setting", through)
        yield


def test_records_hold_each_old_value_and_go_with_the_restore(tmp_path: Path) -> None:
    # Each file arm_blk_tracer changes has a record, written before the change, naming
    # the file and the value to restore (the save format: M of "N (expanded: M)"); the
    # restore removes each record once its file is restored, and keeps a failed one's.
    fs = FakeTracefs(tmp_path / "tracing")
    loop = fake_block_device(tmp_path / "block", "loop3")
    me = owners.Owner.current()
    restore = arm_blk_tracer(fs, ["loop3"], 32768, "0xffff", sys_block=tmp_path / "block")
    held = {
        env.parse_setting_record_name(r.name): owners.read_record(r)
        for r in owners.records(env.SETTING.name)
    }
    assert held == {
        (str(loop / "enable"), "0"): me,
        (str(fs.root / "buffer_size_kb"), "1408"): me,
        (str(fs.root / "current_tracer"), "nop"): me,
        (str(fs.root / "trace_clock"), "local"): me,
        (str(fs.root / "tracing_on"), "1"): me,
        (str(fs.root / "options/bin"), "0"): me,
        (str(fs.root / "options/context-info"), "1"): me,
        (str(fs.root / "options/blk_classic"), "0"): me,
        (str(fs.root / "options/blk_cgroup"), "0"): me,
    }
    # The reaper's order (record names) puts the devices first and tracing_on last.
    order = [env.parse_setting_record_name(r.name)[0] for r in owners.records("setting")]
    assert order[0] == str(loop / "enable") and order[-1] == str(fs.root / "tracing_on")
    fs.refuse = {"trace_clock": {"local"}}
    with pytest.raises(RestoreError, match="trace_clock: writing 'local'"):
        restore()
    assert [env.parse_setting_record_name(r.name) for r in owners.records("setting")] == [
        (str(fs.root / "trace_clock"), "local")
    ]


def test_a_live_owners_settings_make_a_second_arming_refuse(tmp_path: Path) -> None:
    fs = FakeTracefs(tmp_path / "tracing", expanded=True)
    restore = arm_blk_tracer(fs, [], 4096, "0xffff")
    armed = tracefs_state(fs)
    with pytest.raises(RuntimeError) as err:
        arm_blk_tracer(fs, [], 8192, "0xffff")
    assert str(err.value) == (
        f"setting {fs.root / 'current_tracer'} exists, owned by pid {os.getpid()}, which "
        "runs: is another disaggsim command running?"
    )
    assert tracefs_state(fs) == armed  # nothing changed by the refused one
    restore()
    assert owners.records(env.SETTING.name) == []


def test_a_traced_device_is_refused_before_anything_changes(tmp_path: Path) -> None:
    fs = FakeTracefs(tmp_path / "tracing")
    loop = fake_block_device(tmp_path / "block", "loop3")
    (loop / "enable").write_text("1\n")
    before = tracefs_state(fs)
    with pytest.raises(RuntimeError) as err:
        arm_blk_tracer(fs, ["loop3"], 4096, "0xffff", sys_block=tmp_path / "block")
    assert str(err.value).startswith(f"{loop / 'enable'}: expected 0 (no block trace on loop3)")
    assert tracefs_state(fs) == before and owners.records(env.SETTING.name) == []


_CHOICE_WRITES = st.one_of(
    st.tuples(st.just("trace_clock"), st.sampled_from(CLOCKS)),
    st.tuples(st.just("current_tracer"), st.sampled_from(["nop", "function", "blk"])),
    st.tuples(st.just("tracing_on"), st.sampled_from(["0", "1"])),
    st.tuples(
        st.sampled_from(
            ["options/bin", "options/context-info", "options/blk_classic", "options/blk_cgroup"]
        ),
        st.sampled_from(["0", "1"]),
    ),
)


@st.composite
def _machine_states(draw: st.DrawFn) -> tuple[int, bool, list[tuple[str, str]]]:
    """A tracefs as a machine may show it: CPUs, expanded or not, then writes: buffer
    sizes (all CPUs, or one: ``X``), clocks, tracers, tracing_on, options."""
    n_cpus = draw(st.integers(1, 4))
    sizes = st.integers(1, 70000).map(str)
    size_writes = st.one_of(
        st.tuples(st.just("buffer_size_kb"), sizes),
        st.tuples(
            st.integers(0, n_cpus - 1).map(lambda c: f"per_cpu/cpu{c}/buffer_size_kb"), sizes
        ),
    )
    writes = draw(st.lists(st.one_of(size_writes, _CHOICE_WRITES), max_size=6))
    return n_cpus, draw(st.booleans()), writes


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    state=_machine_states(),
    buffer_kb=st.integers(1, 70000),
    devices=st.lists(st.sampled_from(["loop0", "loop3", "nvme0n1"]), unique=True, max_size=3),
)
def test_a_dead_collectors_tracefs_comes_back_through_its_records(
    state: tuple[int, bool, list[tuple[str, str]]], buffer_kb: int, devices: list[str]
) -> None:
    # Save, record, (SIGKILL), reap: whatever format the machine showed (N, "N (expanded:
    # M)", X with per-CPU sizes, [bracketed] choices), the reaper's writes, each checked
    # by the fake as the kernel checks it, give back the state of before the arming, the
    # devices untraced, no record left, and one stderr line per file the arming changed.
    n_cpus, expanded, writes = state
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        root = Path(tmp)
        patch.setattr(owners, "OWNERS_DIR", root / "owners")
        fs = FakeTracefs(root / "tracing", n_cpus=n_cpus, expanded=expanded)
        for name, value in writes:
            fs.write(name, value)
        for dev in devices:
            fake_block_device(root / "block", dev)
        before = tracefs_state(fs)
        arm_blk_tracer(fs, devices, buffer_kb, "0xffff", sys_block=root / "block")
        records = _kill_owner_of_records()
        changed = [
            r
            for r in records
            if env.read_setting(Path(env.parse_setting_record_name(r.name)[0]))
            != env.parse_setting_record_name(r.name)[1]
        ]
        with _reaper_writes_through(fs), contextlib.redirect_stderr(io.StringIO()) as err:
            said = owners.reap_dead([env.SETTING])
        assert tracefs_state(fs) == before
        assert all(
            (root / "block" / d / "trace/enable").read_text().strip() == "0" for d in devices
        )
        assert owners.records(env.SETTING.name) == []
        assert len(said) == len(changed) and err.getvalue().splitlines() == said
        assert all(line.startswith("disaggsim: reaped setting /") for line in said)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    setting=st.one_of(
        st.sampled_from(sorted(env.SETTING_FILES)),
        st.lists(
            st.text(min_size=1, max_size=12).filter(lambda s: "/" not in s), min_size=1, max_size=5
        ).map(lambda parts: "/" + "/".join(parts)),
    ),
    old=st.text(max_size=40),
)
def test_setting_record_names_round_trip(setting: str, old: str) -> None:
    # Any path and value (a "/", "=", "%", a newline, a leading dot, non-ASCII) come back
    # from the record's name, and the name is one file name the records' glob lists.
    quoted = urllib.parse.quote(setting, safe="") + "=" + urllib.parse.quote(old, safe="")
    if len(quoted.encode()) > 255:
        with pytest.raises(ValueError, match=r"expected at most 255 \(NAME_MAX\)$"):
            env.setting_record_name(setting, old)
        return
    name = env.setting_record_name(setting, old)
    assert "/" not in name and not name.startswith(".") and "\x00" not in name
    assert env.parse_setting_record_name(name) == (setting, old)
    if setting in env.SETTING_FILES and old.isalnum() and old.isascii():
        assert name == f"{setting}={old}"  # the records change_setting always wrote


def test_a_too_long_record_name_is_refused_with_one_line() -> None:
    with pytest.raises(ValueError, match=r"is 2\d\d bytes; expected at most 255 \(NAME_MAX\)$"):
        env.setting_record_name("/" + "a" * 200, "x" * 60)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    changes=st.lists(
        st.tuples(
            st.sampled_from(sorted(env.SETTING_FILES)),
            st.sampled_from(["0", "1", "3", "N", "Y"]),
            st.sampled_from(["0", "1", "3", "N", "Y"]),
        ),
        unique_by=lambda c: c[0],
        max_size=2,
    ),
    killed=st.booleans(),
)
def test_change_setting_records_refuses_and_is_undone_through_the_shared_records(
    changes: list[tuple[str, str, str]], killed: bool
) -> None:
    # change_setting on own_settings' records (one mechanism for every changed setting):
    # for settings at OLD set to NEW, a record NAME=OLD exists exactly for each that
    # changed (none when NEW is OLD); a second change of a changed setting, to any value,
    # is refused naming the setting and this process as its owner, and changes nothing;
    # then either the stack unwinds or the owner dies (SIGKILL) and the next reap
    # restores: every file holds OLD again, no record is left, and the reap says one line
    # per changed setting.
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        root = Path(tmp)
        patch.setattr(owners, "OWNERS_DIR", root / "owners")
        files = {name: root / name for name in env.SETTING_FILES}
        patch.setattr(env, "SETTING_FILES", files)
        for name, old, _ in changes:
            files[name].write_text(old + "\n")
        changed = {name: old for name, old, new in changes if new != old}
        with contextlib.ExitStack() as outer:
            stack = outer.enter_context(env.UndoStack())
            for name, _, new in changes:
                env.change_setting(stack, name, new)
            assert {r.name for r in owners.records(env.SETTING.name)} == {
                f"{name}={old}" for name, old in changed.items()
            }
            assert {n: files[n].read_text().strip() for n, _, _ in changes} == {
                name: new for name, _, new in changes
            }
            for name in changed:
                other = "9"
                with pytest.raises(
                    RuntimeError, match=f"^setting {name} exists, owned by pid {os.getpid()}"
                ):
                    env.change_setting(stack, name, other)
                assert files[name].read_text().strip() != other
            if killed:
                _kill_owner_of_records()
                with contextlib.redirect_stderr(io.StringIO()) as err:
                    said = owners.reap_dead([env.SETTING])
                assert len(said) == len(changed) == len(err.getvalue().splitlines())
                assert all(
                    line.startswith(f"disaggsim: reaped setting {name} ")
                    for line, name in zip(said, sorted(changed), strict=True)
                )
        assert {n: files[n].read_text().strip() for n, _, _ in changes} == {
            name: old for name, old, _ in changes
        }
        assert owners.records(env.SETTING.name) == []
