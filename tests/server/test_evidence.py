"""Evidence-backed answers: with knowledge bases attached and evidence required, an answer stands
only on a retrieved segment (cited in message_end and the history); else the app's reply replaces it."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from loopwright.app.config import AppConfig
from loopwright.app.dify.stream import EvidencePolicy
from loopwright.app.run.runtime import EVIDENCE_NOTE, build_agent
from loopwright.store.db import Database
from loopwright.store.models import Message
from loopwright.testing import ScriptedModel
from tests.server.conftest import NewApp
from tests.server.test_toolsets import add_toolsets, chat

NO_EVIDENCE = "Sorry, the handbook does not say."
FEATURES = ["tool-call", "multi-tool-call", "stream-tool-call"]


async def handbook_app(
    server_app: FastAPI, new_app: NewApp, db: Database, replies: list[Any], **evidence: Any
) -> Any:
    kb = server_app.state.loopwright.knowledge()
    handbook = await kb.create_dataset("handbook", description="The staff handbook.")
    await kb.add_text(handbook, "leave.md", "Staff get 25 days of paid leave each year.")
    tool = f"dataset_{handbook.id.replace('-', '_')}"
    script = [
        r if r != "RETRIEVE" else {"tool_calls": [[tool, {"query": "paid leave days"}]]} for r in replies
    ]
    evidence = {"required": True, "no_evidence_reply": NO_EVIDENCE, **evidence}
    app = await new_app(script, features=FEATURES, evidence=evidence)
    await add_toolsets(db, app.id, [{"type": "knowledge", "datasets": ["handbook"]}])
    return app


async def history(client: httpx.AsyncClient, key: str, conversation_id: str) -> dict[str, Any]:
    r = await client.get(
        "/v1/messages",
        params={"conversation_id": conversation_id, "user": "alice"},
        headers={"Authorization": f"Bearer {key}"},
    )
    (message,) = r.json()["data"]
    return message  # type: ignore[no-any-return]


async def test_an_answer_on_retrieved_segments_stands_with_its_citations(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    app = await handbook_app(server_app, new_app, db, ["RETRIEVE", "25 days."])
    events = await chat(client, app.key, "How much leave do I get?")
    assert "message_replace" not in [e["event"] for e in events]
    end = events[-1]
    assert end["metadata"]["evidence"] == {"found": True}
    (cited,) = end["metadata"]["retriever_resources"]
    assert cited["document_name"] == "leave.md" and cited["dataset_name"] == "handbook" and cited["score"] > 0
    listed = await history(client, app.key, end["conversation_id"])
    assert listed["answer"] == "25 days."
    # the history's shape is Dify's RetrieverResource: the row's id, message and time, no stream extras
    (saved,) = listed["retriever_resources"]
    assert set(cited) - set(saved) == {"retriever_from", "page", "doc_metadata", "title", "files"}
    assert set(saved) - set(cited) == {"id", "message_id", "created_at"}
    assert saved["message_id"] == end["message_id"] and saved["created_at"] == listed["created_at"]
    assert all(saved[k] == cited[k] for k in set(saved) & set(cited))


async def test_an_answer_without_retrieval_is_replaced_by_the_no_evidence_reply(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    app = await handbook_app(server_app, new_app, db, ["Probably 30 days."])
    events = await chat(client, app.key, "How much leave do I get?")
    replace = [e for e in events if e["event"] == "message_replace"]
    assert replace and replace[0]["answer"] == NO_EVIDENCE and replace[0]["reason"] == "no_evidence"
    assert events[-1]["event"] == "message_end" and events[-1]["metadata"]["evidence"] == {"found": False}
    listed = await history(client, app.key, events[-1]["conversation_id"])
    assert listed["answer"] == NO_EVIDENCE
    async with db.sessionmaker() as s:
        stored = await s.get(Message, events[-1]["message_id"])
    assert stored is not None and stored.answer == NO_EVIDENCE


async def test_nothing_relevant_retrieved_is_no_evidence(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    app = await handbook_app(server_app, new_app, db, ["RETRIEVE_NOTHING", "Ten spaces."])
    events = await chat(client, app.key, "Where do I park my bicycle?")
    assert [e["answer"] for e in events if e["event"] == "message_replace"] == [NO_EVIDENCE]


async def test_without_evidence_required_the_model_answer_stands(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    app = await handbook_app(server_app, new_app, db, ["Probably 30 days."], required=False)
    events = await chat(client, app.key, "How much leave do I get?")
    assert "message_replace" not in [e["event"] for e in events]
    assert "evidence" not in events[-1]["metadata"]


def test_segments_scoring_under_the_minimum_are_no_evidence() -> None:
    policy = EvidencePolicy(NO_EVIDENCE, min_score=0.5)
    assert not policy.found([]) and not policy.found([{"score": 0.4}, {"score": None}])
    assert policy.found([{"score": 0.4}, {"score": 0.5}])


def test_an_app_that_requires_evidence_tells_its_model() -> None:
    config = AppConfig(evidence={"required": True}, toolsets=[{"type": "knowledge", "datasets": ["h"]}])
    agent = build_agent(config, ScriptedModel([]), [])
    assert EVIDENCE_NOTE in agent.instruction
    assert (
        EVIDENCE_NOTE
        not in build_agent(AppConfig(evidence={"required": True}), ScriptedModel([]), []).instruction
    )
