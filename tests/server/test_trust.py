"""Moderation, annotation replies and external data over the Service API: Dify's event order (read
with the tests' SSE reader), the stored answers, and the annotation endpoints — with the moderation
extension, the external data API and the embedding endpoint as real servers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from tests.live_server import serving
from tests.server.conftest import NewApp, ServiceApp, parse_sse
from tests.trust_peers import Peer, embedding_app, extension_app

KEYWORDS = {
    "type": "keywords",
    "keywords": ["forbidden"],
    "inputs": {"preset_response": "Sorry, I can't talk about that."},
    "outputs": {"preset_response": "[answer withheld]"},
}


@pytest.fixture
async def embeddings() -> AsyncIterator[tuple[str, Peer]]:
    peer = Peer()
    async with serving(embedding_app(peer)) as url:
        yield url, peer


@pytest.fixture
async def extension() -> AsyncIterator[tuple[str, Peer]]:
    peer = Peer()
    async with serving(extension_app(peer)) as url:
        yield url, peer


@pytest.fixture
def server_app(db: Database, embeddings: tuple[str, Peer]) -> FastAPI:
    # The peers' loopback host is allow-listed explicitly; embeddings come from the local endpoint.
    settings = Settings(
        tool_allow_hosts=("127.0.0.1",), openai_base_url=f"{embeddings[0]}/v1", openai_api_key="sk-test"
    )
    return create_app(db, settings, ping_interval=60)


@pytest.fixture
async def client(server_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=server_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c
    runtime = server_app.state.loopwright
    await runtime.settled()
    await runtime.annotations.aclose()  # the embedding endpoint's connections


async def chat(client: httpx.AsyncClient, app: ServiceApp, query: str, **body: Any) -> list[dict[str, Any]]:
    body = {"inputs": {}, "user": "alice", "response_mode": "streaming", "query": query, **body}
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    return [e for e in parse_sse(r.text) if e["event"] != "ping"]


def names(events: list[dict[str, Any]]) -> list[str]:
    """Event names, consecutive repeats collapsed."""
    out: list[str] = []
    for e in events:
        if not out or out[-1] != e["event"]:
            out.append(e["event"])
    return out


async def stored(client: httpx.AsyncClient, app: ServiceApp, conversation_id: str) -> dict[str, Any]:
    r = await client.get(
        "/v1/messages", params={"conversation_id": conversation_id, "user": "alice"}, headers=app.headers
    )
    assert r.status_code == 200, r.text
    message: dict[str, Any] = r.json()["data"][-1]
    return message


# --- moderation --------------------------------------------------------------------------------------


async def test_a_flagged_query_is_answered_with_the_preset_response(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app([], moderation=[KEYWORDS])  # no reply scripted: a model call would fail the run
    events = await chat(client, app, "Tell me something FORBIDDEN")
    # Dify's direct output: `message` events (a character each), then message_end; no agent events
    assert names(events) == ["message", "message_end"]
    preset = "Sorry, I can't talk about that."
    assert [e["answer"] for e in events[:-1]] == list(preset)
    first = events[0]
    head = ["event", "conversation_id", "message_id", "created_at", "task_id"]
    assert list(first) == [*head, "id", "answer", "from_variable_selector"]
    assert first["id"] == first["message_id"] and first["from_variable_selector"] is None
    end = events[-1]
    assert end["metadata"]["annotation_reply"] is None and end["metadata"]["usage"]["total_tokens"] == 0
    message = await stored(client, app, end["conversation_id"])
    assert message["answer"] == preset and message["agent_thoughts"] == []


async def test_a_flagged_query_in_blocking_mode(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([], moderation=[KEYWORDS])
    body = {"inputs": {}, "user": "alice", "response_mode": "blocking", "query": "forbidden?"}
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    assert r.json()["answer"] == "Sorry, I can't talk about that."


async def test_a_flagged_input_value_is_caught_too(client: httpx.AsyncClient, new_app: NewApp) -> None:
    form = [{"variable": "topic", "label": "Topic", "type": "text-input"}]
    app = await new_app([], moderation=[KEYWORDS], user_input_form=form)
    events = await chat(client, app, "hello", inputs={"topic": "forbidden things"})
    assert names(events) == ["message", "message_end"]


async def test_an_answer_flagged_at_the_end_is_replaced(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["That is forbidden knowledge."], moderation=[KEYWORDS])
    events = await chat(client, app, "What is it?")
    assert names(events) == [
        "agent_thought",
        "agent_message",
        "agent_thought",
        "message_replace",
        "message_end",
    ]
    replace = events[-2]
    assert list(replace) == [
        "event",
        "conversation_id",
        "message_id",
        "created_at",
        "task_id",
        "answer",
        "reason",
    ]
    assert replace["answer"] == "[answer withheld]" and replace["reason"] == "output_moderation"
    assert (
        "".join(e["answer"] for e in events if e["event"] == "agent_message")
        == "That is forbidden knowledge."
    )
    message = await stored(client, app, events[-1]["conversation_id"])
    assert message["answer"] == "[answer withheld]"


async def test_an_answer_flagged_while_streaming_ends_the_run(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    # 600 characters in chunks of 4: a check starts after 300 (Dify's buffer) and the stream goes on
    # meanwhile; its verdict ends the run before the rest is streamed.
    long_answer = "This is forbidden. " + "x" * 581
    app = await new_app([long_answer], moderation=[KEYWORDS], delay=0.001)
    events = await chat(client, app, "Go on")
    streamed = "".join(e["answer"] for e in events if e["event"] == "agent_message")
    assert names(events)[-2:] == ["message_replace", "message_end"]
    assert 300 <= len(streamed) < len(long_answer)
    message = await stored(client, app, events[-1]["conversation_id"])
    assert message["answer"] == "[answer withheld]"


async def test_a_clean_answer_is_untouched(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["All good here."], moderation=[KEYWORDS])
    events = await chat(client, app, "How are you?")
    assert "message_replace" not in names(events)
    assert (await stored(client, app, events[-1]["conversation_id"]))["answer"] == "All good here."


async def test_a_moderation_extension_that_is_down_fails_open(
    client: httpx.AsyncClient, new_app: NewApp, extension: tuple[str, Peer]
) -> None:
    url, peer = extension
    peer.status = 500
    app = await new_app(["Fine."], moderation=[{"type": "api", "endpoint": url}])
    events = await chat(client, app, "Hello")
    assert names(events) == ["agent_thought", "agent_message", "agent_thought", "message_end"]
    assert [r["point"] for r in peer.requests] == ["app.moderation.input", "app.moderation.output"]


async def test_a_moderation_extension_that_is_down_fails_closed_when_asked(
    client: httpx.AsyncClient, new_app: NewApp, extension: tuple[str, Peer]
) -> None:
    url, peer = extension
    peer.status = 500
    rule = {"type": "api", "endpoint": url, "on_error": "block", "preset_response": "Try again later."}
    app = await new_app([], moderation=[rule])
    events = await chat(client, app, "Hello")
    assert names(events) == ["message", "message_end"]
    assert "".join(e["answer"] for e in events[:-1]) == "Try again later."


# --- external data -----------------------------------------------------------------------------------


async def test_a_failing_external_data_tool_ends_the_message_with_difys_error(
    client: httpx.AsyncClient, new_app: NewApp, extension: tuple[str, Peer]
) -> None:
    url, peer = extension
    peer.replies["app.external_data_tool.query"] = {"no": "result"}
    app = await new_app([], external_data_tools=[{"variable": "weather", "endpoint": url}])
    events = await chat(client, app, "Weather?")
    assert names(events) == ["error"]
    assert events[0]["code"] == "invalid_param" and events[0]["status"] == 400
    assert events[0]["message"] == (
        "[External data tool] API query failed, variable: weather, error: result not found in response"
    )


# --- annotations ----------------------------------------------------------------------------------------


async def jobs_settled(client: httpx.AsyncClient) -> None:
    """Wait for the annotation-reply jobs the server started (they run in its event loop)."""
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    await transport.app.state.loopwright.annotations.jobs_settled()  # type: ignore[attr-defined]


async def enable(client: httpx.AsyncClient, app: ServiceApp, threshold: float = 0.9) -> dict[str, Any]:
    body = {"score_threshold": threshold, "embedding_provider_name": "openai", "embedding_model_name": "bow"}
    r = await client.post("/v1/apps/annotation-reply/enable", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    job = r.json()
    assert set(job) == {"job_id", "job_status"} and job["job_status"] == "waiting"
    await jobs_settled(client)
    r = await client.get(f"/v1/apps/annotation-reply/enable/status/{job['job_id']}", headers=app.headers)
    assert r.status_code == 200, r.text
    status: dict[str, Any] = r.json()
    return status


async def test_annotation_crud_as_dify(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([])
    created = []
    for i in range(3):
        r = await client.post(
            "/v1/apps/annotations",
            json={"question": f"Question {i}?", "answer": f"Answer {i}."},
            headers=app.headers,
        )
        assert r.status_code == 201, r.text
        created.append(r.json())
    assert set(created[0]) == {"id", "question", "answer", "hit_count", "created_at"}
    assert created[0]["hit_count"] == 0 and isinstance(created[0]["created_at"], int)
    r = await client.get("/v1/apps/annotations", params={"page": 1, "limit": 2}, headers=app.headers)
    page = r.json()
    assert (page["limit"], page["total"], page["page"], page["has_more"]) == (2, 3, 1, True)
    assert [a["id"] for a in page["data"]] == [created[2]["id"], created[1]["id"]]  # newest first
    r = await client.get("/v1/apps/annotations", params={"page": 2, "limit": 2}, headers=app.headers)
    assert [a["id"] for a in r.json()["data"]] == [created[0]["id"]] and r.json()["has_more"] is False
    r = await client.get("/v1/apps/annotations", params={"keyword": "answer 1"}, headers=app.headers)
    assert [a["id"] for a in r.json()["data"]] == [created[1]["id"]] and r.json()["total"] == 1
    r = await client.get("/v1/apps/annotations", params={"keyword": "%"}, headers=app.headers)
    assert r.json()["total"] == 0  # a literal %, not a wildcard
    a = created[0]["id"]
    r = await client.put(
        f"/v1/apps/annotations/{a}", json={"question": "Q?", "answer": "A."}, headers=app.headers
    )
    assert r.status_code == 200 and (r.json()["question"], r.json()["answer"]) == ("Q?", "A.")
    r = await client.delete(f"/v1/apps/annotations/{a}", headers=app.headers)
    assert r.status_code == 204 and r.content == b""
    for method in ("PUT", "DELETE"):
        r = await client.request(
            method, f"/v1/apps/annotations/{a}", json={"question": "Q", "answer": "A"}, headers=app.headers
        )
        assert r.status_code == 404
        assert r.json() == {"code": "not_found", "message": "Annotation not found", "status": 404}
    r = await client.post("/v1/apps/annotations", json={"question": "Q"}, headers=app.headers)
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"


async def test_annotations_are_per_app(client: httpx.AsyncClient, new_app: NewApp) -> None:
    mine, other = await new_app([]), await new_app([])
    r = await client.post("/v1/apps/annotations", json={"question": "Q", "answer": "A"}, headers=mine.headers)
    annotation_id = r.json()["id"]
    r = await client.get("/v1/apps/annotations", headers=other.headers)
    assert r.json()["total"] == 0
    r = await client.delete(f"/v1/apps/annotations/{annotation_id}", headers=other.headers)
    assert r.status_code == 404
    r = await client.get("/v1/apps/annotations", headers={"Authorization": "Bearer app-nope"})
    assert r.status_code == 401


async def test_annotation_reply_answers_a_matching_query_without_the_model(
    client: httpx.AsyncClient, new_app: NewApp, embeddings: tuple[str, Peer]
) -> None:
    app = await new_app(["From the model."])
    r = await client.post(
        "/v1/apps/annotations",
        json={"question": "What are your opening hours?", "answer": "We open 9 to 5, Monday to Friday."},
        headers=app.headers,
    )
    annotation = r.json()
    status = await enable(client, app, threshold=0.9)
    assert status == {"job_id": status["job_id"], "job_status": "completed", "error_msg": ""}
    assert embeddings[1].requests[0]["input"] == ["What are your opening hours?"]  # embedded by the job

    events = await chat(client, app, "what are your opening hours")  # the same words: similarity 1
    assert names(events) == ["message", "message_end"]
    assert "".join(e["answer"] for e in events[:-1]) == "We open 9 to 5, Monday to Friday."
    reply = events[-1]["metadata"]["annotation_reply"]
    assert reply == {"id": annotation["id"], "account": {"id": "api", "name": "Dify user"}}
    message = await stored(client, app, events[-1]["conversation_id"])
    assert message["answer"] == "We open 9 to 5, Monday to Friday."
    r = await client.get("/v1/apps/annotations", headers=app.headers)
    assert r.json()["data"][0]["hit_count"] == 1

    # below the threshold: the model answers
    events = await chat(client, app, "Do you sell gift cards?")
    assert names(events) == ["agent_thought", "agent_message", "agent_thought", "message_end"]
    assert events[-1]["metadata"]["annotation_reply"] is None


async def test_annotation_reply_disable_and_job_status(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Model answer."])
    await client.post(
        "/v1/apps/annotations", json={"question": "Hi there", "answer": "Hello!"}, headers=app.headers
    )
    assert (await enable(client, app))["job_status"] == "completed"
    body = {"score_threshold": 0.9, "embedding_provider_name": "openai", "embedding_model_name": "bow"}
    r = await client.post("/v1/apps/annotation-reply/disable", json=body, headers=app.headers)
    assert r.status_code == 200 and r.json()["job_status"] == "waiting"
    await jobs_settled(client)
    r = await client.get(
        f"/v1/apps/annotation-reply/disable/status/{r.json()['job_id']}", headers=app.headers
    )
    assert r.json()["job_status"] == "completed"
    events = await chat(client, app, "Hi there")
    assert names(events)[-1] == "message_end" and "message" not in names(events)

    unknown = "00000000-0000-4000-8000-000000000000"
    r = await client.get(f"/v1/apps/annotation-reply/enable/status/{unknown}", headers=app.headers)
    assert r.status_code == 400
    assert r.json() == {"code": "invalid_param", "message": "The job does not exist.", "status": 400}
    r = await client.post("/v1/apps/annotation-reply/toggle", json=body, headers=app.headers)
    assert r.status_code == 400 and r.json()["message"] == "Unsupported annotation reply action"
    r = await client.post(
        "/v1/apps/annotation-reply/enable", json={"score_threshold": 0.9}, headers=app.headers
    )
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"


async def test_an_enable_job_whose_embeddings_fail_reports_the_error(
    client: httpx.AsyncClient, new_app: NewApp, embeddings: tuple[str, Peer]
) -> None:
    app = await new_app(["Model answer."])
    await client.post(
        "/v1/apps/annotations", json={"question": "Hi", "answer": "Hello!"}, headers=app.headers
    )
    embeddings[1].status = 500
    status = await enable(client, app)
    assert status["job_status"] == "error" and status["error_msg"]
    events = await chat(client, app, "Hi")  # still off: the model answers
    assert names(events)[-1] == "message_end" and "message" not in names(events)


async def test_parameters_say_moderation_and_annotation_reply_are_on(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app([], moderation=[KEYWORDS], annotation_reply={"enabled": True})
    p = (await client.get("/v1/parameters", headers=app.headers)).json()
    # the rules themselves (here the keywords) are not shown to clients
    assert p["sensitive_word_avoidance"] == {"enabled": True, "type": "keywords", "configs": []}
    assert p["annotation_reply"] == {"enabled": True}


async def test_an_answer_corrected_by_the_extension_streams_on(
    client: httpx.AsyncClient, new_app: NewApp, extension: tuple[str, Peer]
) -> None:
    # Dify's overridden output: the checked text is replaced by the extension's, the stream goes on
    url, peer = extension
    peer.replies["app.moderation.output"] = lambda p: {
        "flagged": "4111" in p["text"],
        "action": "overridden",
        "text": p["text"].replace("4111", "****"),
    }
    answer = "Your card 4111 is on file. " + "y" * 573
    app = await new_app([answer], moderation=[{"type": "api", "endpoint": url}], delay=0.001)
    events = await chat(client, app, "Which card?")
    streamed = "".join(e["answer"] for e in events if e["event"] == "agent_message")
    assert streamed == answer  # nothing held back, nothing cut
    replaces = [e["answer"] for e in events if e["event"] == "message_replace"]
    assert len(replaces) >= 2 and all(r.startswith("Your card **** is on file.") for r in replaces)
    assert replaces[-1] == answer.replace("4111", "****") and names(events)[-2:] == [
        "message_replace",
        "message_end",
    ]
    assert (await stored(client, app, events[-1]["conversation_id"]))["answer"] == answer.replace(
        "4111", "****"
    )
