"""The official reading: the operations Agentic-MME's general runner lists for a code block.

The official general (code-mode) runner does not record what executed. After an episode it reads
each ``<code>`` block's syntax tree and writes one tool entry per operation it recognises, with the
name of the image file the operation is taken to produce. Official scoring (V_tool, ordering,
overthink) then reads those entries. Reproducing the official verdicts therefore needs that reading,
rule for rule, including what it gets wrong from our point of view:

- calls are recognised by their method name on any object that is not ``cv2``
  (``img.crop``, ``ImageOps.crop``, ``deque.rotate`` alike), OpenCV calls by the dotted name's end
  (``cv2.resize``); a bare function name (``from cv2 import resize``) is never seen;
- a PIL-style ``resize`` visited after a ``crop`` in the same block is dropped (``cv2.resize`` is
  not); visiting order is the syntax tree's, outer call before the calls inside it, so
  ``img.crop(b).resize(s)`` keeps its resize;
- ``ImageOps.mirror``, ``ImageOps.flip``, ``cv2.rotate``, ``np.rot90``, ``np.fliplr`` are not seen;
  ``transpose`` with a ``FLIP_*`` constant is a flip, with another constant an enhance, with any
  other first argument a flip (``np.transpose(a)``, ``a.transpose(1, 0, 2)``), with keyword
  arguments only nothing;
- ``getRotationMatrix2D`` and ``warpAffine`` are one rotate each; drawing (PIL and OpenCV), filters,
  edges, colour conversion, thresholds and ``convert``/``paste``/``point`` (``point`` twice) are enhances;
- calls inside a ``for`` loop whose length is literal (a list, ``range`` of constants, a name bound
  to a literal) are listed once per iteration (a zero-length loop still once; over 50, once with
  the count), other loops once; the loop's own header is not read; ``while`` loops and
  comprehensions count once;
- a block Python cannot parse lists nothing;
- each operation is tied to the first ``save``/``imwrite`` at or after it, by file name.

The reading is made with Python's :mod:`ast`, as the official runner makes it, so that line
numbers, visiting order and what fails to parse are the same; our own reading of what the code
says (:mod:`pixelbox.tracer.static.reader`) uses libcst. The expected outputs in
``tests/tracer/static/official_cases.json`` were derived by running the official code on each case.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = [
    "OfficialOp",
    "OfficialReading",
    "OfficialSave",
    "official_operations",
    "official_reading",
    "official_saves",
    "official_summary",
    "official_tool_arguments",
]

_NUMBERED = re.compile(r"transformed_image_(\d+)\.png", re.IGNORECASE)
_IMAGE_SUFFIX = re.compile(r"\.(png|jpg|jpeg|bmp|gif|tiff?)$", re.IGNORECASE)
_LOOP_PATTERN = re.compile(r"transformed_image_\{([a-zA-Z_]\w*)\}\.png")
_EXPANSION_CAP = 50
_PRIORITY = ("crop", "flip", "rotate", "resize")

_PIL_DRAWING = frozenset({"rectangle", "line", "ellipse", "polygon", "text", "point"})
_PIL_ENHANCING = frozenset({"convert", "point", "paste", "putalpha", "putpixel", "autocontrast"})
# (suffixes of the lower-cased dotted name, op, kind), in the order the official runner tests them.
_OPENCV_RULES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("cv2.resize",), "resize", "cv2"),
    (("cv2.warpaffine", "cv2.getrotationmatrix2d"), "rotate", "cv2"),
    (("cv2.warpperspective",), "rotate", "cv2_perspective"),
    (("cv2.flip",), "flip", "cv2_flip"),
    (("cv2.rectangle", "cv2.line", "cv2.circle", "cv2.ellipse", "cv2.polylines", "cv2.puttext"), "enhance", "cv2_draw"),
    (("cv2.canny", "cv2.sobel", "cv2.laplacian", "cv2.scharr"), "enhance", "cv2_edge"),
    (
        ("cv2.blur", "cv2.gaussianblur", "cv2.medianblur", "cv2.bilateralfilter", "cv2.filter2d"),
        "enhance",
        "cv2_filter",
    ),
    (("cv2.erode", "cv2.dilate", "cv2.morphologyex"), "enhance", "cv2_morph"),
    (("cv2.cvtcolor", "cv2.equalizehist", "cv2.clahe", "cv2.convertscaleabs"), "enhance", "cv2_color"),
    (("cv2.threshold", "cv2.adaptivethreshold"), "enhance", "cv2_threshold"),
)


@dataclass(frozen=True)
class OfficialOp:
    """One operation as the official runner lists it (one tool entry).

    ``op`` is the tool name it writes (crop, rotate, resize, enhance, flip); ``line`` and ``col`` are
    the call's position (``col`` in UTF-8 bytes, as :mod:`ast` gives it); ``save`` is the file the
    operation is tied to, as written in the code (possibly a path or a ``{i}`` pattern; empty when no
    save follows); ``kind`` says which rule saw it; ``loop_count`` is set when a loop of more than 50
    iterations was listed once instead of expanded.
    """

    op: str
    line: int
    col: int
    save: str
    kind: str
    loop_count: int | None = None

    @property
    def save_name(self) -> str:
        """The file name the runner writes in the entry (``arguments.save``): the last path part."""
        return _basename(self.save)

    def arguments(self) -> dict[str, Any]:
        """The entry's ``arguments`` exactly as the runner writes them: ``op``, ``save``, ``line``."""
        return {"op": self.op, "save": self.save_name, "line": self.line}


@dataclass(frozen=True)
class OfficialSave:
    """One save the official runner counts (``num_saves``), with its guess of the operation."""

    image_index: int
    line: int
    col: int
    filename: str
    op_guess: str
    standard_name: bool


@dataclass(frozen=True)
class OfficialReading:
    """Everything the official reading gives for one block: operations in entry order, and saves."""

    operations: tuple[OfficialOp, ...]
    saves: tuple[OfficialSave, ...]
    parsed: bool = True


@dataclass(frozen=True)
class _Found:
    op: str
    line: int
    col: int
    kind: str
    loop_count: int | None = None


@dataclass
class _BlockState:
    """What the reading remembers while it walks one block."""

    found: list[_Found] = field(default_factory=list)
    saves: list[tuple[int, int, int, str, bool]] = field(default_factory=list)
    filenames: dict[str, str] = field(default_factory=dict)
    lengths: dict[str, int] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)
    seen_crop: bool = False
    multipliers: list[int] = field(default_factory=lambda: [1])
    loops: list[ast.For] = field(default_factory=list)


def _basename(path: str) -> str:
    if "/" in path or "\\" in path:
        return path.split("/")[-1].split("\\")[-1]
    return path


def _looks_like_image(name: str) -> bool:
    return bool(_NUMBERED.search(name) or _IMAGE_SUFFIX.search(name))


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for an attribute chain; a chain on a call result keeps only the attribute part."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        names.append(node.id)
    return ".".join(reversed(names))


def _literal_int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _literal_int(node.operand)
        return None if inner is None else -inner
    return None


def _range_length(call: ast.Call) -> int | None:
    if not (isinstance(call.func, ast.Name) and call.func.id == "range") or not call.args:
        return None
    bounds = [_literal_int(a) for a in call.args]
    if any(b is None for b in bounds):
        return None
    values = [b for b in bounds if b is not None]
    start, stop, step = (0, values[0], 1) if len(values) == 1 else (*values[:2], 1) if len(values) == 2 else values[:3]
    if step == 0:
        return None
    if (step > 0 and start >= stop) or (step < 0 and start <= stop):
        return 0
    return (stop - start + step - 1) // step if step > 0 else (stop - start + step + 1) // step


def _iteration_count(node: ast.AST, lengths: dict[str, int]) -> int | None:
    """How many times a ``for`` over ``node`` runs, when the code says so literally."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return len(node.elts)
    if isinstance(node, ast.Dict):
        return len(node.keys)
    if isinstance(node, ast.Name):
        return lengths.get(node.id)
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name) and node.func.id == "enumerate" and node.args:
        return _iteration_count(node.args[0], lengths)
    counted = _range_length(node)
    if counted is not None:
        return counted
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("items", "keys", "values"):
        base = node.func.value
        if isinstance(base, ast.Dict):
            return len(base.keys)
        if isinstance(base, ast.Name):
            return lengths.get(base.id)
    return None


def _fstring_pattern(node: ast.JoinedStr) -> str:
    pieces: list[str] = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            pieces.append(str(part.value))
        elif isinstance(part, ast.FormattedValue):
            pieces.append("{" + part.value.id + "}" if isinstance(part.value, ast.Name) else "{expr}")
    return "".join(pieces)


def _file_name(node: ast.AST, names: dict[str, str]) -> str:
    """The image file name an expression spells, when the code gives it literally (else '')."""
    if isinstance(node, ast.Name):
        return names.get(node.id, "")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Call):
        return _file_name_in_call(node, names)
    if isinstance(node, ast.BinOp):
        for side in (node.left, node.right):
            spelled = _file_name(side, names)
            if spelled and _looks_like_image(spelled):
                return spelled
        return ""
    if isinstance(node, ast.JoinedStr):
        pattern = _fstring_pattern(node)
        return pattern if _looks_like_image(pattern) else ""
    return ""


def _file_name_in_call(call: ast.Call, names: dict[str, str]) -> str:
    """``os.path.join(dir, "x.png")`` and the like: the first argument that names an image."""
    for arg in call.args:
        candidate = ""
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            candidate = arg.value
        elif isinstance(arg, ast.JoinedStr):
            candidate = _fstring_pattern(arg)
        elif isinstance(arg, ast.Name):
            candidate = names.get(arg.id, "")
        if candidate and _looks_like_image(candidate):
            return candidate
    for keyword in call.keywords:
        value = keyword.value
        candidate = ""
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            candidate = value.value
        elif isinstance(value, ast.Name):
            candidate = names.get(value.id, "")
        if candidate and _looks_like_image(candidate):
            return candidate
    return ""


def _step_per_iteration(loop: ast.For) -> dict[str, int]:
    """``i += 1`` / ``i -= 2`` statements directly in the loop body: the step of each counter."""
    steps: dict[str, int] = {}
    for statement in loop.body:
        if not (isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name)):
            continue
        step = _literal_int(statement.value)
        if step is None:
            continue
        name = statement.target.id
        if isinstance(statement.op, ast.Add):
            steps[name] = steps.get(name, 0) + step
        elif isinstance(statement.op, ast.Sub):
            steps[name] = steps.get(name, 0) - step
    return steps


class _Reader(ast.NodeVisitor):
    """Walks one block in the syntax tree's order, applying the official rules."""

    def __init__(self) -> None:
        self.state = _BlockState()

    # -- bindings the rules read later

    def visit_Assign(self, node: ast.Assign) -> None:
        state = self.state
        if node.targets and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            count = _iteration_count(node.value, state.lengths)
            if count is not None:
                state.lengths[name] = count
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
                state.constants[name] = node.value.value
            spelled = _file_name(node.value, state.filenames)
            if spelled and _looks_like_image(spelled):
                state.filenames[name] = spelled
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        state = self.state
        count = _iteration_count(node.iter, state.lengths)
        outer = state.multipliers[-1]
        state.multipliers.append(outer if count is None else outer * count)
        state.loops.append(node)
        for statement in (*node.body, *node.orelse):
            self.visit(statement)
        state.loops.pop()
        state.multipliers.pop()

    # -- calls

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute):
            dotted = _dotted(node.func).lower()
            self._method_rules(node, node.func.attr.lower(), dotted)
            self._opencv_rules(node, dotted)
        self.generic_visit(node)

    def _add(self, node: ast.Call, op: str, kind: str) -> None:
        times = self.state.multipliers[-1]
        found = _Found(op, node.lineno, node.col_offset, kind)
        if times > _EXPANSION_CAP:
            found = _Found(op, node.lineno, node.col_offset, kind, loop_count=times)
            times = 1
        self.state.found.extend([found] * max(times, 1))

    def _method_rules(self, node: ast.Call, method: str, dotted: str) -> None:
        pil = not (dotted.startswith("cv2") or "opencv" in dotted)
        if pil and method == "crop":
            self._add(node, "crop", "pil_method")
            self.state.seen_crop = True
        elif pil and method == "rotate":
            self._add(node, "rotate", "pil_method")
        elif pil and method == "resize" and not self.state.seen_crop:
            self._add(node, "resize", "pil_method")
        if pil and method == "enhance":
            self._add(node, "enhance", "pil_enhance")
        if pil and method == "transpose":
            self._transpose(node)
        if method in _PIL_DRAWING and ("draw" in dotted or pil):
            self._add(node, "enhance", "imagedraw")
        if method == "filter" and ("imagefilter" in dotted or pil):
            self._add(node, "enhance", "imagefilter")
        if pil and method in _PIL_ENHANCING:
            self._add(node, "enhance", "pil_enhance_method")
        if pil and method == "save":
            for arg in node.args:
                self._save(node, arg, expand=True)

    def _transpose(self, node: ast.Call) -> None:
        if not node.args:
            return
        method = node.args[0]
        if isinstance(method, ast.Attribute):
            self._add(node, "flip" if "FLIP" in method.attr.upper() else "enhance", "pil_transpose")
        else:
            self._add(node, "flip", "pil_transpose")

    def _opencv_rules(self, node: ast.Call, dotted: str) -> None:
        for suffixes, op, kind in _OPENCV_RULES:
            if dotted.endswith(suffixes):
                self._add(node, op, kind)
        if dotted.endswith("cv2.imwrite") and node.args:
            self._save(node, node.args[0], expand=False)

    # -- saves

    def _save(self, node: ast.Call, target: ast.AST, *, expand: bool) -> None:
        state = self.state
        spelled = _file_name(target, state.filenames)
        if not spelled:
            return
        loop = state.loops[-1] if state.loops else None
        if expand and loop is not None:
            count = _iteration_count(loop.iter, state.lengths)
            if count and count > 1:
                names = self._numbered_in_loop(spelled, count, loop)
                if names:
                    state.saves.extend(_numbered_record(k, node) for k in names)
                    return
        numbered = _NUMBERED.search(spelled)
        if numbered:
            k = int(numbered.group(1))
            record = (k, node.lineno, node.col_offset, f"transformed_image_{k}.png", True)
        elif _IMAGE_SUFFIX.search(spelled):
            record = (-1, node.lineno, node.col_offset, spelled, False)
        else:
            return
        times = state.multipliers[-1]
        state.saves.extend([record] * (times if 1 < times <= _EXPANSION_CAP else 1))

    def _numbered_in_loop(self, pattern: str, count: int, loop: ast.For) -> list[int]:
        """``transformed_image_{i}.png`` with ``i = K`` before the loop and ``i += s`` in it: K, K+s, ..."""
        matched = _LOOP_PATTERN.fullmatch(pattern)
        if not matched or matched.group(1) not in self.state.constants:
            return []
        counter = matched.group(1)
        step = _step_per_iteration(loop).get(counter)
        if step is None:
            return []
        start = self.state.constants[counter]
        self.state.constants[counter] = start + step * count
        return [start + step * t for t in range(count)]


def _numbered_record(k: int, node: ast.Call) -> tuple[int, int, int, str, bool]:
    """A save the loop rule numbered; a negative number no longer reads as a numbered name."""
    name = f"transformed_image_{k}.png"
    return (k, node.lineno, node.col_offset, name, True) if k >= 0 else (-1, node.lineno, node.col_offset, name, False)


def _guess(found: Sequence[_Found]) -> str:
    for wanted in _PRIORITY:
        if any(f.op == wanted for f in found):
            return wanted
    return found[-1].op if found else "unknown"


def _saves_with_guesses(found: Sequence[_Found], raw: Iterable[tuple[int, int, int, str, bool]]) -> list[OfficialSave]:
    saves: list[OfficialSave] = []
    previous_line = 0
    unnumbered = 0
    for index, line, col, name, standard in sorted(raw, key=lambda s: (s[1], s[2])):
        if index == -1:
            index, unnumbered = unnumbered, unnumbered + 1
        guess = _guess([f for f in found if previous_line < f.line <= line])
        if guess == "unknown":
            guess = _guess([f for f in found if f.line < line])
        saves.append(OfficialSave(index, line, col, name, guess, standard))
        previous_line = line
    return saves


def _tie_to_saves(found: Sequence[_Found], saves: Sequence[OfficialSave]) -> list[OfficialOp]:
    points = sorted((s.line, s.col, s.filename) for s in saves)
    ops: list[OfficialOp] = []
    for f in found:
        target = next((name for line, col, name in points if line > f.line or (line == f.line and col >= f.col)), "")
        ops.append(OfficialOp(f.op, f.line, f.col, target, f.kind, f.loop_count))
    return ops


@lru_cache(maxsize=4096)
def official_reading(code: str) -> OfficialReading:
    """The official runner's reading of one code block (cached by the block's text)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return OfficialReading((), (), parsed=False)
    reader = _Reader()
    reader.visit(tree)
    found = sorted(reader.state.found, key=lambda f: (f.line, f.col))
    saves = _saves_with_guesses(found, reader.state.saves)
    return OfficialReading(tuple(_tie_to_saves(found, saves)), tuple(saves))


def official_operations(code: str) -> list[OfficialOp]:
    """The operations the official runner lists for one block, in the order it writes them."""
    return list(official_reading(code).operations)


def official_saves(code: str) -> list[OfficialSave]:
    """The saves the official runner counts for one block (``num_saves``), in position order."""
    return list(official_reading(code).saves)


def official_tool_arguments(blocks: Sequence[str]) -> list[dict[str, Any]]:
    """The visual entries' ``arguments`` for an episode's code blocks, in the runner's order.

    The runner writes ``tool_use_list.json`` as: every search-tool entry, then these entries (block
    by block, each block's operations by position), then one ``run_visual_processing_code`` entry
    per executed block. Each entry's ``tool_name`` is its ``arguments["op"]``.
    """
    return [op.arguments() for code in blocks for op in official_operations(code)]


def official_summary(blocks: Sequence[str]) -> dict[str, Any]:
    """``run_meta.code_analysis`` without ``num_images_found`` (which counts files on disk)."""
    hist: dict[str, int] = {}
    ops = saves = 0
    for code in blocks:
        reading = official_reading(code)
        ops += len(reading.operations)
        saves += len(reading.saves)
        for op in reading.operations:
            hist[op.op] = hist.get(op.op, 0) + 1
    return {"num_detected_ops": ops, "primitive_op_hist": hist, "num_saves": saves}
