"""Eval sets against a real server on 127.0.0.1, through its Service API with the app's key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopwright.config import Settings
from loopwright.evals.runner import evaluate
from loopwright.evals.schema import parse_eval_set
from loopwright.evals.target import EvalTargetError
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from tests.live_server import serving

SET = """\
cases:
  - name: multiply
    query: What is 17 * 23?
    expect:
      answer: {number: 391}
      trajectory: {match: exact, tools: [{name: calculator, output: {number: 391}}]}
      limits: {rounds: 2}
  - name: follow-up
    turns:
      - {query: hello}
      - {query: and again}
    expect: {answer: {contains: "again"}}
"""


async def test_a_set_runs_against_a_server_with_the_apps_key(db: Database, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    replies = [
        {"tool_calls": [["calculator", {"expression": "17*23"}]]},
        "It is 391.",
        "Hello.",
        "Hello again.",
    ]
    script.write_text(json.dumps({"replies": replies, "features": ["tool-call"]}), encoding="utf-8")
    async with db.transaction() as s:
        app, _ = await repo.create_app(
            s, "Calc", {"model": f"scripted:{script}", "tools": [{"name": "calculator"}]}
        )
        key = (await repo.create_api_key(s, app.id)).token
    server = create_app(db, Settings())
    async with serving(server) as url:
        report = await evaluate(parse_eval_set(SET), key, server=url, concurrency=1, settings=Settings())
        with pytest.raises(EvalTargetError, match="refused the app's key"):
            await evaluate(parse_eval_set(SET), "app-wrong", server=url, settings=Settings())
        with pytest.raises(EvalTargetError, match="no --replay"):
            await evaluate(parse_eval_set(SET), key, server=url, replay=True, settings=Settings())
    multiply, follow_up = report.cases
    assert multiply.passed, multiply.failed_checks
    assert multiply.turns[0].tool_calls[0].output == "391" and multiply.turns[0].rounds == 2
    assert follow_up.passed and [t.answer for t in follow_up.turns] == ["Hello.", "Hello again."]
    assert report.app == "Calc @ " + url
