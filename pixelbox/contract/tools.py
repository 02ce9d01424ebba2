"""The atomic image tools' argument checking and function-calling schemas.

The tools themselves are rows of the canonical op table (:data:`pixelbox.contract.ops.TOOL_SPECS`).
One table serves both sides of atomic mode: the kernel validates every call against it before
touching an image (:func:`parse_call`), and the harness turns it into the function-calling
schemas the model sees (:func:`function_schema`). Keeping one table means the model is never
told a range the kernel then rejects. Standard library only (it runs inside the kernel).

Every tool takes ``image_index`` (which image to work on: 0 is the first input, each new image
gets the next index) and an optional ``label`` saying what the operation is for.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pixelbox.contract.ops import TOOL_SPECS, Param, ToolSpec, format_number


class ToolError(ValueError):
    """A bad atomic tool call; the message says what was wrong and what is valid instead."""


@dataclass(frozen=True)
class ParsedCall:
    """A validated call: which image, the label, and keyword arguments for the canonical tool."""

    name: str
    image_index: int
    label: str | None
    kwargs: dict[str, Any]


def parse_call(name: Any, arguments_json: Any) -> ParsedCall:
    """Validate a call as the model sent it (tool name and JSON text); raises :class:`ToolError`."""
    spec = TOOL_SPECS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ToolError(f"unknown atomic tool {name!r}; the image tools are: {', '.join(TOOL_SPECS)}")
    arguments = _decode(spec, arguments_json)
    return check_arguments(spec, arguments)


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> ParsedCall:
    """Validate decoded arguments against ``spec``; unknown names, wrong types and bad ranges are errors."""
    known = {p.name: p for p in spec.all_params()}
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise ToolError(f"{spec.name} has no parameter(s) {', '.join(unknown)}; call it as {spec.signature()}")
    values: dict[str, Any] = {}
    for param in known.values():
        if param.name in arguments and arguments[param.name] is not None:
            if param.kind == "bbox":
                _refuse_fraction_box(spec, param, arguments)
            values[param.name] = _check_value(spec, param, arguments[param.name])
        elif param.required:
            raise ToolError(f"{spec.name} needs {param.describe()}; call it as {spec.signature()}")
        elif param.default is not None:
            values[param.name] = param.default
    if spec.at_least_one_of and not any(values.get(n) is not None for n in spec.at_least_one_of):
        raise ToolError(f"{spec.name} needs at least one of {', '.join(spec.at_least_one_of)}; {spec.signature()}")
    if spec.name == "resize" and values.get("scale") is not None and ("width" in values or "height" in values):
        raise ToolError("resize takes either width/height or scale, not both")
    index, label = values.pop("image_index"), values.pop("label", None)
    return ParsedCall(spec.name, index, label, values)


def function_schema(spec: ToolSpec) -> dict[str, Any]:
    """The OpenAI function-calling schema of one tool."""
    properties = {p.name: _json_schema(p) for p in spec.all_params()}
    required = [p.name for p in spec.all_params() if p.required]
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description + " Adds the result as a new image and returns its index.",
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


# -- helpers -------------------------------------------------------------------------------------


def _decode(spec: ToolSpec, arguments_json: Any) -> dict[str, Any]:
    if isinstance(arguments_json, Mapping):
        return dict(arguments_json)
    if not isinstance(arguments_json, str):
        raise ToolError(f"{spec.name}: arguments must be a JSON object text, got {type(arguments_json).__name__}")
    try:
        value = json.loads(arguments_json or "{}")
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"{spec.name}: the arguments are not valid JSON ({exc.msg} at position {exc.pos}); "
            f"send a JSON object such as {_example(spec)}"
        ) from None
    if not isinstance(value, dict):
        raise ToolError(f"{spec.name}: the arguments must be a JSON object such as {_example(spec)}")
    return value


def _check_value(spec: ToolSpec, param: Param, value: Any) -> Any:
    where = f"{spec.name}: {param.name}"
    if param.kind == "bbox":
        return _check_bbox(where, value)
    if param.kind == "boolean":
        if not isinstance(value, bool):
            raise ToolError(f"{where} must be true or false, got {json.dumps(value)}")
        return value
    if param.kind == "string":
        if not isinstance(value, str):
            raise ToolError(f"{where} must be a string, got {json.dumps(value)}")
        if param.choices and value not in param.choices:
            raise ToolError(f"{where} must be one of {', '.join(param.choices)}; got {value!r}")
        return value
    number = _number(where, value, integer=param.kind == "integer")
    low, high = param.minimum, param.maximum
    if (low is not None and number < low) or (high is not None and number > high):
        allowed = (
            f"between {format_number(low)} and {format_number(high)}"
            if high is not None
            else f"at least {format_number(low)}"
        )
        raise ToolError(f"{where} must be {allowed}, got {format_number(number)}")
    return number


def _number(where: str, value: Any, *, integer: bool) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ToolError(f"{where} must be {'an integer' if integer else 'a number'}, got {json.dumps(value)}")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise ToolError(f"{where} must be a whole number, got {value}")
        return int(value)
    return value


def _refuse_fraction_box(spec: ToolSpec, param: Param, arguments: Mapping[str, Any]) -> None:
    """Refuse a box of 0-1 fractions (four numbers in [0, 1], not all written as integers).

    Such a box is legal in 0-1000 coordinates but almost surely meant as fractions of the image, and
    would silently give a crop of a pixel or two. Integer boxes such as [0, 0, 1, 1] stay legal.
    """
    value = arguments[param.name]
    if not isinstance(value, list) or len(value) != 4:
        return
    numbers = [v for v in value if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if len(numbers) != 4 or not all(0 <= v <= 1 for v in numbers) or all(isinstance(v, int) for v in numbers):
        return
    scaled = [round(v * 1000) for v in numbers]
    corrected = {k: scaled if k == param.name else v for k, v in arguments.items()}
    raise ToolError(
        f"{spec.name}: {param.name} {json.dumps(value)} looks like 0-1 fractions of the image, but the "
        "coordinates are 0-1000 normalized ((0,0) is the top-left corner, (1000,1000) the bottom-right), "
        "so this box would select at most a thousandth of the image's width and height. Multiply by 1000: "
        f"call {spec.name} with {json.dumps(corrected)}"
    )


def _check_bbox(where: str, value: Any) -> list[float]:
    shape = f"{where} must be [x1, y1, x2, y2] with numbers in 0-1000 ((0,0) is the top-left corner)"
    if not isinstance(value, list) or len(value) != 4:
        raise ToolError(f"{shape}; got {json.dumps(value)}")
    numbers = [_number(where, v, integer=False) for v in value]
    if any(v < 0 or v > 1000 for v in numbers):
        raise ToolError(f"{shape}; got {json.dumps(value)}, which leaves the 0-1000 range")
    x1, y1, x2, y2 = numbers
    if x2 <= x1 or y2 <= y1:
        raise ToolError(f"{shape} and x2 > x1, y2 > y1; got {json.dumps(value)}, an empty box")
    return numbers


def _json_schema(param: Param) -> dict[str, Any]:
    schema: dict[str, Any]
    if param.kind == "bbox":
        item = {"type": "number", "minimum": 0, "maximum": 1000}
        schema = {"type": "array", "items": item, "minItems": 4, "maxItems": 4}
    else:
        schema = {"type": param.kind}
        if param.minimum is not None:
            schema["minimum"] = param.minimum
        if param.maximum is not None:
            schema["maximum"] = param.maximum
    if param.choices:
        schema["enum"] = list(param.choices)
    if not param.required and param.default is not None:
        schema["default"] = param.default
    schema["description"] = param.description
    return schema


def _example(spec: ToolSpec) -> str:
    example: dict[str, Any] = {"image_index": 0}
    if spec.name == "crop":
        example["bbox_2d"] = [250, 250, 750, 750]
    elif spec.name == "rotate":
        example["angle"] = 90
    elif spec.name == "resize":
        example["scale"] = 2
    return json.dumps(example)


__all__ = ["TOOL_SPECS", "ParsedCall", "ToolError", "ToolSpec", "check_arguments", "function_schema", "parse_call"]
