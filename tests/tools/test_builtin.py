"""Built-in tools: the safe calculator and current_time."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from loopwright.tools import Tool, ToolEngine
from loopwright.tools.builtin import builtin_tools, calculator_tool, current_time_tool
from loopwright.tools.builtin.calculator import evaluate

# A refusal takes microseconds; computing any of the refused powers would take minutes (or memory
# the machine does not have), so "quick" is measured with a margin a loaded machine cannot miss.
QUICK = 2.0  # seconds


async def calc(expression: str) -> str:
    result = await ToolEngine([calculator_tool()]).invoke("calculator", {"expression": expression})
    return result.observation


async def now_in(timezone: str | None) -> str:
    args = {} if timezone is None else {"timezone": timezone}
    return (await ToolEngine([current_time_tool()]).invoke("current_time", args)).observation


# --- builtin_tools ---------------------------------------------------------------------------------------


def test_builtin_tools_names() -> None:
    tools = builtin_tools()
    assert [t.name for t in tools] == [
        "calculator",
        "current_time",
        "web_fetch",
        "weekday",
        "timezone_conversion",
        "localtime_to_timestamp",
        "timestamp_to_localtime",
        "webscraper",
        "tts",
        "asr",
        "simple_code",
        "ask_user",
    ]
    assert all(isinstance(t, Tool) and t.description for t in tools)
    assert builtin_tools()[0] is not tools[0]  # fresh instances


def test_builtin_schemas() -> None:
    calc_schema = calculator_tool().schema.parameters
    assert calc_schema["required"] == ["expression"]
    assert calc_schema["properties"]["expression"]["type"] == "string"
    assert calc_schema["properties"]["expression"]["description"]
    time_schema = current_time_tool().schema.parameters
    assert time_schema["required"] == []
    assert time_schema["properties"]["timezone"]["default"] == "UTC"


# --- evaluate ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2", 3),
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("10 - 4 - 3", 3),
        ("2 * 3 + 4 * 5", 26),
        ("100 / 8", 12.5),
        ("7 // 2", 3),
        ("7 % 3", 1),
        ("2 ^ 10", 1024),
        ("2 ** 10", 1024),
        ("2 ^ 3 ^ 2", 512),  # right-associative
        ("2 * 3 ^ 2", 18),  # power binds tighter
        ("-3 + 5", 2),
        ("-(2 + 3)", -5),
        ("--4", 4),
        ("+7", 7),
        ("-2 ^ 2", -4),
        ("3 × 4", 12),
        ("8 ÷ 2", 4),
        ("1.5 * 2", 3.0),
        ("sqrt(16)", 4.0),
        ("abs(-5)", 5),
        ("round(2.567, 2)", 2.57),
        ("floor(2.7) + ceil(2.1)", 5),
        ("max(1, 7, 3) - min(4, 2)", 5),
        ("log10(1000)", 3.0),
        ("exp(0)", 1.0),
        ("cos(0)", 1.0),
        ("2 * pi", 2 * math.pi),
        ("e", math.e),
        ("log(e)", 1.0),
        ("  17*23  ", 391),
    ],
)
def test_evaluate(expression: str, expected: float) -> None:
    assert evaluate(expression) == pytest.approx(expected)


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os')",
        "__import__('os').system('echo hacked')",
        "().__class__",
        "().__class__.__bases__[0].__subclasses__()",
        "sqrt.__globals__",
        "open('x')",
        "eval('1')",
        "exec('x=1')",
        "getattr(1, 'real')",
        "a",
        "x + 1",
        "lambda: 1",
        "(lambda x: x)(1)",
        "[1, 2]",
        "{1: 2}",
        "[x for x in (1, 2)]",
        "'abc'",
        "'a' * 3",
        "True",
        "None",
        "1 if 1 else 2",
        "1 < 2",
        "1 and 2",
        "max(1, 2, key=abs)",
        "1j",
        "(x := 1)",
    ],
)
def test_evaluate_refuses_anything_but_arithmetic(expression: str) -> None:
    with pytest.raises(ValueError, match="unsupported element|not an arithmetic expression"):
        evaluate(expression)


@pytest.mark.parametrize("expression", ["import os", "1 +", "2 +* 3", "", "os.system('ls'); 1"])
def test_evaluate_refuses_non_expressions(expression: str) -> None:
    with pytest.raises(ValueError, match="not an arithmetic expression"):
        evaluate(expression)


def test_evaluate_refuses_huge_exponents_quickly() -> None:
    start = time.perf_counter()
    with pytest.raises(ValueError, match="exponent larger than"):
        evaluate("9**9**9")
    with pytest.raises(ValueError, match="exponent larger than"):
        evaluate("2 ^ 100000")
    assert time.perf_counter() - start < QUICK


def test_evaluate_accepts_large_but_bounded_exponents() -> None:
    assert evaluate("2 ** 1000") == 2**1000
    assert evaluate("2 ** -2") == 0.25


def test_evaluate_refuses_overlong_expressions() -> None:
    with pytest.raises(ValueError, match="longer than"):
        evaluate("1+" * 300 + "1")


@pytest.mark.parametrize("expression", ["1 / 0", "5 // 0", "5 % 0", "1 / (2 - 2)"])
def test_evaluate_division_by_zero(expression: str) -> None:
    with pytest.raises(ValueError, match="^division by zero$"):
        evaluate(expression)


def test_evaluate_float_overflow() -> None:
    with pytest.raises(ValueError, match="too large"):
        evaluate("2.0 ** 10000")


# --- the calculator tool through the engine ------------------------------------------------------------


async def test_calculator_tool() -> None:
    assert await calc("17 * 23") == "391"
    assert await calc("2 ^ 10") == "1024"
    assert await calc("10 / 4") == "2.5"
    assert await calc("-7 + 2") == "-5"


@pytest.mark.parametrize(
    ("expression", "shown"), [("10 / 2", "5"), ("sqrt(16)", "4"), ("1.5 * 2", "3"), ("-9 / 3", "-3")]
)
async def test_integer_valued_floats_are_printed_as_ints(expression: str, shown: str) -> None:
    assert await calc(expression) == shown


async def test_non_integer_floats_keep_their_digits() -> None:
    assert await calc("sqrt(2)") == str(math.sqrt(2))
    assert await calc("1 / 3") == str(1 / 3)


async def test_calculator_division_by_zero_observation() -> None:
    assert await calc("1 / 0") == "tool invoke error: division by zero"


@pytest.mark.parametrize("expression", ["__import__('os')", "().__class__", "open('x')", "a"])
async def test_calculator_refusals_are_error_observations(expression: str) -> None:
    obs = await calc(expression)
    # Refused by the schema's character set, or by the evaluator: never evaluated either way.
    assert obs.startswith(
        (
            "tool invoke error: unsupported element in expression",
            "tool parameters validation error: expression",
        )
    ), obs
    with pytest.raises(ValueError, match="unsupported element"):
        evaluate(expression)


async def test_calculator_huge_exponent_observation_is_quick_and_clear() -> None:
    start = time.perf_counter()
    obs = await calc("9**9**9")
    assert time.perf_counter() - start < QUICK
    assert obs == "tool invoke error: exponent larger than 10000"


async def test_calculator_bad_function_arguments_are_tool_invoke_errors() -> None:
    assert (await calc("sqrt(-1)")).startswith("tool invoke error: ")
    assert (await calc("min()")).startswith("tool invoke error: ")
    assert (await calc("1 +")).startswith("tool invoke error: not an arithmetic expression")


async def test_results_too_large_to_print_get_a_clear_message() -> None:
    obs = await calc("9 ** 10000")
    assert "set_int_max_str_digits" not in obs
    assert obs == "tool invoke error: the result is too large"


_HANG_SCRIPT = """
import time
from loopwright.tools.builtin.calculator import evaluate
started = time.perf_counter()
try:
    evaluate("(10 ** 10000) ** 10000")
except ValueError as e:
    print("refused:", e, round(time.perf_counter() - started, 3), flush=True)
else:
    print("computed", flush=True)
"""


def test_nested_huge_power_is_refused_quickly() -> None:
    # In a subprocess, so an unbounded computation (minutes) is killed instead of hanging the suite.
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _HANG_SCRIPT], capture_output=True, text=True, timeout=60, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail("evaluate('(10 ** 10000) ** 10000') was still computing after 60 s")
    assert proc.stdout.startswith("refused:"), proc.stdout + proc.stderr
    assert float(proc.stdout.split()[-1]) < QUICK  # the evaluation itself, imports excluded


# --- current_time --------------------------------------------------------------------------------------


def parse_local(observation: str) -> datetime:
    return datetime.strptime(observation[:19], "%Y-%m-%d %H:%M:%S")


@pytest.mark.parametrize("timezone", ["UTC", "Asia/Tokyo", "Europe/Paris", "America/New_York"])
async def test_current_time_in_a_timezone(timezone: str) -> None:
    obs = await now_in(timezone)
    assert not obs.startswith("tool invoke error"), obs
    expected = datetime.now(ZoneInfo(timezone)).replace(tzinfo=None)
    assert abs(parse_local(obs) - expected) < timedelta(minutes=1)
    assert f"({timezone}, UTC" in obs
    assert parse_local(obs).strftime("%A") in obs


async def test_current_time_tokyo_offset() -> None:
    obs = await now_in("Asia/Tokyo")
    assert obs.endswith("(Asia/Tokyo, UTC+0900)")
    utc = parse_local(await now_in("UTC"))
    assert abs(parse_local(obs) - utc - timedelta(hours=9)) < timedelta(minutes=1)


async def test_current_time_defaults_to_utc() -> None:
    obs = await now_in(None)
    assert obs.endswith("(UTC, UTC+0000)")
    expected = datetime.now(ZoneInfo("UTC")).replace(tzinfo=None)
    assert abs(parse_local(obs) - expected) < timedelta(minutes=1)


@pytest.mark.parametrize("timezone", ["Mars/Olympus_Mons", "Asia", "../../etc/passwd", "/etc/localtime", ""])
async def test_current_time_unknown_timezone(timezone: str) -> None:
    obs = await now_in(timezone)
    assert obs == (
        f"tool invoke error: unknown timezone {timezone!r}; use an IANA name like 'Europe/Paris' "
        "or a city like 'Tokyo'"
    )


@pytest.mark.parametrize(
    ("city", "zone"),
    [("Tokyo", "Asia/Tokyo"), ("new york", "America/New_York"), ("New_York", "America/New_York")],
)
async def test_current_time_takes_a_city_for_its_zone(city: str, zone: str) -> None:
    assert f"({zone}, UTC" in await now_in(city)


async def test_current_time_refuses_a_place_it_does_not_know() -> None:
    assert (await now_in("Narnia")).startswith("tool invoke error: unknown timezone 'Narnia'")
