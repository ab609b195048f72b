"""OpenAI's Responses API over an app, with OpenAI's own Python client against a real server: the agent's
tool calls as output items of their own type, the answer as a message, streaming events in order,
``previous_response_id`` going on with the conversation, a stored response read back, errors in
OpenAI's shape."""

from __future__ import annotations

import json

import openai
import pytest
from fastapi import FastAPI

from tests.live_server import serving
from tests.server.conftest import NewApp

TOOL_ROUND = [
    {"tool_calls": [["calculator", {"expression": "17 * 23"}]]},
    "17 times 23 is 391.",
]


async def test_a_response_holds_the_tool_call_the_agent_ran_then_the_answer(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(TOOL_ROUND)
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        response = await client.responses.create(model="calc", input="What is 17 * 23?", user="alice")
        again = await client.responses.retrieve(response.id, extra_query={"user": "alice"})
        with pytest.raises(openai.NotFoundError):  # another end user's
            await client.responses.retrieve(response.id, extra_query={"user": "eve"})
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve("resp_nothing", extra_query={"user": "alice"})
        await client.close()
    assert response.status == "completed" and response.model == "calc"
    assert response.output_text == "17 times 23 is 391."
    tool, message = response.output
    assert tool.type == "loopwright:tool_call"
    extra = tool.model_extra or {}
    assert extra["name"] == "calculator" and json.loads(extra["arguments"]) == {"expression": "17 * 23"}
    assert extra["output"] == "391"
    assert message.type == "message"
    assert response.usage is not None and response.usage.total_tokens > 0
    assert again.id == response.id and again.output_text == response.output_text
    assert [o.type for o in again.output] == ["loopwright:tool_call", "message"]


async def test_a_streamed_response_tells_each_item_as_it_happens(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(TOOL_ROUND)
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        stream = await client.responses.create(
            model=app.id, input=[{"role": "user", "content": "What is 17 * 23?"}], stream=True
        )
        events = [event async for event in stream]
        await client.close()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    added = [e.item.type for e in events if e.type == "response.output_item.added"]
    assert "loopwright:tool_call" in added and added[-1] == "message"
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    completed = events[-1].response  # type: ignore[union-attr]
    assert deltas == completed.output_text and deltas.endswith("17 times 23 is 391.")
    assert completed.usage is not None and completed.usage.total_tokens > 0
    # each item is added before its text and done after it
    message_index = kinds.index("response.output_item.added", kinds.index("response.output_item.done"))
    assert kinds.index("response.output_text.delta", message_index) > message_index


async def test_previous_response_id_goes_on_with_the_conversation(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(["Hello Ada.", "Your name is Ada."])
    runtime = server_app.state.loopwright
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        first = await client.responses.create(model=app.id, input="My name is Ada.")
        second = await client.responses.create(
            model=app.id, input="What is my name?", previous_response_id=first.id
        )
        with pytest.raises(openai.NotFoundError) as unknown:
            await client.responses.create(model=app.id, input="hi", previous_response_id="resp_missing")
        await client.close()
    assert second.previous_response_id == first.id and second.output_text == "Your name is Ada."
    model = next(iter(runtime._models.values()))
    texts = [getattr(m, "content", "") for m in model.requests[-1].messages]
    assert "My name is Ada." in texts and "Hello Ada." in texts
    assert isinstance(unknown.value.body, dict) and unknown.value.body["type"] == "not_found_error"


async def test_bad_input_is_a_clear_400_in_openais_shape(server_app: FastAPI, new_app: NewApp) -> None:
    app = await new_app(["hi"])
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=app.key, max_retries=0)
        with pytest.raises(openai.BadRequestError, match="input must have text"):
            await client.responses.create(model=app.id, input="   ")
        with pytest.raises(openai.BadRequestError) as not_a_list:
            await client.responses.create(model=app.id, input=42)  # type: ignore[arg-type]
        await client.close()
    assert isinstance(not_a_list.value.body, dict) and not_a_list.value.body["code"] == "invalid_param"
