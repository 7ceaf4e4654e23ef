"""How the host reads the kmod guest's outcome (swapdev/emulate_kmod.py), without QEMU.

The guest reports through files on a 9p share (results.txt, guest.log) and its serial
console (console.log); QEMU's exit status is 0 whether the guest powered off after its
script or its kernel panicked at boot (``panic=-1`` with ``-no-reboot``). These tests give
the reader the files of each way a boot can end, as the guest writes them, and check what
the error says; the last one runs ``run_sweep`` on a stand-in for run-tests.sh.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from disaggsim.swapdev import device, emulate_kmod

EMULATE = {"setup_rc": "0", "done": "1"}

# The serial console of a boot whose timer check failed on every route, as the 6.12 guest
# prints it under TCG on a loaded host ("quiet": the warnings and the panic only); the
# first three lines are those of a boot here at load 9.5 whose third route still worked.
PANIC_CONSOLE = (
    "\x1bc\x1b[?7l\x1b[2JSeaBIOS (version 1.16.2-debian-1.16.2-1)\r\n\r\n"
    "Booting from ROM...\r\n"
    "\x1bc\x1b[?7l\x1b[2J"
    "[    0.016000] ..MP-BIOS bug: 8254 timer not connected to IO-APIC\r\n"
    "[    0.032000] ....... failed.\r\n"
    "[    0.064000] ..... failed.\r\n"
    "[    0.096000] ..... failed :(.\r\n"
    "[    0.096000] Kernel panic - not syncing: IO-APIC + timer doesn't work!  Boot with "
    "apic=debug and send a report.  Then try booting with the 'noapic' option.\r\n"
    "[    0.096000] ---[ end Kernel panic - not syncing: IO-APIC + timer doesn't work! ]---\r\n"
)


def test_complete_results_are_no_failure(tmp_path: Path) -> None:
    (tmp_path / "results.txt").write_text("setup_rc 0\nrun_0_model none\ndone 1\n")
    assert emulate_kmod.guest_failure(tmp_path, 0, "", EMULATE) is None


def test_a_panic_at_boot_is_named_with_the_console_line(tmp_path: Path) -> None:
    """The CI failure: QEMU status 0, no results.txt, no guest.log. The message says the
    results are missing, the guest never ran its script, quotes the panic and names the
    console log."""
    (tmp_path / "console.log").write_text(PANIC_CONSOLE)
    msg = emulate_kmod.guest_failure(tmp_path, 0, "", EMULATE)
    assert msg is not None
    lines = msg.splitlines()
    assert lines[0] == (
        f"kmod guest: {tmp_path}/results.txt: expected setup_rc 0, done 1, "
        "got no results.txt (the guest never ran its script, or could not "
        "mount the share); run-tests.sh exit status 0"
    )
    assert f"{tmp_path}/guest.log: missing" in lines
    assert (
        f"{tmp_path}/console.log: the guest kernel panicked: Kernel panic - not "
        "syncing: IO-APIC + timer doesn't work!  Boot with apic=debug and send a report."
        "  Then try booting with the 'noapic' option."
    ) in lines
    # the console's last lines follow, without the terminal's escape sequences
    assert "    [    0.016000] ..MP-BIOS bug: 8254 timer not connected to IO-APIC" in lines
    assert "\x1b" not in msg and "\r" not in msg


# The end of the CI boot of 2026-11-27 that died 1.3 s in (multi-threaded TCG in QEMU 7.2
# ran a stale translation holding a static key's temporary int3; run-tests.sh says why it
# now runs TCG single-threaded). The CI log kept only the last lines (from "end trace",
# shortened here); the oops line before them is written in 6.12's __die_header format.
INT3_CONSOLE = (
    "[    1.296812] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\r\n"
    "[    1.297405] ---[ end trace 0000000000000000 ]---\r\n"
    "[    1.297451] RIP: 0010:sched_clock_cpu+0x9/0x190\r\n"
    "[    1.297461] Code: f3 0f 1e fa 41 54 55 53 66 <90> e8 41 ac f0 ff 48 03 05\r\n"
    "[    1.297581] Kernel panic - not syncing: Fatal exception in interrupt\r\n"
    "[    1.298118] Kernel Offset: 0x6a00000 from 0xffffffff81000000\r\n"
)


def test_a_panic_after_an_oops_names_the_trap(tmp_path: Path) -> None:
    """ "Fatal exception in interrupt" says only that an oops happened in an interrupt;
    the message adds the oops line that names the trap (int3), which the last lines of
    a longer oops no longer show."""
    (tmp_path / "console.log").write_text(INT3_CONSOLE)
    msg = emulate_kmod.guest_failure(tmp_path, 0, "", EMULATE)
    assert msg is not None
    assert (
        f"{tmp_path}/console.log: the guest kernel panicked: Kernel panic - not syncing: "
        "Fatal exception in interrupt after Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"
    ) in msg.splitlines()


def test_results_cut_short_say_which_line_is_missing(tmp_path: Path) -> None:
    """A guest that stopped mid-sweep (its last line cut mid-write): setup_rc is there,
    ``done`` is not; the guest log's last lines are quoted; no panic on the console."""
    (tmp_path / "results.txt").write_text("setup_rc 0\nrun_0_model none\nrun_0_rc 0\nrun_0_js")
    (tmp_path / "guest.log").write_text("RESULT setup_rc 0\nRESULT run_0_model none\n")
    (tmp_path / "console.log").write_text("Booting from ROM...\n[   17.2] reboot: Power down\n")
    msg = emulate_kmod.guest_failure(tmp_path, 0, "", EMULATE)
    assert msg is not None
    lines = msg.splitlines()
    assert lines[0] == (
        f"kmod guest: {tmp_path}/results.txt: expected done 1, got no done "
        "line (4 lines); run-tests.sh exit status 0"
    )
    assert lines[1:4] == [
        f"{tmp_path}/guest.log, last lines:",
        "    RESULT setup_rc 0",
        "    RESULT run_0_model none",
    ]
    assert "panicked" not in msg and "    [   17.2] reboot: Power down" in lines


def test_a_failed_setup_and_a_timeout_are_reported_as_such(tmp_path: Path) -> None:
    """insmod failed (setup_rc 1, the sweep still ends with done 1); run-tests.sh killed
    QEMU (timeout's status 124) with an empty guest log."""
    (tmp_path / "results.txt").write_text("setup_rc 1\ndone 1\n")
    (tmp_path / "guest.log").write_text("")
    (tmp_path / "console.log").write_text("")
    msg = emulate_kmod.guest_failure(tmp_path, 124, "timeout: sending signal TERM\n", EMULATE)
    assert msg is not None
    assert msg.splitlines()[:4] == [
        f"kmod guest: {tmp_path}/results.txt: expected setup_rc 0, got setup_rc 1 (2 lines);"
        " run-tests.sh exit status 124",
        "run-tests.sh stderr:",
        "    timeout: sending signal TERM",
        f"{tmp_path}/guest.log: empty",
    ]


def test_run_sweep_keeps_the_guest_files_of_a_failed_boot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_sweep on a stand-in for run-tests.sh that leaves what the panicking boot left
    (a console log, nothing else) and exits 0: the error names the kept directory, which
    still holds the console log."""
    fake = tmp_path / "run-tests.sh"
    (tmp_path / "console.txt").write_text(PANIC_CONSOLE)
    fake.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        cp {tmp_path}/console.txt "$1/console.log"
        """)
    )
    fake.chmod(0o755)
    monkeypatch.setattr(emulate_kmod, "RUN_GUEST", fake)
    with pytest.raises(RuntimeError) as info:
        emulate_kmod.run_sweep(
            [(device.DelayModel("none"), 16 << 20)], ["{build}/memtouch", "32", "1"], 60
        )
    first = str(info.value).splitlines()[0]
    assert first.startswith("kmod guest did not finish the sweep (its files are kept in ")
    kept = Path(first.split("kept in ")[1].rstrip("):"))
    try:
        assert (kept / "console.log").read_bytes() == PANIC_CONSOLE.encode()
        assert "the guest kernel panicked: Kernel panic - not syncing: IO-APIC" in str(info.value)
    finally:
        shutil.rmtree(kept.parent)
