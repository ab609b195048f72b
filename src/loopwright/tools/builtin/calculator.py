"""``calculator``: safe arithmetic on an expression, parsed with ``ast`` and never ``eval``-ed."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from loopwright.tools.base import Tool, ToolInvokeError
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


# The characters an expression can use; the schema says so, which also keeps a constrained
# (grammar-guided) model from writing anything else.
EXPRESSION_PATTERN = r"^[0-9a-z(+\-][0-9a-z+\-*/%^(). ,]*$"


async def calculator(expression: Annotated[str, Field(pattern=EXPRESSION_PATTERN)]) -> str:
    """Evaluate an arithmetic expression and return the result.

    Args:
        expression: The expression, e.g. "(2 + 3) * 4" or "sqrt(2) / 3". Supports + - * / // % ** ^
            and sqrt, abs, round, floor, ceil, exp, log, log10, sin, cos, tan, min, max, pi, e.
    """
    try:
        value = evaluate(expression)
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            value = int(value)
        return str(value)
    except (ValueError, TypeError) as e:
        raise ToolInvokeError(str(e)) from None


def calculator_tool() -> Tool:
    return function_tool(calculator)
