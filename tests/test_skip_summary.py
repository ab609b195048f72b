"""tests/skip_summary.py groups the skipped tests by the reason they gave, most first."""

from __future__ import annotations

import pytest

from tests.skip_summary import skips_by_reason


def report(outcome: str, reason: str = "", nodeid: str = "t.py::x") -> pytest.TestReport:
    longrepr = ("t.py", 1, f"Skipped: {reason}") if outcome == "skipped" else None
    return pytest.TestReport(nodeid, ("t.py", 1, "x"), {}, outcome, longrepr, "call")  # type: ignore[arg-type]


def test_skips_are_counted_per_reason_most_first() -> None:
    reports = [
        report("skipped", "no node here"),
        report("skipped", "no PostgreSQL server"),
        report("passed"),
        report("skipped", "no PostgreSQL server"),
    ]
    assert skips_by_reason(reports) == [("no PostgreSQL server", 2), ("no node here", 1)]


def test_an_expected_failure_is_not_a_skip() -> None:
    xfail = report("skipped", "known bug")
    xfail.wasxfail = "known bug"  # type: ignore[attr-defined]
    assert skips_by_reason([xfail]) == []
