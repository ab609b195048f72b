"""The HTML report of a run (``--html``) and of a comparison: one self-contained page, every value
escaped; each failing case shows its trajectory beside what was expected."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from loopwright.evals.compare import Comparison
from loopwright.evals.results import CaseResult, Report, TurnTrace

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}
td,th{border:1px solid #ccc;padding:.3rem .6rem;vertical-align:top}
th{background:#f4f4f4;text-align:left}.pass{color:#17702c}.fail{color:#b3261e}.changed{background:#fff4d6}
.side{display:flex;gap:1rem}.side>div{flex:1;min-width:0}
pre{white-space:pre-wrap;background:#f8f8f8;padding:.5rem;margin:0}
h2{margin-top:2rem}
"""


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    )


def _verdict(passed: bool) -> str:
    return '<span class="pass">pass</span>' if passed else '<span class="fail">FAIL</span>'


def _pre(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    return f"<pre>{escape(text)}</pre>"


def _trajectory(turns: list[TurnTrace]) -> str:
    rows = []
    for n, turn in enumerate(turns, 1):
        calls = [
            {
                "tool": c.name,
                "args": c.args,
                "output": c.output[:500],
                **({"error": c.error} if c.error else {}),
            }
            for c in turn.tool_calls
        ]
        shown = {"turn": n, "query": turn.query, "tool_calls": calls, "answer": turn.answer}
        if turn.error:
            shown["error"] = turn.error
        rows.append(_pre(shown))
    return "".join(rows)


def _failure(case: CaseResult) -> str:
    checks = "".join(
        f"<tr><td>{escape(c.name)}</td><td>{c.turn + 1}</td><td>{escape(c.detail)}</td></tr>"
        for c in case.failed_checks
    )
    return (
        f"<h2>{escape(case.name)} {_verdict(False)}</h2>"
        f"<table><tr><th>check</th><th>turn</th><th>detail</th></tr>{checks}</table>"
        '<div class="side"><div><h3>expected</h3>'
        f"{_pre(case.expected)}</div><div><h3>trajectory</h3>{_trajectory(case.turns)}</div></div>"
    )


def report_html(report: Report) -> str:
    """The run's page: the summary, a row per case, then each failing case in full."""
    s = report.summary()
    head = (
        f"<h1>Eval {escape(report.set)}</h1><p>{escape(report.label)} · {s['passed']}/{s['cases']} passed "
        f"({s['pass_rate']:.0%}, threshold {report.threshold:.0%}) · {s['tokens']} tokens · "
        f"{s['cost']:g} · {s['seconds']:.2f} s · {_verdict(report.ok)}</p>"
    )
    rows = "".join(
        f"<tr><td>{escape(c.name)}</td><td>{_verdict(c.passed)}</td>"
        f"<td>{escape(', '.join(t for turn in c.turns for t in turn.tools) or '-')}</td>"
        f"<td>{c.tokens}</td><td>{c.seconds:.2f}</td>"
        f"<td>{escape('; '.join(f'{x.name}: {x.detail}' for x in c.failed_checks))}</td></tr>"
        for c in report.cases
    )
    table = (
        "<table><tr><th>case</th><th>result</th><th>tools</th><th>tokens</th><th>seconds</th>"
        f"<th>failed checks</th></tr>{rows}</table>"
    )
    failures = "".join(_failure(c) for c in report.cases if not c.passed)
    return _page(f"eval {report.set}", head + table + failures)


def comparison_html(comparison: Comparison) -> str:
    """The comparison's page: both runs' figures, then a row per case (changed ones marked)."""
    base, cand = comparison.base, comparison.candidate
    figures = "".join(
        f"<tr><th>{escape(r.label)}</th><td>{r.passed}/{len(r.cases)}</td><td>{r.pass_rate:.0%}</td>"
        f"<td>{r.tokens}</td><td>{r.cost:g}</td><td>{r.seconds:.2f}</td></tr>"
        for r in (base, cand)
    )
    head = (
        f"<h1>Eval {escape(base.set)}: comparison</h1><table><tr><th>run</th><th>passed</th><th>rate</th>"
        f"<th>tokens</th><th>cost</th><th>seconds</th></tr>{figures}</table>"
    )
    rows = "".join(
        f'<tr class="{"" if c.status == "same" else "changed"}"><td>{escape(c.name)}</td>'
        f"<td>{escape(c.status)}</td><td>{escape(', '.join(c.base_tools) or '-')}</td>"
        f"<td>{escape(', '.join(c.candidate_tools) or '-')}</td>"
        f"<td>{c.base_tokens} → {c.candidate_tokens}</td>"
        f"<td>{c.base_cost:g} → {c.candidate_cost:g}</td></tr>"
        for c in comparison.cases
    )
    table = (
        "<table><tr><th>case</th><th>status</th><th>tools (base)</th><th>tools (candidate)</th>"
        f"<th>tokens</th><th>cost</th></tr>{rows}</table>"
    )
    return _page(f"eval {base.set}: comparison", head + table)
