"""At the end of a test run, the tests that were skipped, grouped by reason, most first — so a run that
skips what the machine lacks (PostgreSQL, Node, nginx, Chromium) says so instead of passing silently.
``.ci/run`` sets each of them up (``scripts/ci-postgres``, ``ci-node-sdk``, ``ci-nginx``, ``ci-web``)."""

from __future__ import annotations

from collections import Counter

import pytest
from _pytest.terminal import TerminalReporter


def skip_reason(report: pytest.TestReport) -> str:
    """The reason a skipped test gave (``longrepr`` is ``(path, line, "Skipped: reason")``)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ").strip() or "no reason given"


def skips_by_reason(reports: list[pytest.TestReport]) -> list[tuple[str, int]]:
    counts = Counter(skip_reason(r) for r in reports if r.skipped and not hasattr(r, "wasxfail"))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    groups = skips_by_reason(terminalreporter.stats.get("skipped", []))
    if not groups:
        return
    total = sum(count for _, count in groups)
    terminalreporter.section(f"{total} skipped, by reason", sep="-", yellow=True)
    for reason, count in groups:
        terminalreporter.write_line(f"{count:>5}  {reason}")
    terminalreporter.write_line(
        "To run them, set up what they need as .ci/run does (scripts/ci-postgres, scripts/ci-node-sdk, "
        "scripts/ci-nginx, scripts/ci-web; see the README, 'Run the whole test suite')"
    )
