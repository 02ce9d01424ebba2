"""Our own static reading: the image operations a cell *writes*, in the canonical vocabulary.

Each call is named with libcst's scope metadata and its qualified names (asked for each callee),
so ``from PIL import ImageOps as IO; IO.mirror(x)`` is ``PIL.ImageOps.mirror``, a name imported
or defined by an earlier cell of the episode resolves through that cell (:class:`EpisodeNames`),
and ``from cv2 import *`` makes ``resize`` ``cv2.resize``. The qualified name is looked up in the
recorder's own API table (``pixelbox.kernel.recorder.ops.api_table``), so written and executed
operations share one vocabulary. A method on a value (``img.crop``) is named by its method when the name is an image
method (PIL's ``Image`` methods, ``ImageEnhance``'s ``enhance``...).

Every written operation carries its position (the line and character column of the called name,
the attribute for a method call: where the dynamic half reports it), the parameters that are
literal in the code, the names of those that are computed, and the constructs around it (branch,
loop, function, exception handler) with their line ranges, which the audit uses to say why an
operation did not run. Operations the code may or may not perform on an image (NumPy functions,
slicing, ``255 - a``, comparisons, ``.T``) are listed as *possible*: they pair with executed events
but are never reported as written-and-not-run.
"""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import libcst as cst
from libcst.metadata import (
    CodeRange,
    PositionProvider,
    QualifiedNameSource,
    Scope,
    ScopeProvider,
)

from pixelbox.kernel.recorder.ops import api_table
from pixelbox.tracer.static.parse import ParsedCell, Unreadable, parse_cell

__all__ = ["Enclosure", "EpisodeNames", "Site", "WrittenOp", "read_cell", "read_episode"]

_CERTAIN_ROOTS = ("PIL.", "cv2.")
_METHOD_OWNERS = ("PIL.Image.Image.", "PIL.ImageEnhance._Enhance.", "cv2.CLAHE.")
_POSSIBLE_OWNERS = ("PIL.ImageDraw.ImageDraw.", "matplotlib.axes.Axes.", "matplotlib.pyplot.", "numpy.ndarray.")
_VALUE_METHODS = frozenset(
    {
        "crop",
        "resize",
        "rotate",
        "transpose",
        "thumbnail",
        "enhance",
        "filter",
        "point",
        "convert",
        "paste",
        "getchannel",
        "quantize",
        "reduce",
        "effect_spread",
        "apply",
    }
)
_IO_METHODS = frozenset({"save", "show"})
_CALLBACK_TAKERS = frozenset(
    {"map", "filter", "sorted", "min", "max", "apply", "reduce", "starmap", "apply_along_axis"}
)
_LITERAL_CAP = 400
"""Longest literal argument text kept in ``WrittenOp.literal`` (longer ones count as computed)."""
_GRAY_MODES = frozenset({"L", "LA", "1", "I", "F", "I;16"})
_FILTER_OPS = (
    (("SHARPEN", "UnsharpMask", "DETAIL", "EDGE_ENHANCE"), "sharpen"),
    (("FIND_EDGES", "CONTOUR"), "edge_detect"),
    (("MedianFilter", "ModeFilter"), "denoise"),
    (("BLUR", "Blur", "SMOOTH"), "blur"),
)


@lru_cache(maxsize=1)
def _table() -> dict[str, str]:
    return api_table()


@dataclass(frozen=True)
class Enclosure:
    """A construct around an operation that decides whether it runs: its kind and lines."""

    kind: str  # "branch", "loop", "function", "lambda", "handler", "try"
    line: int
    first: int
    last: int
    name: str = ""
    first_col: int = 0
    last_col: int = 1 << 30
    """Columns of the body's first and last character (a one-line ``x if c else y`` has a narrow body)."""

    def holds(self, line: int, col: int) -> bool:
        """Whether position ``(line, col)`` is inside the construct's body."""
        return (self.first, self.first_col) <= (line, col) <= (self.last, self.last_col)


@dataclass(frozen=True)
class WrittenOp:
    """One operation as the code writes it."""

    op: str
    api: str
    line: int
    col: int
    certain: bool
    literal: dict[str, Any] = field(default_factory=dict)
    computed: tuple[str, ...] = ()
    enclosures: tuple[Enclosure, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON view (enclosures as their kind and line)."""
        return {
            "op": self.op,
            "api": self.api,
            "line": self.line,
            "col": self.col,
            "certain": self.certain,
            "literal": self.literal,
            "computed": list(self.computed),
            "within": [f"{e.kind} at line {e.line}" + (f" ({e.name})" if e.name else "") for e in self.enclosures],
        }


@dataclass(frozen=True)
class Site:
    """A call that is not itself an operation but can reach one: how, and where."""

    how: str  # "getattr", "eval/exec", "callback", "alias", "call"
    line: int
    col: int
    detail: str = ""


@dataclass
class EpisodeNames:
    """Names bound by earlier cells of the episode: imports, star imports, and functions defined."""

    imports: dict[str, str] = field(default_factory=dict)
    star_modules: list[str] = field(default_factory=list)
    functions: dict[str, int] = field(default_factory=dict)
    """Function name -> index of the cell that defined it last (the kernel's execution index)."""
    defined: dict[int, dict[str, tuple[int, int]]] = field(default_factory=dict)
    """Cell index -> its top-level functions' (first line, last line)."""
    methods: frozenset[str] = frozenset()
    """Every method name the episode's classes define (a user method shadows an image method)."""

    def key(self) -> tuple[Any, ...]:
        return (
            tuple(sorted(self.imports.items())),
            tuple(self.star_modules),
            tuple(sorted(self.functions.items())),
            self.methods,
        )

    def helper_at(self, cell: int, line: int) -> str | None:
        """The function cell ``cell`` defines around ``line``, if known."""
        for name, (first, last) in self.defined.get(cell, {}).items():
            if first <= line <= last:
                return name
        return None


@dataclass(frozen=True)
class CellReading:
    """What one cell writes: its operations, the sites that reach operations indirectly, and its names."""

    ops: tuple[WrittenOp, ...]
    sites: tuple[Site, ...]
    imports: dict[str, str]
    star_modules: tuple[str, ...]
    functions: dict[str, tuple[int, int]]
    """Function name -> (first line, last line) for functions this cell defines at top level."""
    methods: frozenset[str] = frozenset()


def _jsonable(value: Any) -> Any:
    """A literal as JSON can hold it: tuples become lists; sets, bytes, complex and non-finite
    numbers become their source-like text (audits travel in traces, which are strict JSON)."""
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, str)) or (isinstance(value, float) and math.isfinite(value)):
        return value
    return repr(value)


def _literal(node: cst.BaseExpression, module: cst.Module) -> tuple[bool, Any]:
    text = module.code_for_node(node).strip()
    if len(text) > _LITERAL_CAP:
        return False, None  # a data blob (a base64 string, a long table) is not a parameter to show
    try:
        return True, _jsonable(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if isinstance(node, cst.Attribute):
        dotted = _dotted(node)
        if dotted and dotted.split(".")[-1].isupper():
            return True, dotted  # a library constant: Image.FLIP_LEFT_RIGHT, cv2.IMREAD_GRAYSCALE
    if isinstance(node, cst.Call) and all(_literal(a.value, module)[0] for a in node.args):
        dotted = _dotted(node.func)
        if dotted and dotted.split(".")[-1][:1].isupper():
            return True, module.code_for_node(node)  # a filter object of constants: ImageFilter.GaussianBlur(2)
    return False, None


def _dotted(node: cst.BaseExpression) -> str | None:
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _refine(op: str, api: str, literal: dict[str, Any]) -> str:
    """The op a literal argument makes of a call, as the recorder would name it."""
    first = literal.get("0", literal.get("mode", literal.get("method")))
    second = literal.get("1", literal.get("code", literal.get("flags")))
    if api == "PIL.Image.Image.convert" and first in _GRAY_MODES:
        return "grayscale"
    if api == "PIL.Image.Image.transpose" and isinstance(first, str):
        return "flip" if "FLIP" in first else "rotate" if "ROTATE" in first else op
    if api == "cv2.cvtColor" and isinstance(second, str) and second.endswith("GRAY"):
        return "grayscale"
    if api == "PIL.Image.Image.filter" and isinstance(first, str):
        for words, refined in _FILTER_OPS:
            if any(word in first for word in words):
                return refined
    if api == "cv2.imread" and isinstance(second, int) and not isinstance(second, bool):
        if second >= 16 and second & 0x70:
            return "resize"
        if second == 0:
            return "grayscale"
    if api == "cv2.imread" and isinstance(second, str):
        if "GRAYSCALE" in second and "REDUCED" not in second:
            return "grayscale"
        if "REDUCED" in second:
            return "resize"
    return op


class _Reader(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, ScopeProvider)

    def __init__(self, module: cst.Module, names: EpisodeNames) -> None:
        super().__init__()
        self.module = module
        self.names = names
        self.ops: list[WrittenOp] = []
        self.sites: list[Site] = []
        self.imports: dict[str, str] = {}
        self.star_modules: list[str] = []
        self.functions: dict[str, tuple[int, int]] = {}
        self.stack: list[Enclosure] = []
        self.aliases: dict[str, str] = {}
        self.methods = names.methods | {n.name.value for n in _class_methods(module)}

    # -- positions and enclosures

    def _range(self, node: cst.CSTNode) -> CodeRange:
        return self.get_metadata(PositionProvider, node)

    def _push(self, kind: str, node: cst.CSTNode, body: cst.CSTNode, name: str = "") -> None:
        whole, inner = self._range(node), self._range(body)
        self.stack.append(
            Enclosure(
                kind, whole.start.line, inner.start.line, inner.end.line, name, inner.start.column, inner.end.column
            )
        )

    def _pop(self) -> None:
        self.stack.pop()

    # Branches, loops, try blocks, lambdas and comprehensions are entered through the attribute hooks
    # set from _ENCLOSING_FIELDS below the class; these three are whole nodes.

    def visit_Else(self, node: cst.Else) -> None:
        self._push("branch", node, node.body)

    def leave_Else(self, original_node: cst.Else) -> None:
        self._pop()

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._push("handler", node, node.body)

    def leave_ExceptHandler(self, original_node: cst.ExceptHandler) -> None:
        self._pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._push("function", node, node.body, node.name.value)
        if len(self.stack) == 1:
            span = self._range(node)
            self.functions[node.name.value] = (span.start.line, span.end.line)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._pop()

    # -- names this cell binds for later cells

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            dotted = _dotted(alias.name) or ""
            bound = alias.evaluated_alias or dotted.split(".")[0]
            self.imports[bound] = dotted if alias.asname else dotted.split(".")[0]

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = _dotted(node.module) or ""
        if isinstance(node.names, cst.ImportStar):
            self.star_modules.append(module)
            return
        for alias in node.names:
            name = alias.evaluated_name
            self.imports[alias.evaluated_alias or name] = f"{module}.{name}"

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            target = node.targets[0].target.value
            value = node.value
            if isinstance(value, cst.Attribute) or (
                isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "getattr"
            ):
                self.aliases[target] = self.module.code_for_node(value)

    # -- operations

    def _position(self, node: cst.BaseExpression) -> tuple[int, int]:
        target = node.attr if isinstance(node, cst.Attribute) else node
        start = self._range(target).start
        return start.line, start.column

    def _enclosures(self) -> tuple[Enclosure, ...]:
        return tuple(self.stack)

    def visit_Call(self, node: cst.Call) -> None:
        line, col = self._position(node.func)
        api, certain = self._resolve(node.func)
        if api is None:
            self._note_site(node, line, col)
            return
        literal: dict[str, Any] = {}
        computed: list[str] = []
        position = 0
        for arg in node.args:
            if arg.star:
                computed.append("*" + arg.star)
                continue
            key = arg.keyword.value if arg.keyword is not None else str(position)
            position += arg.keyword is None
            ok, value = _literal(arg.value, self.module)
            if ok:
                literal[key] = value
            else:
                computed.append(key)
        op = _refine(_table()[api], api, literal)
        if op == "alias":
            return  # copies and spectrum reorderings share their source's id: no operation
        self.ops.append(WrittenOp(op, api, line, col, certain, literal, tuple(computed), self._enclosures()))

    def _note_site(self, node: cst.Call, line: int, col: int) -> None:
        func = node.func
        if isinstance(func, cst.Call) and isinstance(func.func, cst.Name) and func.func.value == "getattr":
            self.sites.append(Site("getattr", line, col, self.module.code_for_node(func)))
            return
        if isinstance(func, cst.Subscript):
            self.sites.append(Site("container lookup", line, col, self.module.code_for_node(func)))
            return
        if isinstance(func, cst.Name):
            name = func.value
            if name in ("eval", "exec") and self._is_builtin(func):
                self.sites.append(Site("eval/exec", line, col, name))
            elif name in self.aliases:
                self.sites.append(Site("alias", line, col, f"{name} = {self.aliases[name]}"))
            elif name in _CALLBACK_TAKERS or any(self._names_an_op(a.value) for a in node.args):
                self.sites.append(Site("callback", line, col, name))
            elif self._unbound(func) and name in self.names.functions:
                self.sites.append(Site("call", line, col, f"{name} (defined in cell {self.names.functions[name]})"))
        elif isinstance(func, cst.Attribute) and any(self._names_an_op(a.value) for a in node.args):
            self.sites.append(Site("callback", line, col, func.attr.value))

    def _names_an_op(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, (cst.Attribute, cst.Name)):
            return self._resolve(node)[0] is not None
        return False

    def _is_builtin(self, name: cst.Name) -> bool:
        return self._unbound(name) and hasattr(builtins, name.value)

    def _unbound(self, name: cst.Name) -> bool:
        scope: Scope | None = self.get_metadata(ScopeProvider, name, None)
        return scope is None or not any(True for _ in scope[name.value])

    def _resolve(self, func: cst.BaseExpression) -> tuple[str | None, bool]:
        """``(api, certain)``: the recorder's dotted name for what ``func`` calls, if any."""
        table = _table()
        scope: Scope | None = self.get_metadata(ScopeProvider, func, None)
        # asked per callee (libcst's QualifiedNameProvider would name every node of the cell)
        imported = False
        for qualified in scope.get_qualified_names_for(func) if scope is not None else ():
            if qualified.source == QualifiedNameSource.IMPORT and qualified.name in table:
                return qualified.name, qualified.name.startswith(_CERTAIN_ROOTS)
            imported = imported or qualified.source == QualifiedNameSource.IMPORT
        dotted = _dotted(func)
        if imported and dotted is not None:
            return None, False  # a module's function the recorder does not record (plt.show, np.save): no method guess
        if dotted is not None:
            head, _, rest = dotted.partition(".")
            head_node = func
            while isinstance(head_node, cst.Attribute):
                head_node = head_node.value
            if isinstance(head_node, cst.Name) and self._unbound(head_node):
                found = self._from_episode(head, rest)
                if found is not None:
                    return found, found.startswith(_CERTAIN_ROOTS)
                if rest and (head in self.imports or head in self.names.imports):
                    return None, False  # an earlier cell's module (plt imported in cell 1): no method guess
        if isinstance(func, cst.Attribute):
            return self._as_method(func.attr.value)
        return None, False

    def _from_episode(self, head: str, rest: str) -> str | None:
        table = _table()
        bound = self.imports.get(head) or self.names.imports.get(head)
        if bound is not None:
            path = f"{bound}.{rest}" if rest else bound
            return path if path in table else None
        for module in [*self.star_modules, *self.names.star_modules]:
            path = f"{module}.{head}" + (f".{rest}" if rest else "")
            if path in table:
                return path
        return None

    def _as_method(self, method: str) -> tuple[str | None, bool]:
        table = _table()
        distinctive = method in _VALUE_METHODS or method in _IO_METHODS
        for owner in _METHOD_OWNERS:
            if distinctive and owner + method in table:
                return owner + method, method not in self.methods
        for owner in (*_METHOD_OWNERS, *_POSSIBLE_OWNERS):
            if owner + method in table:
                return owner + method, False
        return None, False

    # -- possible operations: slicing, operators, .T

    def _possible(self, node: cst.CSTNode, op: str, api: str) -> None:
        start = self._range(node).start
        self.ops.append(WrittenOp(op, api, start.line, start.column, False, enclosures=self._enclosures()))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        sliced = any(isinstance(e.slice, cst.Index) is False for e in node.slice)
        self._possible(node, "crop" if sliced else "convert", "numpy.ndarray.__getitem__")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Subtract) and isinstance(node.left, (cst.Integer, cst.Float)):
            self._possible(node, "invert", "operator.sub")

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.BitInvert):
            self._possible(node, "invert", "operator.invert")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if len(node.comparisons) == 1 and isinstance(
            node.comparisons[0].operator, (cst.GreaterThan, cst.LessThan, cst.GreaterThanEqual, cst.LessThanEqual)
        ):
            operator = node.comparisons[0].operator
            name = {cst.GreaterThan: "gt", cst.LessThan: "lt", cst.GreaterThanEqual: "ge", cst.LessThanEqual: "le"}
            self._possible(node, "threshold", f"operator.{name[type(operator)]}")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "T":
            start = self._range(node.attr).start
            self.ops.append(
                WrittenOp("other", "numpy.ndarray.T", start.line, start.column, False, enclosures=self._enclosures())
            )


_ENCLOSING_FIELDS = (
    ("If", "body", "branch"),
    ("IfExp", "body", "branch"),
    ("IfExp", "orelse", "branch"),
    ("For", "body", "loop"),
    ("While", "body", "loop"),
    ("Try", "body", "try"),
    ("Lambda", "body", "lambda"),
    ("ListComp", "elt", "loop"),
    ("GeneratorExp", "elt", "loop"),
    ("SetComp", "elt", "loop"),
    ("DictComp", "value", "loop"),
)
"""(node, field, enclosure kind): the part of a node that runs only when its construct lets it."""


def _entering(kind: str, field_name: str) -> Any:
    def visit(self: _Reader, node: cst.CSTNode) -> None:
        self._push(kind, node, getattr(node, field_name))

    return visit


def _leaving(self: _Reader, node: cst.CSTNode) -> None:
    self._pop()


for _node, _field, _kind in _ENCLOSING_FIELDS:  # libcst calls visit_<Node>_<field> / leave_<Node>_<field>
    setattr(_Reader, f"visit_{_node}_{_field}", _entering(_kind, _field))
    setattr(_Reader, f"leave_{_node}_{_field}", _leaving)


def _class_methods(module: cst.Module) -> list[cst.FunctionDef]:
    """Methods the cell's classes define: ``p.crop(...)`` on such a class is not PIL's crop."""
    found: list[cst.FunctionDef] = []

    class _Defs(cst.CSTVisitor):
        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
            found.extend(item for item in body if isinstance(item, cst.FunctionDef))

    module.visit(_Defs())
    return found


def _read(parsed: ParsedCell, names: EpisodeNames) -> CellReading:
    reader = _Reader(parsed.wrapper.module, names)
    parsed.wrapper.visit(reader)
    ops = sorted(reader.ops, key=lambda o: (o.line, o.col))
    return CellReading(
        tuple(ops),
        tuple(reader.sites),
        reader.imports,
        tuple(reader.star_modules),
        reader.functions,
        frozenset(reader.methods),
    )


_readings: dict[tuple[str, tuple[Any, ...]], CellReading | Unreadable] = {}


def read_cell(code: str, names: EpisodeNames | None = None) -> CellReading | Unreadable:
    """What ``code`` writes, with names from earlier cells; cached by the text and those names."""
    names = names or EpisodeNames()
    key = (code, names.key())
    hit = _readings.get(key)
    if hit is not None:
        return hit
    parsed = parse_cell(code)
    reading: CellReading | Unreadable
    try:
        reading = parsed if isinstance(parsed, Unreadable) else _read(parsed, names)
    except RecursionError:
        reading = Unreadable("the cell is nested too deeply for the static reader")
    if len(_readings) > 1024:
        _readings.clear()
    _readings[key] = reading
    return reading


def clear_reading_cache() -> None:
    """Forget cached readings (benchmarks measure the uncached path with it)."""
    _readings.clear()


def read_episode(cells: Sequence[str]) -> list[CellReading | Unreadable]:
    """Each cell read with the names the cells before it bound."""
    names = EpisodeNames()
    readings: list[CellReading | Unreadable] = []
    for index, code in enumerate(cells):
        reading = read_cell(code, names)
        readings.append(reading)
        names = advance(names, reading, index)
    return readings


def advance(names: EpisodeNames, reading: CellReading | Unreadable, index: int) -> EpisodeNames:
    """The episode's names after cell ``index`` ran."""
    if isinstance(reading, Unreadable):
        return names
    return EpisodeNames(
        {**names.imports, **reading.imports},
        [*names.star_modules, *reading.star_modules],
        {**names.functions, **dict.fromkeys(reading.functions, index)},
        {**names.defined, index: dict(reading.functions)},
        names.methods | reading.methods,
    )
