"""``calculator``: safe arithmetic on an expression, parsed with ``ast`` and never ``eval``-ed.

It also takes what people write — "17 times 23", "12% of 250", "the square root of 625" (rewritten
into an expression by ``_phrases``) and unit conversions such as "5 inches to cm" (``_units``, with
pint's unit registry) — so a caller, a small model above all, can copy the words of a question
instead of translating them into symbols and conversion factors it may not know.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from loopwright.model.entities import ToolExample
from loopwright.tools.base import Tool, ToolInvokeError
from loopwright.tools.builtin._phrases import clean, to_expression
from loopwright.tools.builtin._units import convert
from loopwright.tools.function import function_tool

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "floor": math.floor,
    "ceil": math.ceil,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "min": min,
    "max": max,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
_MAX_EXPONENT = 10_000
# Integers stay below ~3,900 decimal digits: enough for any real arithmetic, small enough that no
# operation takes noticeable time and every result can be printed (Python refuses > 4,300 digits).
_MAX_BITS = 13_000
_MAX_LENGTH = 500


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic expression; raises ValueError with a readable reason."""
    expr = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    if len(expr) > _MAX_LENGTH:
        raise ValueError(f"expression longer than {_MAX_LENGTH} characters")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from None
    try:
        value: int | float = _eval(tree.body)
        return value
    except ZeroDivisionError:
        raise ValueError("division by zero") from None
    except OverflowError:
        raise ValueError("the result is too large") from None


def _eval(node: ast.expr) -> Any:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        _check_size(node.op, left, right)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_eval(a) for a in node.args))
    raise ValueError(f"unsupported element in expression: {ast.unparse(node)!r}")


def _check_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse, before computing, an integer result too large to compute quickly or print."""
    if isinstance(op, ast.Pow):
        if abs(right) > _MAX_EXPONENT:
            raise ValueError(f"exponent larger than {_MAX_EXPONENT}")
        ints = isinstance(left, int) and isinstance(right, int)
        if ints and right > 0 and abs(left) > 1 and max(left.bit_length() - 1, 1) * right > _MAX_BITS:
            raise ValueError("the result is too large")
    elif (
        isinstance(op, ast.Mult)
        and isinstance(left, int)
        and isinstance(right, int)
        and left.bit_length() + right.bit_length() > _MAX_BITS
    ):
        raise ValueError("the result is too large")


def calculate(text: str) -> int | float:
    """The value of an expression, an arithmetic phrase or a unit conversion (the number in the
    unit asked for); raises ValueError with a readable reason."""
    try:
        return evaluate(text)
    except ValueError as e:
        not_symbols = e
    if len(text) > _MAX_LENGTH:
        raise not_symbols
    unit_error: ValueError | None = None
    try:
        converted = convert(clean(text), lambda quantity: evaluate(to_expression(quantity)))
        if converted is not None:
            return float(f"{converted:.12g}")  # 211.99999999999991 °F is 212 °F
    except ValueError as e:
        unit_error = e
    expression = to_expression(text)
    if expression == " ".join(text.split()):  # no words this calculator knows
        raise unit_error or not_symbols
    try:
        value = evaluate(expression)
        return float(f"{value:.12g}") if isinstance(value, float) else value  # 52.48, not 52.480000000000004
    except ValueError as e:
        # A reason about the numbers ("division by zero") says more than "not an expression".
        if unit_error is not None and str(e).startswith(_NOT_READ):
            raise unit_error from None
        raise


_NOT_READ = ("not an arithmetic expression", "unsupported element")

# The characters an expression can use; the schema says so, which also keeps a constrained
# (grammar-guided) model from writing anything else.
EXPRESSION_PATTERN = r"^[0-9A-Za-z(+\-$.][0-9A-Za-z+\-*/%^(). ,$°']*$"


def calculator(expression: Annotated[str, Field(pattern=EXPRESSION_PATTERN)]) -> str:
    """Evaluate arithmetic or convert units, e.g. "(2 + 3) * 4", "15% of 80", "3 feet to cm".

    Args:
        expression: An expression such as "(2 + 3) * 4" or "sqrt(2) / 3" (+ - * / // % ** ^ and
            sqrt, abs, round, floor, ceil, exp, log, log10, sin, cos, tan, min, max, pi, e), the same
            in words ("17 times 23", "the square root of 625", "12% of 250"), or a conversion
            ("5 inches to cm", "how many minutes are in 3.5 hours").
    """
    # Sync: the first conversion loads pint's registry; the engine runs sync tools in a thread.
    try:
        value = calculate(expression)
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            value = int(value)
        return str(value)
    except (ValueError, TypeError) as e:
        raise ToolInvokeError(str(e)) from None


# Worked examples for small models (few-shot): a word problem, arithmetic in words and a unit
# conversion; where the question states the calculation, the expression copies its words.
CALCULATOR_EXAMPLES = (
    ToolExample(
        question="How many legs do 7 spiders have?",
        arguments={"expression": "7 * 8"},
        result="56",
        answer="7 spiders have 56 legs.",
    ),
    ToolExample(
        question="Work out 45 plus 19 minus 8.",
        arguments={"expression": "45 plus 19 minus 8"},
        result="56",
        answer="45 plus 19 minus 8 is 56.",
    ),
    ToolExample(
        question="How long is 26.2 miles in kilometers?",
        arguments={"expression": "26.2 miles in kilometers"},
        result="42.1648128",
        answer="26.2 miles are 42.1648128 kilometers.",
    ),
)


def calculator_tool() -> Tool:
    return function_tool(calculator, examples=CALCULATOR_EXAMPLES, from_question={"expression": "expression"})
