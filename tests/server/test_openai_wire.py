"""OpenAI's Chat Completions over an app, with OpenAI's own Python client against a real server: the
app's agent answers (a tool round included), streaming and not, and the run is stored like any other."""

from __future__ import annotations

import openai
import pytest
from fastapi import FastAPI

from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Message as MessageRow
from tests.live_server import serving
from tests.server.conftest import NewApp

TOOL_ROUND = [
    {"tool_calls": [["calculator", {"expression": "17 * 23"}]]},
    "17 times 23 is 391.",
]


async def test_a_chat_completion_is_the_apps_answer_after_its_tool_call(
    server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    app = await new_app(TOOL_ROUND)
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        reply = await client.chat.completions.create(
            model="calc", messages=[{"role": "user", "content": "What is 17 * 23?"}], user="alice"
        )
        await client.close()
    assert reply.object == "chat.completion" and reply.model == "calc"
    assert reply.choices[0].message.content == "17 times 23 is 391."
    assert reply.choices[0].finish_reason == "stop" and reply.usage is not None
    message_id = reply.id.removeprefix("chatcmpl-")
    async with db.transaction() as s:
        stored = await s.get(MessageRow, message_id)
        thoughts = await repo.list_thoughts(s, message_id)
    assert stored is not None and stored.answer == reply.choices[0].message.content
    assert [t.tool for t in thoughts][0] == "calculator"  # the tool round is in the agent log


async def test_a_streamed_chat_completion_gives_the_text_then_stop_and_usage(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(TOOL_ROUND)
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        stream = await client.chat.completions.create(
            model=app.id,
            messages=[{"role": "user", "content": [{"type": "text", "text": "What is 17 * 23?"}]}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        await client.close()
    texts = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert texts.endswith("17 times 23 is 391.")
    assert chunks[0].choices[0].delta.role == "assistant"
    finished = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finished == ["stop"]
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    assert len({c.id for c in chunks}) == 1


async def test_the_earlier_messages_are_the_history_the_model_sees(
    server_app: FastAPI, new_app: NewApp, tmp_path: object
) -> None:
    app = await new_app(["Your name is Ada."])
    runtime = server_app.state.loopwright
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        await client.chat.completions.create(
            model=app.id,
            messages=[
                {"role": "system", "content": "ignored: the app's instruction is the system prompt"},
                {"role": "user", "content": "My name is Ada."},
                {"role": "assistant", "content": "Hello Ada."},
                {"role": "user", "content": "What is my name?"},
            ],
        )
        await client.close()
    model = next(iter(runtime._models.values()))
    texts = [getattr(m, "content", "") for m in model.requests[-1].messages]
    assert "My name is Ada." in texts and "Hello Ada." in texts and texts[-1] == "What is my name?"
    assert not any("ignored" in str(t) for t in texts)


async def test_models_lists_the_keys_app_and_a_bad_key_is_refused(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(["hi"])
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        models = await client.models.list()
        await client.close()
        wrong = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="app-not-a-key", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            await wrong.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}])
        await wrong.close()
    assert [m.id for m in models.data] == [app.id]


async def test_messages_without_a_user_message_are_a_clear_400(server_app: FastAPI, new_app: NewApp) -> None:
    app = await new_app(["hi"])
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        with pytest.raises(openai.BadRequestError, match="must end with a user message"):
            await client.chat.completions.create(model="x", messages=[{"role": "assistant", "content": "hi"}])
        await client.close()


async def test_the_agents_tool_calls_are_told_not_asked_for(server_app: FastAPI, new_app: NewApp) -> None:
    app = await new_app(TOOL_ROUND * 2)
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        reply = await client.chat.completions.create(
            model=app.id,
            messages=[{"role": "user", "content": "What is 17 * 23?"}],
            extra_body={"include_reasoning": True},
        )
        stream = await client.chat.completions.create(
            model=app.id, messages=[{"role": "user", "content": "What is 17 * 23?"}], stream=True
        )
        chunks = [chunk async for chunk in stream]
        await client.close()
    message = reply.choices[0].message
    assert message.tool_calls is None  # nothing for the client to run
    extra = message.model_extra or {}
    [call] = extra["agent_tool_calls"]
    assert call["function"] == {"name": "calculator", "arguments": '{"expression": "17 * 23"}'}
    assert call["output"] == "391" and call["type"] == "function"
    assert extra["reasoning_content"] == 'calculator({"expression": "17 * 23"}) → 391\n'
    told = [(c.choices[0].delta.model_extra or {}).get("agent_tool_calls") for c in chunks if c.choices]
    assert [t for t in told if t] == [[call | {"id": told_id(told)}]]
    assert not any(
        (c.choices[0].delta.model_extra or {}).get("reasoning_content") for c in chunks if c.choices
    )


def told_id(told: list[object]) -> str:
    [calls] = [t for t in told if t]
    assert isinstance(calls, list)
    return str(calls[0]["id"])


async def test_a_conversation_goes_on_when_the_request_names_it(server_app: FastAPI, new_app: NewApp) -> None:
    app = await new_app(["Hello Ada.", "Your name is Ada."])
    runtime = server_app.state.loopwright
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        first = await client.chat.completions.with_raw_response.create(
            model=app.id, messages=[{"role": "user", "content": "My name is Ada."}], user="ada"
        )
        conversation = first.headers["x-conversation-id"]
        assert (first.parse().model_extra or {})["conversation_id"] == conversation
        second = await client.chat.completions.create(
            model=app.id,
            messages=[{"role": "user", "content": "What is my name?"}],
            user="ada",
            extra_headers={"X-Conversation-Id": conversation},
        )
        with pytest.raises(openai.NotFoundError) as other_user:
            await client.chat.completions.create(
                model=app.id,
                messages=[{"role": "user", "content": "What is my name?"}],
                user="eve",
                extra_body={"conversation_id": conversation},
            )
        await client.close()
    assert (second.model_extra or {})["conversation_id"] == conversation
    model = next(iter(runtime._models.values()))
    texts = [getattr(m, "content", "") for m in model.requests[-1].messages]
    assert "My name is Ada." in texts and "Hello Ada." in texts  # the stored history
    assert other_user.value.body is not None  # OpenAI's error object, not Dify's body
    assert isinstance(other_user.value.body, dict) and other_user.value.body["type"] == "not_found_error"


async def test_errors_before_the_run_are_openais_shape(server_app: FastAPI, new_app: NewApp) -> None:
    app = await new_app(["hi"])
    async with serving(server_app) as url:
        wrong = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="app-not-a-key", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as bad_key:
            await wrong.models.list()
        await wrong.close()
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        with pytest.raises(openai.BadRequestError) as bad_body:
            await client.chat.completions.create(model="x", messages="not a list")  # type: ignore[arg-type]
        await client.close()
    assert bad_key.value.body == {
        "message": "Access token is invalid",
        "type": "authentication_error",
        "code": "unauthorized",
        "param": None,
    }
    assert isinstance(bad_body.value.body, dict) and bad_body.value.body["code"] == "invalid_param"
