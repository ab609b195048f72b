"""Compaction (memory.compaction: summarize) over a long conversation: the prompt never exceeds the
window, its size stays flat once summaries start, each turn is folded once, the summary is stored and
reused, the history API still returns every message, and the agent log shows the summary."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from loopwright.app.run.plan import RESERVED_ANSWER_TOKENS, MessageRequest
from loopwright.app.run.runtime import AppRuntime
from loopwright.model.scripted import ScriptedModel
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import ConversationSummary
from tests.server.conftest import ServiceApp

TURNS = 500
WINDOW = 3000
ANSWER = "Noted, and here is a reply of a fair length that the history has to carry along. " * 3
PADDING = "with details the user gives about their plans and wishes " * 4


def _script(path: Path, replies: list[Any], **options: Any) -> str:
    path.write_text(json.dumps({"replies": replies, "cycle": True, **options}), encoding="utf-8")
    return f"scripted:{path}"


async def _app(db: Database, tmp_path: Path, **memory: Any) -> tuple[ServiceApp, str, str]:
    main = _script(tmp_path / "main.json", [ANSWER], context_size=WINDOW)
    summary = _script(tmp_path / "summary.json", ["The user asked numbered questions about their plans."])
    config = {"model": main, "memory": {"compaction": "summarize", "summary_model": summary, **memory}}
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "long", config)
        key = await repo.create_api_key(s, app.id)
    return ServiceApp(app.id, key.token), main, summary


async def _turns(runtime: AppRuntime, app: ServiceApp, n: int, conversation: str | None = None) -> str:
    for i in range(n):
        query = f"Question {i} {PADDING}"
        run = await runtime.start(MessageRequest(app.id, "alice", query, conversation_id=conversation))
        outcome = await run.outcome()
        assert outcome.status == "normal", outcome.error
        conversation = run.head.conversation_id
    assert conversation is not None
    return conversation


async def test_a_500_turn_conversation_stays_within_the_window(
    server_app: FastAPI, client: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    runtime: AppRuntime = server_app.state.loopwright
    app, main_spec, summary_spec = await _app(db, tmp_path)
    conversation = await _turns(runtime, app, TURNS)
    main = runtime.model(main_spec)
    summarizer = runtime.model(summary_spec)
    assert isinstance(main, ScriptedModel) and isinstance(summarizer, ScriptedModel)

    # the prompt never exceeds the window (less the reply's room)
    sizes = [main.count_tokens(r.messages) for r in main.requests]
    assert len(sizes) == TURNS
    assert max(sizes) + RESERVED_ANSWER_TOKENS <= WINDOW
    # flat once compaction started: the late turns' prompts are no larger than the early ones'
    first = next(i for i, r in enumerate(main.requests) if "Summary of the earlier" in str(r.messages))
    assert first < 40
    early, late = sizes[first : first + 100], sizes[-100:]
    assert max(late) <= max(early) and abs(sum(late) / 100 - sum(early) / 100) < 0.1 * max(early)

    # each turn is folded once, in order, and no turn twice
    folded: list[int] = []
    for request in summarizer.requests:
        new_turns = str(request.messages[-1].content).split("The new turns:", 1)[1]
        folded += [int(n) for n in re.findall(r"User: Question (\d+)", new_turns)]
    assert folded == list(range(len(folded))) and len(folded) > TURNS - 40
    async with db.sessionmaker() as s:
        order = ConversationSummary.covered_messages
        rows = list(await s.scalars(select(ConversationSummary).order_by(order)))
    assert len(rows) == len(summarizer.requests)
    assert rows[-1].covered_messages == len(folded) and rows[-1].model == summary_spec

    # the history API still returns every message
    seen, first_id = 0, None
    while True:
        params = {"conversation_id": conversation, "user": "alice", "limit": 100}
        if first_id:
            params["first_id"] = first_id
        page = (await client.get("/v1/messages", params=params, headers=app.headers)).json()
        seen += len(page["data"])
        if not page["has_more"]:
            break
        first_id = page["data"][0]["id"]
    assert seen == TURNS

    # the agent log of the last message shows the summary its prompt began with
    newest = {"conversation_id": conversation, "user": "alice", "limit": 1}
    last = (await client.get("/v1/messages", params=newest, headers=app.headers)).json()["data"][-1]["id"]
    log = await client.get(f"/v1/messages/{last}/agent-log", params={"user": "alice"}, headers=app.headers)
    compaction = log.json()["meta"]["compaction"]
    assert compaction["mode"] == "summarize" and compaction["summary"].startswith("The user asked")
    assert compaction["summarized_messages"] == rows[-1].covered_messages or compaction["summary_made_now"]


async def test_the_local_model_trims_instead(server_app: FastAPI, db: Database, tmp_path: Path) -> None:
    runtime: AppRuntime = server_app.state.loopwright
    app, main_spec, _ = await _app(db, tmp_path, summary_model="local")
    await _turns(runtime, app, 30)
    main = runtime.model(main_spec)
    assert isinstance(main, ScriptedModel)
    assert all("Summary of the earlier" not in str(r.messages) for r in main.requests)
    assert max(main.count_tokens(r.messages) for r in main.requests) + RESERVED_ANSWER_TOKENS <= WINDOW
    async with db.sessionmaker() as s:
        assert (await s.execute(select(ConversationSummary))).first() is None
