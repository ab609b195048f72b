"""``@tool``: schemas from type hints and docstrings, invocation of sync/async/generator functions."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import pydantic
import pytest
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from loopwright import Tool, ToolContext, tool
from loopwright.tools import (
    BlobMessage,
    ImageMessage,
    JsonMessage,
    LinkMessage,
    TextMessage,
    ToolOutput,
    ToolParameterValidationError,
    VariableMessage,
)


class Address(pydantic.BaseModel):
    street: str
    city: str = "Paris"


class Filters(TypedDict):
    min_price: float
    tags: list[str]


async def run(t: Tool, args: dict[str, Any], ctx: ToolContext | None = None) -> list[ToolOutput]:
    return [o async for o in t.invoke(args, ctx or ToolContext())]


def props(t: Tool) -> dict[str, Any]:
    return t.schema.parameters["properties"]


def walk_keys(node: Any) -> set[str]:
    """Every schema keyword used anywhere, except the names inside ``properties`` (those are data)."""
    keys: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "properties":
                for sub in v.values():
                    keys |= walk_keys(sub)
            else:
                keys.add(k)
                keys |= walk_keys(v)
    elif isinstance(node, list):
        for x in node:
            keys |= walk_keys(x)
    return keys


# --- schema ---------------------------------------------------------------------------------------------


def test_schema_types_from_hints() -> None:
    @tool
    def f(n: int, s: str, b: bool, x: float, names: list[str]) -> str:
        """Do f."""
        return ""

    p = props(f)
    assert p["n"]["type"] == "integer"
    assert p["s"]["type"] == "string"
    assert p["b"]["type"] == "boolean"
    assert p["x"]["type"] == "number"
    assert p["names"] == {"type": "array", "items": {"type": "string"}}
    assert f.schema.parameters["type"] == "object"
    assert [(q.name, q.type) for q in f.parameters] == [
        ("n", "integer"),
        ("s", "string"),
        ("b", "boolean"),
        ("x", "number"),
        ("names", "array"),
    ]


def test_pydantic_model_and_typeddict_parameters_are_inlined() -> None:
    @tool
    def ship(address: Address, filters: Filters) -> str:
        """Ship."""
        return ""

    schema = ship.schema.parameters
    assert "$ref" not in json.dumps(schema)
    assert not walk_keys(schema) & {"$ref", "$defs", "title", "allOf"}
    address = props(ship)["address"]
    assert address["type"] == "object"
    assert address["properties"]["street"] == {"type": "string"}
    assert address["properties"]["city"]["type"] == "string"
    assert address["properties"]["city"]["default"] == "Paris"
    assert address["required"] == ["street"]
    filters = props(ship)["filters"]
    assert filters["type"] == "object"
    assert filters["properties"]["min_price"] == {"type": "number"}
    assert filters["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert sorted(filters["required"]) == ["min_price", "tags"]
    assert {q.name: q.type for q in ship.parameters} == {"address": "object", "filters": "object"}


def test_a_nested_model_field_with_a_description_is_still_inlined() -> None:
    @tool
    def ship(address: Address) -> str:
        """Ship.

        Args:
            address: Where to ship.
        """
        return ""

    address = props(ship)["address"]
    assert address["description"] == "Where to ship."
    assert address["type"] == "object"
    assert "street" in address["properties"]
    assert not walk_keys(ship.schema.parameters) & {"$ref", "$defs", "title"}


class Node(pydantic.BaseModel):
    name: str
    children: list[Node] = []


class Employee(pydantic.BaseModel):
    name: str
    team: Team | None = None


class Team(pydantic.BaseModel):
    lead: Employee
    members: list[Employee] = []


def test_a_recursive_model_gets_a_schema_cut_at_the_repeat() -> None:
    @tool
    def count(tree: Node) -> int:
        """Count the nodes."""
        return 0

    schema = count.schema.parameters
    assert not walk_keys(schema) & {"$ref", "$defs", "title"}
    tree = props(count)["tree"]
    assert tree["type"] == "object"
    assert tree["required"] == ["name"]
    assert tree["properties"]["name"] == {"type": "string"}
    children = tree["properties"]["children"]
    assert children["type"] == "array"
    assert children["default"] == []
    assert children["items"] == {"type": "object"}  # the cycle is cut: a node is an object


def test_mutually_recursive_models_are_cut_too() -> None:
    @tool
    def hire(team: Team) -> str:
        """Hire."""
        return ""

    team = props(hire)["team"]
    assert not walk_keys(hire.schema.parameters) & {"$ref", "$defs"}
    lead = team["properties"]["lead"]
    assert lead["properties"]["name"] == {"type": "string"}
    assert lead["properties"]["team"]["anyOf"][0] == {"type": "object"}


async def test_a_recursive_model_is_validated_at_any_depth() -> None:
    @tool
    def count(tree: Node) -> int:
        """Count the nodes."""

        def size(n: Node) -> int:
            return 1 + sum(size(c) for c in n.children)

        return size(tree)

    tree = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}, {"name": "d"}]}]}
    assert await run(count, {"tree": tree}) == [TextMessage("4")]
    with pytest.raises(ToolParameterValidationError, match=r"tree\.children\.0\.children\.1\.name"):
        await run(
            count, {"tree": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}, {}]}]}}
        )


def test_required_versus_default() -> None:
    @tool
    def f(a: str, b: int = 3, c: bool = False, d: str | None = None) -> str:
        """F."""
        return ""

    assert f.schema.parameters["required"] == ["a"]
    assert props(f)["b"]["default"] == 3
    assert props(f)["c"]["default"] is False
    assert {q.name: q.required for q in f.parameters} == {"a": True, "b": False, "c": False, "d": False}


def test_docstring_summary_and_google_style_args() -> None:
    @tool
    def get_weather(city: str, unit: str = "celsius", days: int = 1) -> str:
        """Get the weather
        for a city.

        Uses a weather service; this paragraph is not part of the summary.

        Args:
            city: The city name, e.g. "Paris".
            unit (str): Either celsius or fahrenheit;
                defaults to celsius.
            days: How many days: 1 to 7.

        Returns:
            A forecast.
        """
        return ""

    assert get_weather.name == "get_weather"
    assert get_weather.description == "Get the weather for a city."
    p = props(get_weather)
    assert p["city"]["description"] == 'The city name, e.g. "Paris".'
    assert p["unit"]["description"] == "Either celsius or fahrenheit; defaults to celsius."
    assert p["days"]["description"] == "How many days: 1 to 7."
    assert {q.name: q.description for q in get_weather.parameters}["city"] == 'The city name, e.g. "Paris".'
    schema = get_weather.schema.to_dict()
    assert schema["name"] == "get_weather"
    assert schema["description"] == "Get the weather for a city."
    assert "Returns" not in json.dumps(schema)


def test_numpy_style_docstring() -> None:
    @tool
    def get_weather(city: str, days: int = 1) -> str:
        """Get the weather.

        Parameters
        ----------
        city : str
            The city name.
        days : int, optional
            How many days:
            1 to 7.

        Returns
        -------
        str
            A forecast.
        """
        return ""

    assert get_weather.description == "Get the weather."
    p = props(get_weather)
    assert p["city"]["description"] == "The city name."
    assert p["days"]["description"] == "How many days: 1 to 7."
    assert "forecast" not in json.dumps(get_weather.schema.to_dict())


def test_sphinx_style_docstring() -> None:
    @tool
    def get_weather(city: str, days: int = 1) -> str:
        """Get the weather.

        :param city: The city name.
        :param days: How many days:
            1 to 7.
        :returns: A forecast.
        """
        return ""

    assert get_weather.description == "Get the weather."
    p = props(get_weather)
    assert p["city"]["description"] == "The city name."
    assert p["days"]["description"] == "How many days: 1 to 7."


def test_a_docstring_without_sections_is_all_summary_up_to_the_first_blank_line() -> None:
    @tool
    def f(a: str) -> str:
        """Does f
        to a.

        More detail.
        """
        return ""

    assert f.description == "Does f to a."
    assert "description" not in props(f)["a"]


def test_no_docstring_gives_an_empty_description() -> None:
    @tool
    def f(a: int) -> int:
        return a

    assert f.description == ""
    assert "description" not in props(f)["a"]


def test_tool_options() -> None:
    @tool(name="lookup", description="Look something up.", timeout=2.5, cache_ttl=60)
    def f(q: str) -> str:
        """Ignored docstring."""
        return q

    assert isinstance(f, Tool)
    assert f.name == "lookup"
    assert f.description == "Look something up."
    assert f.timeout == 2.5
    assert f.cache_ttl == 60
    assert f.schema.name == "lookup"
    assert f.schema.description == "Look something up."


def test_bare_decorator_defaults() -> None:
    @tool
    def f(q: str) -> str:
        """Doc."""
        return q

    assert (f.timeout, f.cache_ttl) == (None, None)


def test_a_parameter_named_title_survives() -> None:
    @tool
    def create_page(title: str, body: str = "") -> str:
        """Create a page.

        Args:
            title: The page title.
        """
        return title

    p = props(create_page)
    assert p["title"] == {"type": "string", "description": "The page title."}
    assert create_page.schema.parameters["required"] == ["title"]
    assert [q.name for q in create_page.parameters] == ["title", "body"]


async def test_tool_context_parameter_is_injected_and_not_in_the_schema() -> None:
    seen: list[ToolContext] = []

    @tool
    def whoami(greeting: str, ctx: ToolContext) -> str:
        """Who am I."""
        seen.append(ctx)
        return f"{greeting}, {ctx.user_id}"

    assert set(props(whoami)) == {"greeting"}
    assert whoami.schema.parameters["required"] == ["greeting"]
    assert [q.name for q in whoami.parameters] == ["greeting"]
    ctx = ToolContext(user_id="u-42", conversation_id="c-1")
    assert await run(whoami, {"greeting": "hi"}, ctx) == [TextMessage("hi, u-42")]
    assert seen == [ctx]
    # A model cannot smuggle its own value for the context parameter.
    assert await run(whoami, {"greeting": "yo", "ctx": "fake"}, ctx) == [TextMessage("yo, u-42")]


# --- where the function runs -------------------------------------------------------------------------


async def test_sync_function_runs_in_a_worker_thread() -> None:
    threads: list[threading.Thread] = []

    @tool
    def sync_fn() -> str:
        """Sync."""
        threads.append(threading.current_thread())
        return "done"

    loop_thread = threading.current_thread()
    assert await run(sync_fn, {}) == [TextMessage("done")]
    assert len(threads) == 1
    assert threads[0] is not loop_thread


async def test_sync_function_does_not_block_the_loop() -> None:
    release = threading.Event()

    @tool
    def waits() -> str:
        """Waits for the loop to release it."""
        assert release.wait(2), "the event loop was blocked"
        return "released"

    task = asyncio.ensure_future(run(waits, {}))
    await asyncio.sleep(0.01)  # the loop keeps running while the tool waits in its thread
    release.set()
    assert await task == [TextMessage("released")]


async def test_async_function_runs_on_the_loop() -> None:
    seen: list[tuple[threading.Thread, asyncio.AbstractEventLoop]] = []

    @tool
    async def async_fn() -> str:
        """Async."""
        seen.append((threading.current_thread(), asyncio.get_running_loop()))
        return "done"

    assert await run(async_fn, {}) == [TextMessage("done")]
    assert seen == [(threading.current_thread(), asyncio.get_running_loop())]


async def test_async_generator_tool_yields_several_outputs() -> None:
    @tool
    async def progress(steps: int) -> AsyncIterator[Any]:
        """Report progress."""
        for i in range(steps):
            yield f"step {i}"
        yield {"done": True}
        yield LinkMessage("https://example.invalid/report")

    outputs = await run(progress, {"steps": 3})
    assert outputs == [
        TextMessage("step 0"),
        TextMessage("step 1"),
        TextMessage("step 2"),
        JsonMessage({"done": True}),
        LinkMessage("https://example.invalid/report"),
    ]


# --- return values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("hello", [TextMessage("hello")]),
        ({"a": 1}, [JsonMessage({"a": 1})]),
        ([1, 2], [JsonMessage([1, 2])]),
        (b"\x00\x01", [BlobMessage(b"\x00\x01")]),
        (None, []),
        (42, [TextMessage("42")]),
        (ImageMessage("https://example.invalid/a.png"), [ImageMessage("https://example.invalid/a.png")]),
        (VariableMessage("x", 1), [VariableMessage("x", 1)]),
        (
            [TextMessage("a"), LinkMessage("https://example.invalid")],
            [TextMessage("a"), LinkMessage("https://example.invalid")],
        ),
        (Address(street="1 rue X"), [JsonMessage({"street": "1 rue X", "city": "Paris"})]),
    ],
)
@pytest.mark.parametrize("is_async", [False, True])
async def test_return_values_become_outputs(value: Any, expected: list[ToolOutput], is_async: bool) -> None:
    if is_async:

        async def fn() -> Any:
            """Return the value."""
            return value

    else:

        def fn() -> Any:
            """Return the value."""
            return value

    assert await run(tool(fn), {}) == expected


async def test_tool_output_passes_through_unchanged() -> None:
    blob = BlobMessage(b"%PDF-1.7", mime_type="application/pdf", filename="r.pdf")

    @tool
    def report() -> BlobMessage:
        """Report."""
        return blob

    outputs = await run(report, {})
    assert outputs == [blob]
    assert outputs[0] is blob


# --- validation ----------------------------------------------------------------------------------------


async def test_validation_error_names_the_field() -> None:
    @tool
    def f(count: int, name: str) -> str:
        """F."""
        return name * count

    with pytest.raises(ToolParameterValidationError) as info:
        await run(f, {"count": "many", "name": "x"})
    assert str(info.value).startswith("count: ")
    with pytest.raises(ToolParameterValidationError, match="name"):
        await run(f, {"count": 2})


async def test_validation_error_in_a_nested_model_names_the_path() -> None:
    @tool
    def ship(address: Address) -> str:
        """Ship."""
        return address.city

    with pytest.raises(ToolParameterValidationError, match=r"address\.street"):
        await run(ship, {"address": {"city": "Lyon"}})
    assert await run(ship, {"address": {"street": "1 rue X", "city": "Lyon"}}) == [TextMessage("Lyon")]


async def test_validation_error_is_not_a_pydantic_error_and_the_function_does_not_run() -> None:
    calls: list[int] = []

    @tool
    def f(n: int) -> str:
        """F."""
        calls.append(n)
        return ""

    with pytest.raises(ToolParameterValidationError) as info:
        await run(f, {"n": [1]})
    assert not isinstance(info.value, pydantic.ValidationError)
    assert info.value.__cause__ is None
    assert calls == []


async def test_arguments_are_validated_and_coerced() -> None:
    @tool
    def f(n: int, x: float, address: Address) -> str:
        """F."""
        return f"{n!r} {x!r} {type(address).__name__}"

    outputs = await run(f, {"n": "3", "x": 2, "address": {"street": "s"}})
    assert outputs == [TextMessage("3 2.0 Address")]


async def test_defaults_are_used_when_arguments_are_missing() -> None:
    @tool
    def f(a: str, b: int = 7) -> str:
        """F."""
        return f"{a}{b}"

    assert await run(f, {"a": "x"}) == [TextMessage("x7")]
