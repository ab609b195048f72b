"""Word problems and plain answers for the embedded model's grammar (no model needed)."""

from __future__ import annotations

import importlib.util
import re

import pytest

from loopwright.model._local_words import (
    RESULT_SUBJECT,
    answer_subjects,
    is_number,
    is_word_problem,
    question_numbers,
    unit_words,
    written_expression_pattern,
)
from loopwright.tools.builtin import builtin_tools
from loopwright.tools.builtin.calculator import calculate

EGGS = "I have 3 boxes of 48 eggs. How many eggs is that?"


@pytest.mark.parametrize(
    "question",
    [
        EGGS,
        "twelve times seven",
        "Tom has 5 apples and buys 3 more. How many apples does he have?",
        "A shirt costs 80 dollars and is 15% off. What does it cost now?",
    ],
)
def test_word_problems_are_written_over_the_questions_numbers(question: str) -> None:
    assert is_word_problem(question)
    pattern = written_expression_pattern(question)
    assert pattern is not None
    numbers = question_numbers(question)
    written = f"{numbers[0]} * {numbers[1]}"
    assert re.fullmatch(pattern, written) and calculate(written)
    assert re.fullmatch(pattern, f"({numbers[0]} + {numbers[1]}) / {numbers[1]}")
    assert not re.fullmatch(pattern, numbers[0])  # one number is no calculation
    assert not re.fullmatch(pattern, "999 * 2")  # numbers the question does not have
    assert not re.fullmatch(pattern, "how many eggs is that")


@pytest.mark.parametrize(
    "question",
    [
        "What is 17 * 23?",
        "Subtract 89 from 250.",
        "What is 15% of 80?",
        "Add 345 and 789.",
        "What is 2 to the power of 10?",
        "How long is 26.2 miles in kilometers?",
        "What is 7 squared?",
        "How much is 1,234 plus 5,678?",
        "What time is it in Tokyo?",
    ],
)
def test_a_calculation_stated_in_one_clause_is_copied(question: str) -> None:
    assert not is_word_problem(question)


def test_numbers_in_words_are_read() -> None:
    assert question_numbers("twelve times seven") == ["12", "7"]
    assert question_numbers("three hundred and twelve, plus twenty-five and a dozen") == ["312", "25", "12"]
    assert question_numbers("1,234 plus 5,678.5") == ["1234", "5678.5"]


def test_the_answer_names_what_was_computed() -> None:
    assert answer_subjects(EGGS, ["3 * 48"]) == [
        "3 boxes of 48 eggs",
        "I have 3 boxes of 48 eggs",
        "3 * 48",
    ]
    assert "15% of 80" in answer_subjects("What is 15% of 80?", ["What is 15% of 80"])
    assert "What is 15% of 80" not in answer_subjects("What is 15% of 80?", ["What is 15% of 80"])
    assert answer_subjects("What time is it?", ["UTC"]) == [RESULT_SUBJECT]
    assert unit_words(EGGS) == ["boxes", "eggs"]
    assert unit_words("What is 7 squared?") == []
    assert unit_words("What is 30 as a percentage of 120?") == []


def test_a_percentage_of_a_number_is_a_stated_calculation() -> None:
    """ "50 as a percentage of 200" is copied into the calculator, which reads it as written; the
    model writing it anew wrote "50 / 200" (0.25)."""
    assert not is_word_problem("What is 50 as a percentage of 200?")
    assert answer_subjects("What is 50 as a percentage of 200?") == ["50 as a percentage of 200"]
    assert is_word_problem("A shirt costs 40 dollars and is 25% off. How much is the discounted price?")


def test_an_answer_names_the_whole_calculation_and_the_unit_converted_to() -> None:
    """A subject never leaves out a word of the calculation ("the square root of 625", not "625";
    "Divide 144 by 12", not "144 by 12") nor half of a bracket; a conversion's answer puts the unit
    it converts to after the number, and never the unit it converts from."""
    assert answer_subjects("What is the square root of 625?") == ["the square root of 625"]
    assert answer_subjects("Divide 144 by 12.") == ["Divide 144 by 12"]
    assert answer_subjects("Calculate (15 + 27) * 3.") == ["(15 + 27) * 3"]
    assert answer_subjects("Convert 10 kilometers to meters.")[0] == "10 kilometers"
    assert unit_words("Convert 10 kilometers to meters.") == ["meters"]
    assert answer_subjects("How long is 26.2 miles in kilometers?")[0] == "26.2 miles"
    assert unit_words("How long is 26.2 miles in kilometers?") == ["kilometers"]
    assert answer_subjects("How many centimeters are in 5 inches?")[0] == "5 inches"
    assert unit_words("How many centimeters are in 5 inches?") == ["centimeters"]
    assert is_number("144") and is_number("-2.5") and not is_number("12:30 UTC")


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_the_grammar_of_a_word_problem_and_of_its_plain_answer_load() -> None:
    from llama_cpp import LlamaGrammar

    from loopwright.model._local_grammar import react_grammar

    calculator = [t.schema for t in builtin_tools() if t.name == "calculator"]
    asking = react_grammar(calculator, "calculator", question=EGGS)
    assert '"4" "8"' in asking and "how many eggs" not in asking.lower()  # written, not copied
    stated = react_grammar(calculator, "calculator", question="What is 15% of 80?")
    assert "What is 15% of 80" in stated  # a stated calculation is still copied
    answering = react_grammar(
        calculator, "none", observation="144", subjects=answer_subjects(EGGS, ["3 * 48"]), units=["eggs"]
    )
    assert 'answer-sentence ::= "\\"" ( "3 boxes of 48 eggs"' in answering
    for grammar in (asking, stated, answering):
        LlamaGrammar.from_string(grammar, verbose=False)
