"""Model entities: Usage accumulation and wire shape, message text, tool schemas, features."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from loopwright.model import (
    ImagePart,
    ModelFeature,
    TextPart,
    ToolSchema,
    Usage,
    UserMessage,
)
from loopwright.model.entities import FilePart, content_text

USAGE_KEYS = {
    "prompt_tokens",
    "prompt_unit_price",
    "prompt_price_unit",
    "prompt_price",
    "completion_tokens",
    "completion_unit_price",
    "completion_price_unit",
    "completion_price",
    "total_tokens",
    "total_price",
    "currency",
    "latency",
}


def usage_a() -> Usage:
    return Usage(
        prompt_tokens=100,
        completion_tokens=20,
        total_tokens=120,
        prompt_unit_price=Decimal("0.5"),
        prompt_price_unit=Decimal("0.000001"),
        prompt_price=Decimal("0.00005"),
        completion_unit_price=Decimal("1.5"),
        completion_price_unit=Decimal("0.000001"),
        completion_price=Decimal("0.00003"),
        total_price=Decimal("0.00008"),
        currency="EUR",
        latency=1.25,
    )


def usage_b() -> Usage:
    return Usage(
        prompt_tokens=7,
        completion_tokens=3,
        total_tokens=10,
        prompt_unit_price=Decimal("9"),
        prompt_price_unit=Decimal("0.001"),
        prompt_price=Decimal("0.1"),
        completion_unit_price=Decimal("8"),
        completion_price_unit=Decimal("0.001"),
        completion_price=Decimal("0.2"),
        total_price=Decimal("0.3"),
        currency="USD",
        latency=0.5,
    )


# --- Usage.plus -------------------------------------------------------------------------------------


def test_plus_sums_counts_and_prices_exactly() -> None:
    total = usage_a().plus(usage_b())
    assert (total.prompt_tokens, total.completion_tokens, total.total_tokens) == (107, 23, 130)
    assert total.prompt_price == Decimal("0.10005")
    assert total.completion_price == Decimal("0.20003")
    assert total.total_price == Decimal("0.30008")
    for price in (total.prompt_price, total.completion_price, total.total_price):
        assert isinstance(price, Decimal)


def test_plus_decimal_sums_do_not_drift_like_floats() -> None:
    total = Usage(total_tokens=1, total_price=Decimal("0.1"))
    for _ in range(2):
        total = total.plus(Usage(total_tokens=1, total_price=Decimal("0.1")))
    assert total.total_price == Decimal("0.3")
    assert str(total.total_price) == "0.3"


def test_plus_takes_unit_prices_and_currency_from_the_first_operand() -> None:
    total = usage_a().plus(usage_b())
    assert total.prompt_unit_price == Decimal("0.5")
    assert total.prompt_price_unit == Decimal("0.000001")
    assert total.completion_unit_price == Decimal("1.5")
    assert total.completion_price_unit == Decimal("0.000001")
    assert total.currency == "EUR"

    reverse = usage_b().plus(usage_a())
    assert reverse.prompt_unit_price == Decimal("9")
    assert reverse.completion_unit_price == Decimal("8")
    assert reverse.currency == "USD"


def test_plus_from_an_empty_total_takes_unit_prices_from_the_first_real_usage() -> None:
    total = Usage().plus(usage_a())
    assert total.prompt_unit_price == Decimal("0.5")
    assert total.completion_unit_price == Decimal("1.5")
    assert total.currency == "EUR"
    assert total.total_tokens == 120
    total = total.plus(usage_b())
    assert total.currency == "EUR"
    assert total.prompt_unit_price == Decimal("0.5")
    assert total.total_tokens == 130


def test_plus_never_mutates_or_aliases_an_operand() -> None:
    a, b = usage_a(), usage_b()
    a_before, b_before = copy.deepcopy(a), copy.deepcopy(b)
    total = a.plus(b)
    assert a == a_before
    assert b == b_before
    assert total is not a
    assert total is not b
    # Mutating the result must not reach back into an operand (Dify's increase_usage stores the delta).
    total.prompt_tokens = 0
    total.total_price = Decimal(0)
    assert a == a_before
    assert b == b_before


def test_plus_on_an_empty_total_returns_a_new_object_not_the_delta() -> None:
    empty, delta = Usage(), usage_b()
    delta_before = copy.deepcopy(delta)
    total = empty.plus(delta)
    assert total is not delta
    assert total == delta_before  # the same values as the only usage
    total.prompt_tokens += 1000
    assert delta == delta_before
    assert empty == Usage()


def test_plus_none_is_a_copy() -> None:
    a = usage_a()
    same = a.plus(None)
    assert same == a
    assert same is not a
    same.completion_tokens = 0
    assert a.completion_tokens == 20


def test_plus_chain_accumulates_many_rounds() -> None:
    total = Usage()
    for _ in range(10):
        total = total.plus(usage_b())
    assert total.total_tokens == 100
    assert total.total_price == Decimal("3.0")
    assert usage_b().total_tokens == 10


# --- Usage.to_dict ----------------------------------------------------------------------------------


def test_to_dict_has_difys_shape_with_prices_as_strings() -> None:
    d = usage_a().to_dict()
    assert set(d) == USAGE_KEYS
    assert d["prompt_tokens"] == 100
    assert d["completion_tokens"] == 20
    assert d["total_tokens"] == 120
    assert d["prompt_unit_price"] == "0.5"
    assert d["prompt_price_unit"] == "0.000001"
    assert d["prompt_price"] == "0.00005"
    assert d["completion_unit_price"] == "1.5"
    assert d["completion_price"] == "0.00003"
    assert d["total_price"] == "0.00008"
    assert d["currency"] == "EUR"
    assert d["latency"] == 1.25
    for key in USAGE_KEYS - {"currency"}:
        if key.endswith(("price", "price_unit")):
            assert isinstance(d[key], str), key
        else:
            assert isinstance(d[key], int | float) and not isinstance(d[key], bool), key


def test_to_dict_of_default_usage() -> None:
    d = Usage().to_dict()
    assert d["prompt_tokens"] == d["completion_tokens"] == d["total_tokens"] == 0
    assert d["total_price"] == "0"
    assert d["prompt_price_unit"] == "0.001"
    assert d["currency"] == "USD"


# --- message content ------------------------------------------------------------------------------


def test_content_text_of_a_string_is_the_string() -> None:
    assert content_text("hello") == "hello"
    assert content_text("") == ""


def test_content_text_joins_text_parts_and_skips_others() -> None:
    parts = [
        ImagePart("https://example.invalid/a.png"),
        TextPart("what is "),
        FilePart("https://example.invalid/doc.pdf", "application/pdf"),
        TextPart("in this picture?"),
    ]
    assert content_text(parts) == "what is in this picture?"
    assert content_text([]) == ""
    assert UserMessage(parts).text == "what is in this picture?"
    assert UserMessage("plain").text == "plain"


# --- ToolSchema ---------------------------------------------------------------------------------------


def test_tool_schema_to_dict() -> None:
    params = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    schema = ToolSchema("search", "Search the web", params)
    assert schema.to_dict() == {"name": "search", "description": "Search the web", "parameters": params}


# --- ModelFeature ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("feature", "value"),
    [
        (ModelFeature.TOOL_CALL, "tool-call"),
        (ModelFeature.MULTI_TOOL_CALL, "multi-tool-call"),
        (ModelFeature.STREAM_TOOL_CALL, "stream-tool-call"),
        (ModelFeature.AGENT_THOUGHT, "agent-thought"),
        (ModelFeature.VISION, "vision"),
        (ModelFeature.DOCUMENT, "document"),
        (ModelFeature.VIDEO, "video"),
        (ModelFeature.AUDIO, "audio"),
        (ModelFeature.STRUCTURED_OUTPUT, "structured-output"),
    ],
)
def test_model_feature_values_are_difys_strings(feature: ModelFeature, value: str) -> None:
    assert feature.value == value
    assert feature == value
    assert ModelFeature(value) is feature


def test_model_feature_has_exactly_difys_members() -> None:
    assert {f.value for f in ModelFeature} == {
        "tool-call",
        "multi-tool-call",
        "stream-tool-call",
        "agent-thought",
        "vision",
        "document",
        "video",
        "audio",
        "structured-output",
    }
