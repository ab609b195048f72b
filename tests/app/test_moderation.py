"""Moderation rules (``app.guards.moderation``): Dify's keyword semantics, regex rules, an OpenAI-compatible
moderation endpoint and Dify's API-based extension, each on a real HTTP server on 127.0.0.1, and what a
failing provider does (fail open or closed, never an exception)."""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pytest

from loopwright.app.config import AppConfig
from loopwright.app.guards.moderation import (
    UNCHECKED_ANSWER,
    InputVerdict,
    ModerationContext,
    ModerationRule,
    OutputGuard,
    OutputVerdict,
    check_inputs,
    check_output,
    keywords_hit,
)
from loopwright.tools.net import NetworkPolicy
from tests.live_server import serving
from tests.trust_peers import Peer, extension_app, moderation_app

LOOPBACK = NetworkPolicy.from_strings(["127.0.0.1"])  # the peers' host, allow-listed explicitly
CTX = ModerationContext("app-1", LOOPBACK)


def rule(**spec: Any) -> ModerationRule:
    return ModerationRule.model_validate(spec)


KEYWORDS = rule(
    type="keywords",
    keywords="badword\nForbidden\n\n",  # Dify's form: one per line, blank lines dropped
    inputs={"preset_response": "Input refused."},
    outputs={"preset_response": "Output refused."},
)


def test_keywords_are_difys_case_insensitive_substrings() -> None:
    # Dify's KeywordsModeration: keyword.lower() in str(value).lower(), over the inputs and the query
    assert KEYWORDS.keywords == ["badword", "Forbidden"]
    assert keywords_hit(KEYWORDS.keywords, ["this is FORBIDDEN territory"])
    assert keywords_hit(KEYWORDS.keywords, ["xBADWORDx"])  # a substring, not a word
    assert not keywords_hit(KEYWORDS.keywords, ["all good", "forbid"])


async def test_keywords_flag_an_input_value_or_the_query() -> None:
    assert await check_inputs([KEYWORDS], {"name": "Bob"}, "hello", CTX) is None
    by_query = await check_inputs([KEYWORDS], {"name": "Bob"}, "say BADWORD", CTX)
    by_input = await check_inputs([KEYWORDS], {"name": "forbidden"}, "hello", CTX)
    assert by_query == by_input == InputVerdict("direct_output", "Input refused.")
    assert await check_output([KEYWORDS], "a forbidden answer", CTX) == OutputVerdict("Output refused.")
    assert await check_output([KEYWORDS], "a fine answer", CTX) is None


async def test_regex_rules_say_what_keywords_cannot() -> None:
    advice = rule(
        type="regex",
        patterns=[r"guaranteed\s+(returns?|profits?)", r"\byou (have|suffer from) \w+itis\b"],
        preset_response="I can't give financial promises or medical diagnoses.",
    )
    assert await check_output([advice], "This fund has GUARANTEED  returns!", CTX) is not None
    assert await check_output([advice], "I think you have bronchitis.", CTX) is not None
    assert await check_output([advice], "Returns are never guaranteed; see a doctor.", CTX) is None
    verdict = await check_inputs([advice], {}, "Do you offer guaranteed profit?", CTX)
    assert verdict == InputVerdict("direct_output", "I can't give financial promises or medical diagnoses.")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"type": "keywords", "keywords": [], "preset_response": "x"}, "needs keywords"),
        ({"type": "keywords", "keywords": ["a"]}, "inputs.preset_response (or preset_response) is required"),
        (
            {"type": "regex", "patterns": ["(unclosed"], "preset_response": "x"},
            "not a valid regular expression",
        ),
        ({"type": "api"}, "needs endpoint"),
        (
            {
                "type": "keywords",
                "keywords": ["a"],
                "preset_response": "x",
                "inputs": {"enabled": False},
                "outputs": {"enabled": False},
            },
            "at least one of inputs and outputs",
        ),
        ({"type": "keywords", "keywords": ["a"], "preset_response": "x" * 101}, "at most 100 characters"),
    ],
)
def test_a_bad_rule_is_refused_with_a_clear_error(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        AppConfig.model_validate({"moderation": [spec]})


async def test_openai_compatible_moderation_endpoint() -> None:
    peer = Peer()
    async with serving(moderation_app(peer, ("kill",))) as url:
        mod = rule(
            type="openai_moderation",
            base_url=f"{url}/v1",
            api_key="sk-test",
            model="omni-moderation-latest",
            preset_response="Refused.",
        )
        assert await check_inputs([mod], {"topic": "cats"}, "how do I kill a process", CTX) is not None
        assert await check_output([mod], "cats are nice", CTX) is None
    # Dify joins the values (the query last) with newlines and sends them as one input
    assert peer.requests[0] == {"model": "omni-moderation-latest", "input": "cats\nhow do I kill a process"}
    assert peer.headers[0]["authorization"] == "Bearer sk-test"


async def test_api_extension_input_and_output_points() -> None:
    peer = Peer(
        replies={
            "app.moderation.input": lambda p: (
                {"flagged": True, "action": "direct_output", "preset_response": "Blocked by policy."}
                if "secret" in p["query"]
                else {"flagged": False, "action": "direct_output"}
            ),
            "app.moderation.output": {"flagged": True, "action": "direct_output", "preset_response": "No."},
        }
    )
    async with serving(extension_app(peer)) as url:
        ext = rule(type="api", endpoint=f"{url}/", api_key="ext-key")
        assert await check_inputs([ext], {"x": "1"}, "hello", CTX) is None
        blocked = await check_inputs([ext], {"x": "1"}, "tell me the secret", CTX)
        replaced = await check_output([ext], "an answer", CTX)
    assert blocked == InputVerdict("direct_output", "Blocked by policy.")
    assert replaced == OutputVerdict("No.")
    # Dify's request bodies, point by point
    assert peer.requests[0] == {
        "point": "app.moderation.input",
        "params": {"app_id": "app-1", "inputs": {"x": "1"}, "query": "hello"},
    }
    assert peer.requests[2] == {
        "point": "app.moderation.output",
        "params": {"app_id": "app-1", "text": "an answer"},
    }
    assert peer.headers[0]["authorization"] == "Bearer ext-key"
    assert peer.headers[0]["content-type"] == "application/json"


async def test_api_extension_overrides_inputs_and_query() -> None:
    peer = Peer(
        replies={
            "app.moderation.input": {
                "flagged": True,
                "action": "overridden",
                "inputs": {"name": "[redacted]"},
                "query": "My card is [redacted]",
            }
        }
    )
    async with serving(extension_app(peer)) as url:
        ext = rule(type="api", endpoint=url, inputs={"enabled": True}, outputs={"enabled": False})
        verdict = await check_inputs([ext], {"name": "Bob"}, "My card is 4111", CTX)
    assert verdict == InputVerdict("overridden", inputs={"name": "[redacted]"}, query="My card is [redacted]")


@pytest.mark.parametrize("failure", ["status", "timeout", "not-allowed"])
async def test_a_failing_provider_fails_open_or_closed_as_configured(failure: str) -> None:
    gate = asyncio.Event()
    peer = Peer(status=503 if failure == "status" else 200, gate=gate if failure == "timeout" else None)
    ctx = ModerationContext("app-1", NetworkPolicy() if failure == "not-allowed" else LOOPBACK)
    async with serving(extension_app(peer)) as url:
        try:
            spec = {"type": "api", "endpoint": url, "timeout": 0.2}
            fail_open = rule(**spec)
            fail_closed = rule(**spec, on_error="block", preset_response="Unavailable, try later.")
            assert await check_inputs([fail_open], {}, "hi", ctx) is None
            assert await check_output([fail_open], "answer", ctx) is None
            assert await check_inputs([fail_closed], {}, "hi", ctx) == InputVerdict(
                "direct_output", "Unavailable, try later."
            )
            assert await check_output([fail_closed], "answer", ctx) == OutputVerdict(
                "Unavailable, try later."
            )
            closed_without_preset = rule(**spec, on_error="block")
            assert await check_output([closed_without_preset], "answer", ctx) == OutputVerdict(
                UNCHECKED_ANSWER
            )
        finally:
            gate.set()  # the hung requests end before the server stops
    # refused by the SSRF guard: the extension never saw a request
    assert (peer.requests == []) == (failure == "not-allowed")


async def test_output_guard_checks_in_the_background_every_buffer() -> None:
    gate = asyncio.Event()
    peer = Peer(
        gate=gate,
        replies={
            "app.moderation.output": lambda p: {
                "flagged": "bad" in p["text"],
                "action": "direct_output",
                "preset_response": "Replaced.",
            }
        },
    )
    async with serving(extension_app(peer)) as url:
        guard = OutputGuard([rule(type="api", endpoint=url)], CTX, buffer_chars=10)
        guard.feed("0123")
        await asyncio.sleep(0)
        assert peer.requests == []  # fewer than 10 characters: no check yet
        guard.feed("456789 bad")  # 14 characters: a check of the text so far starts, the stream goes on
        guard.feed(" more text")  # a check is running: no second one
        await peer.arrived.wait()
        assert guard.poll() is None  # the check waits at the gate: nothing known yet
        gate.set()
        verdict = await guard.final("0123456789 bad more text")
    assert verdict == OutputVerdict("Replaced.")
    assert [r["params"]["text"] for r in peer.requests] == ["0123456789 bad"]


def dify_keywords(keywords: str) -> ModerationRule:
    return rule(type="keywords", keywords=keywords, preset_response="Blocked")


# Dify's reference cases (api/tests/unit_tests/core/moderation/test_sensitive_word_filter.py):
# (keywords as Dify's form stores them, input values, query, flagged)
DIFY_KEYWORD_CASES = [
    ("badword", {"text": "This contains badword in it"}, "", True),
    ("badword", {"text": "This is clean content"}, "", False),
    ("badword1\nbadword2\nbadword3", {"text": "This contains badword2 in it"}, "", True),
    ("sensitive", {"field": "clean"}, "This is sensitive information", True),
    ("badword", {"field1": "clean", "field2": "contains badword", "field3": "also clean"}, "", True),
    ("bad word", {"text": "This contains bad word in it"}, "", True),
    ("bad", {"text": "This is badass content"}, "", True),  # substrings, not whole words
    ("BaDwOrD", {"text": "This contains bAdWoRd in it"}, "", True),
    ("Bad-Word", {"text": "This contains BAD-WORD in it"}, "", True),
    ("café", {"text": "Welcome to CAFÉ"}, "", True),
    ("sensitive", {"field": "clean"}, "SENSITIVE information", True),
    ("123", {"number": 123456}, "", True),  # values as str()
    ("true", {"flag": True}, "", True),
    ("none", {"value": None}, "", True),
    ("badword", {"text": ""}, "", False),
    ("badword", {"items": ["good", "badword", "clean"]}, "", True),
    ("badword", {}, "", False),
    ("bad.*word", {"text": "This contains bad.*word literally"}, "", True),  # literal, not a regex
    ("badword", {"text": "Line 1\nbadword\nLine 3"}, "", True),
    ("🚫", {"text": "This is 🚫 prohibited"}, "", True),
    ("   ", {"text": "This has spaces"}, "", False),  # a keyword of spaces is kept
    ("   ", {"text": "This   has   spaces"}, "", True),
    ("bad\tword", {"text": "This contains bad\tword"}, "", True),
]


@pytest.mark.parametrize(("keywords", "inputs", "query", "flagged"), DIFY_KEYWORD_CASES)
async def test_keywords_against_difys_cases(
    keywords: str, inputs: dict[str, Any], query: str, flagged: bool
) -> None:
    verdict = await check_inputs([dify_keywords(keywords)], dict(inputs), query, CTX)
    assert (verdict is not None) is flagged
    if flagged:
        assert verdict == InputVerdict("direct_output", "Blocked")


def test_difys_keyword_limits() -> None:
    with pytest.raises(pydantic.ValidationError, match="keywords length must be less than 10000"):
        dify_keywords("x" * 10001)
    with pytest.raises(
        pydantic.ValidationError, match="the number of rows for the keywords must be less than 100"
    ):
        dify_keywords("\n".join(f"keyword{i}" for i in range(101)))
    assert len(dify_keywords("\n".join(f"keyword{i}" for i in range(100))).keywords) == 100
