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


async def test_a_plan_apps_completion_is_its_answer(server_app: FastAPI, new_app: NewApp) -> None:
    """Strategy "plan" on OpenAI's wire: the plan and its steps stay in the agent log, the text is the
    answer."""
    from tests.server.test_plan_stream import PLAN_REPLIES

    app = await new_app(PLAN_REPLIES, strategy="plan")
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        stream = await client.chat.completions.create(
            model=app.id, messages=[{"role": "user", "content": "Double 2+3"}], stream=True
        )
        chunks = [chunk async for chunk in stream]
        await client.close()
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "It is 10."
