"""Test-session rules shared by every test module.

A test that needs root (swap areas, loop devices, memory cgroups, namespaces, tracefs,
userfaultfd) skips itself with a reason that says so. Run by a user without those rights,
the session then fails, listing each test it could not run, instead of reporting success
for a suite of which a part never ran: ``make test`` as root runs everything; as another
user it exits non-zero with that list. ``pytest --allow-unprivileged-skips`` runs a subset
as a normal user and still reports the list, as a warning.
"""

from __future__ import annotations

import os
import re

import pytest

#: A skip reason that names root as what is missing.
_NEEDS_ROOT = re.compile(r"\broot\b", re.IGNORECASE)
_not_run: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--allow-unprivileged-skips",
        action="store_true",
        help="do not fail the session when tests that need root were skipped (non-root run)",
    )


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _record(report: pytest.TestReport | pytest.CollectReport) -> None:
    if report.skipped and os.geteuid() != 0:
        reason = _skip_reason(report)
        if _NEEDS_ROOT.search(reason):
            _not_run.append(f"{report.nodeid}: {reason.removeprefix('Skipped: ')}")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when in ("setup", "call"):
        _record(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _record(report)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _not_run:
        return
    allowed = terminalreporter.config.getoption("--allow-unprivileged-skips")
    terminalreporter.write_sep(
        "!" if not allowed else "-",
        f"{len(_not_run)} test(s) NOT RUN: they need root (run the suite as root)",
        red=not allowed,
        bold=True,
    )
    for line in _not_run:
        terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    allowed = session.config.getoption("--allow-unprivileged-skips")
    if _not_run and not allowed and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
