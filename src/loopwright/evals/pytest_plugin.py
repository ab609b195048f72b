"""pytest plugin: eval sets inside a project's own tests.

Installed with loopwright (the ``pytest11`` entry point ``loopwright``), it gives the ``loopwright_eval``
fixture::

    def test_calculator_app(loopwright_eval):
        loopwright_eval.check("evals/calc.yaml", app="apps/calc.yaml", replay=True)

``check`` runs the set (an app YAML file runs in a scratch database, so the test needs no server or
setup) and fails the test, naming each failing case and check, when the share of passing cases is
below ``threshold``; ``run`` returns the :class:`~loopwright.evals.results.Report` to assert on
yourself. Both have ``a``-prefixed coroutine forms for async tests. Nothing is imported until a test
uses the fixture.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from loopwright.evals.results import Report


class EvalRunner:
    """What the ``loopwright_eval`` fixture gives (see the module's docstring)."""

    async def arun(
        self,
        eval_set: str | Path,
        *,
        app: str | Path,
        **options: Any,
    ) -> Report:
        """The report of a run; ``options`` as :func:`loopwright.evals.runner.evaluate`'s (``replay``,
        ``version``, ``model``, ``threshold``, ``concurrency``, ``database_url`` …)."""
        from loopwright.evals.runner import evaluate
        from loopwright.evals.schema import load_eval_set

        cases = load_eval_set(eval_set)
        return await evaluate(cases, str(app), name=Path(eval_set).stem, **options)

    def run(self, eval_set: str | Path, **options: Any) -> Report:
        """The report of a run (a test that is not async)."""
        return asyncio.run(self.arun(eval_set, **options))

    async def acheck(self, eval_set: str | Path, **options: Any) -> Report:
        report = await self.arun(eval_set, **options)
        _fail_below_threshold(report)
        return report

    def check(self, eval_set: str | Path, **options: Any) -> Report:
        """The report of a run; the test fails when the set falls below its threshold."""
        report = self.run(eval_set, **options)
        _fail_below_threshold(report)
        return report


def failure_message(report: Report) -> str:
    lines = [
        f"eval {report.set} on {report.label}: {report.passed}/{len(report.cases)} passed "
        f"({report.pass_rate:.0%}, threshold {report.threshold:.0%})"
    ]
    for case in report.cases:
        for check in case.failed_checks:
            lines.append(f"  {case.name} (turn {check.turn + 1}) {check.name}: {check.detail}")
    return "\n".join(lines)


def _fail_below_threshold(report: Report) -> None:
    if not report.ok:
        pytest.fail(failure_message(report), pytrace=False)


@pytest.fixture
def loopwright_eval() -> EvalRunner:
    """Runs loopwright eval sets (see :mod:`loopwright.evals.pytest_plugin`)."""
    return EvalRunner()
