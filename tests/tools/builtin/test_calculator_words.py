"""The calculator takes what people write: operations in words, percentages, unit conversions."""

from __future__ import annotations

import pytest

from loopwright.tools import ToolEngine
from loopwright.tools.builtin import calculator_tool
from loopwright.tools.builtin._phrases import to_expression
from loopwright.tools.builtin.calculator import calculate


async def calc(expression: str) -> str:
    result = await ToolEngine([calculator_tool()]).invoke("calculator", {"expression": expression})
    return result.observation


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("6 times 7", 42),
        ("6 multiplied by 7", 42),
        ("6 x 7", 42),
        ("100 plus 23 minus 3", 120),
        ("81 divided by 9", 9),
        ("81 over 9", 9),
        ("10 mod 4", 2),
        ("What's 6 times 7?", 42),
        ("How much is 100 plus 1?", 101),
        ("calculate 2 plus 2.", 4),
        ("Use the calculator to compute 17 * 23.", 391),
        ("Compute 15 * 15 with the calculator", 225),
        ("please work out 6 times 7 using a calculator", 42),
        ("add 10 and 32", 42),
        ("add 10 to 32", 42),
        ("the sum of 10 and 32", 42),
        ("subtract 8 from 50", 42),
        ("the difference between 50 and 8", 42),
        ("multiply 6 by 7", 42),
        ("the product of 6 and 7", 42),
        ("divide 84 by 2", 42),
        ("the quotient of 84 and 2", 42),
        ("9 squared", 81),
        ("3 cubed", 27),
        ("3 to the power of 4", 81),
        ("3 raised to the power of 4", 81),
        ("2 to the 10th power", 1024),
        ("the square root of 81", 9),
        ("square root of 2 squared", 2),
        ("the cube root of 27", 3),
        ("18% of 50", 9),
        ("18 percent of 50", 9),
        ("18 per cent of 50", 9),
        ("100 - 18% of 50", 91),
        ("increase 50 by 18%", 59),
        ("raise 50 by 18 percent", 59),
        ("decrease 50 by 18 percent", 41),
        ("reduce 50 by 18%", 41),
        ("9 as a percentage of 50", 18),
        ("9 is what percent of 50", 18),
        ("what percentage of 50 is 9", 18),
        ("1,250 plus 2,000", 3250),
        ("$12 times 3", 36),
        ("multiply 6 plus 1 by 2 squared", 28),
    ],
)
def test_arithmetic_in_words(phrase: str, expected: float) -> None:
    assert calculate(phrase) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("3 feet to cm", 91.44),
        ("3 feet in centimeters", 91.44),
        ("convert 2 miles to kilometers", 3.218688),
        ("how many grams are in 1.5 kilograms", 1500),
        ("How many minutes are there in 2 hours?", 120),
        ("how many seconds in an hour", 3600),
        ("how many ounces in a pound", 16),
        ("2 hours plus 30 minutes in minutes", None),  # not a conversion of one quantity: an error
        ("0 degrees celsius to fahrenheit", 32),
        ("212 degrees fahrenheit in celsius", 100),
        ("300 kelvin to celsius", 26.85),
        ("(2 + 3) * 2 meters to cm", 1000),
        ("60 mph to km per hour", 96.56064),
        ("1 square kilometer to hectares", 100),
        ("How long is 26.2 miles in kilometers", 42.1648128),  # the question's clause, copied whole
        ("how far is 10 km in miles", 6.21371192237),
    ],
)
def test_unit_conversions(phrase: str, expected: float | None) -> None:
    if expected is None:
        with pytest.raises(ValueError):
            calculate(phrase)
    else:
        assert calculate(phrase) == pytest.approx(expected)


def test_conversions_are_rounded_to_twelve_significant_digits() -> None:
    assert calculate("100 degrees celsius to fahrenheit") == 212  # pint gives 211.99999999999991
    assert calculate("100 - 18% of 64") == 88.48  # not 88.47999999999999


@pytest.mark.parametrize(
    ("phrase", "reason"),
    [
        ("5 parsecs to furlongs per fortnight", "cannot convert"),
        ("3 meters to seconds", "cannot convert"),
        ("5 wibbles to meters", "unknown unit 'wibbles'"),
        ("3 feet to blorps", "unknown unit 'blorps'"),
        ("seven times eight", "not an arithmetic expression|unsupported element"),
        ("divide 5 by 0", "division by zero"),
        ("10 divided by 0", "division by zero"),
        ("a", "unsupported element"),
        ("how is the weather", "not an arithmetic expression|unsupported element"),
    ],
)
def test_nonsense_gets_a_clear_error(phrase: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        calculate(phrase)


@pytest.mark.parametrize(
    "phrase",
    [
        "__import__('os') to meters",
        "open('x') times 2",
        "how many meters are in __import__('os')",
        "().__class__ squared",
        "2 ** 100000 meters to cm",
    ],
)
def test_words_never_reach_anything_but_the_safe_evaluator(phrase: str) -> None:
    with pytest.raises(ValueError):
        calculate(phrase)


def test_phrases_become_expressions_without_being_evaluated() -> None:
    assert to_expression("What is 7 squared?") == "(7) ** 2"
    assert to_expression("subtract 89 from 250") == "(250) - (89)"
    assert to_expression("12% of 250") == "12 / 100 * 250"
    assert to_expression("17 * 23") == "17 * 23"  # symbols pass through


async def test_the_tool_answers_words_and_conversions_with_a_number() -> None:
    assert await calc("17 times 23") == "391"
    assert await calc("Convert 10 kilometers to meters") == "10000"
    assert await calc("12% of 250") == "30"
    assert await calc("5 inches to cm") == "12.7"
    assert (await calc("5 wibbles to meters")).startswith("tool invoke error: unknown unit")
