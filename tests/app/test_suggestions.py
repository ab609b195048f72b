"""Suggested questions read from the model's reply as Dify reads them."""

from __future__ import annotations

import pytest

from loopwright.app.admin.suggestions import INSTRUCTION, questions_from_reply, suggestion_prompt


@pytest.mark.parametrize(
    ("reply", "questions"),
    [
        ('["How?", "Why?", "When?"]', ["How?", "Why?", "When?"]),
        ('Sure:\n```json\n["One?", 2, "Three?"]\n```', ["One?", "Three?"]),
        ("no array here", []),
        ("[not json]", []),
    ],
)
def test_questions_from_reply(reply: str, questions: list[str]) -> None:
    assert questions_from_reply(reply) == questions


def test_suggestion_prompt_is_difys() -> None:
    prompt = suggestion_prompt([("Hi", "Hello."), ("2+3?", "5.")])
    assert prompt == f"Human: Hi\nAssistant: Hello.\nHuman: 2+3?\nAssistant: 5.\n{INSTRUCTION}\nquestions:\n"
