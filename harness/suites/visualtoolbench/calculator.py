"""The ``calculator`` tool: arithmetic evaluated from the expression's syntax tree, never with ``eval``.

As in the official tool: numbers, ``+ - * / % **``, unary minus, parentheses and the one-argument
functions ``sqrt sin cos tan log exp``. Anything else (``^``, ``//``, names, unary plus, other
calls) is an error result, not an exception. Results are ``{"result": str(value), "expression",
"status": "success"}``; failures ``{"result": "Error", "expression", "status": "error", "error"}``.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
FUNCTIONS: dict[str, Callable[[float], float]] = {
    "sqrt": math.sqrt,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "log": math.log,
    "exp": math.exp,
}
MAX_EXPONENT = 10_000
"""Larger integer powers are refused (the official tool would try and hang)."""


class CalculatorError(ValueError):
    """The expression uses something the calculator does not evaluate."""


def calculate(expression: Any) -> dict[str, Any]:
    """Evaluate ``expression``; always returns the official result shape."""
    try:
        if not isinstance(expression, str):
            raise CalculatorError(f"expression must be a string, got {type(expression).__name__}")
        value = _evaluate(ast.parse(expression.strip(), mode="eval").body)
        return {"result": str(value), "expression": expression, "status": "success"}
    except (CalculatorError, SyntaxError, ArithmeticError, ValueError, TypeError) as exc:
        return {"result": "Error", "expression": expression, "status": "error", "error": str(exc)}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
            raise CalculatorError(f"exponent {right} is too large (at most {MAX_EXPONENT})")
        return BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
        if len(node.args) != 1 or node.keywords:
            raise CalculatorError(f"{node.func.id} takes exactly one argument")
        return FUNCTIONS[node.func.id](_evaluate(node.args[0]))
    raise CalculatorError(
        f"unsupported element {ast.unparse(node)!r}; use numbers, + - * / % **, parentheses and {', '.join(FUNCTIONS)}"
    )
