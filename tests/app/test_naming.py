"""Conversation names as Dify reads them from the model's reply."""

from __future__ import annotations

import pytest

from loopwright.app.run.naming import CONVERSATION_TITLE_PROMPT, title_from_reply, title_prompt


@pytest.mark.parametrize(
    ("reply", "name"),
    [
        (
            '{"Language Type": "English", "Your Reasoning": "…", "Your Output": " Adding numbers "}',
            "Adding numbers",
        ),
        ('```json\n{"Your Output": "Fenced"}\n```', "Fenced"),
        ("not json at all", "the query"),
        ('{"Your Output": ""}', "the query"),
        ('["a list"]', "the query"),
        ("", ""),
        ('{"Your Output": "' + "x" * 80 + '"}', "x" * 75 + "..."),
    ],
)
def test_title_from_reply(reply: str, name: str) -> None:
    assert title_from_reply(reply, " the query ") == name


def test_title_prompt_is_difys_with_the_query() -> None:
    assert title_prompt("a\nb") == CONVERSATION_TITLE_PROMPT + "a b\n"
    long = "s" * 1000 + "e" * 1500
    assert (
        title_prompt(long) == CONVERSATION_TITLE_PROMPT + "s" * 300 + "...[TRUNCATED]..." + "e" * 300 + "\n"
    )
