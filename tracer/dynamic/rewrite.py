"""Rewrite an agent's cell so that every call, subscript, ``.T`` and a few operators report to the recorder.

The rewrite only *inserts* text inline at positions taken from Python's own parser, so every
untouched byte stays identical and no line is added or removed: line numbers in tracebacks,
warnings and recorded events are the agent's. Each construct keeps Python's evaluation order:

- ``f(a, *b, **c)``  ->  ``__pbx__.c(f, L, C)(a, *b, **c)``: ``c`` returns ``f`` itself unless
  ``f`` is a known image operation, so the call still happens in the agent's frame (zero-argument
  ``super()``, ``locals()``, generators, ``await`` and exceptions behave as before);
- ``x[k]`` (loads only) -> ``__pbx__.s(x, L, C)[k]``: ``s`` returns ``x`` unless it is an image array;
- ``255 - a``, ``~a``, ``a > t`` (and ``<``, ``>=``, ``<=``) -> ``__pbx__.sub/inv/gt...(...)``,
  which compute the same operator and record inversions and thresholds;
- ``x.T`` (loads only) -> ``__pbx__.t(x, L, C)``, which returns ``x.T`` and records a transpose.

Python's ``ast`` is used instead of libcst, measured side by side on the tracer corpus
(``benchmarks/bench_tracer.py``): this whole rewrite takes 0.2 ms per cell at the median, while
libcst needs about 4 ms just to parse and resolve positions and 6-7 ms (p90 12-14 ms, over the
10 ms budget) for a transformer that only wraps calls. Text between the inserted tokens is never
rewritten, which is the guarantee libcst would have given.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import unicodedata
from dataclasses import dataclass

from pixelbox.contract.wire import RECORDER_NAME

RESERVED_PREFIX = "__pbx"

_MAGIC_LINE = re.compile(r"^([ \t]*)([%!].*)$")
_ORDER_OPS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Gt: ("gt", ">"),
    ast.Lt: ("lt", "<"),
    ast.GtE: ("ge", ">="),
    ast.LtE: ("le", "<="),
}


@dataclass(frozen=True)
class Edit:
    """Insert ``text`` at ``pos`` (a character offset), or replace ``pos:end`` when ``end`` is set.

    ``rank`` orders insertions that share a position: openings of outer nodes (larger negative
    rank) come first, closings of inner nodes come first.
    """

    pos: int
    text: str
    rank: int = 0
    end: int | None = None


class _Collector(ast.NodeVisitor):
    """Walks a module and collects the inline edits that instrument it."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines(keepends=True)
        self.starts: list[int] = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.source = source
        self.edits: list[Edit] = []
        self.skipped: list[int] = []
        self.written_through: set[int] = set()
        """ids of ``x.T`` nodes that a store or delete writes through (``x.T[i] = v``)."""

    # -- positions ---------------------------------------------------------------------------
    def offset(self, lineno: int, col_bytes: int) -> int:
        """Character offset in the source of a (1-based line, UTF-8 byte column) position."""
        line = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        col = col_bytes if line.isascii() else len(line.encode()[:col_bytes].decode(errors="ignore"))
        return self.starts[lineno - 1] + col

    def char_col(self, lineno: int, col_bytes: int) -> int:
        return self.offset(lineno, col_bytes) - self.starts[lineno - 1]

    def span(self, node: ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def wrap(self, node: ast.expr, opening: str, closing: str) -> None:
        start, end = self.span(node)
        size = end - start
        self.edits.append(Edit(start, opening, rank=-size))
        self.edits.append(Edit(end, closing, rank=size))

    def site(self, node: ast.expr) -> str:
        return f", {node.lineno}, {self.char_col(node.lineno, node.col_offset)})"

    # -- nodes -------------------------------------------------------------------------------
    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        """Instrument f-string fields whose reported positions really hold their source.

        Before Python 3.12 some f-string positions are wrong (nested quotes, multi-line strings);
        a field is instrumented only when the text at its position parses back to the same tree.
        Fields that fail the check are left alone and listed in ``skipped``, and so are
        self-documenting fields (``{expr=}``), which print their own source text.
        """
        for part in node.values:
            if not isinstance(part, ast.FormattedValue):
                continue
            if self._positions_hold(part.value) and not self._prints_itself(part.value):
                self.visit(part.value)
            else:
                self.skipped.append(part.value.lineno)
            if part.format_spec is not None:
                self.visit(part.format_spec)

    def _positions_hold(self, value: ast.expr) -> bool:
        start, end = self.span(value)
        try:
            parsed = ast.parse(self.source[start:end].strip(), mode="eval").body
        except SyntaxError:
            return False
        return ast.dump(parsed) == ast.dump(value)

    def _prints_itself(self, value: ast.expr) -> bool:
        _, end = self.span(value)
        rest = self.source[end : end + 80].lstrip()
        return rest.startswith("=") and not rest.startswith("==")

    def visit_match_case(self, node: ast.match_case) -> None:
        """Patterns are matched, not run: ``case E.T:`` or ``case 1 - 2j:`` must stay as written."""
        if node.guard is not None:
            self.visit(node.guard)
        for stmt in node.body:
            self.visit(stmt)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_arg(self, node: ast.arg) -> None:
        """Annotations are types, not image operations: keep them byte-identical."""

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for item in node.decorator_list:
            self.visit(item)
        self.visit(node.args)
        for stmt in node.body:
            self.visit(stmt)

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.end_col_offset is not None:
            assert func.end_lineno is not None
            line, col = func.end_lineno, self.char_col(func.end_lineno, func.end_col_offset) - len(func.attr)
        else:
            line, col = func.lineno, self.char_col(func.lineno, func.col_offset)
        self.wrap(func, f"{RECORDER_NAME}.c(", f", {line}, {col})")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            self.wrap(node.value, f"{RECORDER_NAME}.s(", self.site(node))
        else:  # ``a.T[i] = v``, ``a.T[i][j] = v``: written through the view, no transpose to record
            base = node.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Attribute) and base.attr == "T":
                self.written_through.add(id(base))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        """``x.T`` becomes ``__pbx__.t(x, L, C)``, so an array transpose is recorded where it is written.

        Left alone when the dot and the ``T`` are on different lines (lines must not move).
        """
        if node.attr == "T" and isinstance(node.ctx, ast.Load) and id(node) not in self.written_through:
            _, value_end = self.span(node.value)
            start, end = self.span(node)
            dot = _find_operator(self.source, value_end, end, ".")
            if "\n" not in self.source[dot:end]:
                assert node.end_lineno is not None and node.end_col_offset is not None
                site = f", {node.end_lineno}, {self.char_col(node.end_lineno, node.end_col_offset) - 1})"
                self.edits.append(Edit(start, f"{RECORDER_NAME}.t(", rank=start - end))
                self.edits.append(Edit(dot, site, end=end))
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Invert):
            start, end = self.span(node)
            self.edits.append(Edit(start, f"{RECORDER_NAME}.inv(", end=start + 1))
            self.edits.append(Edit(end, self.site(node), rank=end - start))
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        literal = isinstance(node.left, ast.Constant) and type(node.left.value) in (int, float)
        if isinstance(node.op, ast.Sub) and literal:
            self.replace_operator(node, node.left, node.right, "-", "sub")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if len(node.ops) == 1 and type(node.ops[0]) in _ORDER_OPS:
            method, symbol = _ORDER_OPS[type(node.ops[0])]
            self.replace_operator(node, node.left, node.comparators[0], symbol, method)
        self.generic_visit(node)

    def replace_operator(self, node: ast.expr, left: ast.expr, right: ast.expr, symbol: str, method: str) -> None:
        """Turn ``left OP right`` into ``__pbx__.method(left, right, L, C)`` in place."""
        _, gap_start = self.span(left)
        gap_end, _ = self.span(right)
        where = _find_operator(self.source, gap_start, gap_end, symbol)
        self.wrap(node, f"{RECORDER_NAME}.{method}(", self.site(node))
        self.edits.append(Edit(where, ",", end=where + len(symbol)))


def _find_operator(source: str, start: int, end: int, symbol: str) -> int:
    """Offset of ``symbol`` in the gap between two operands, skipping comments."""
    i = start
    while i < end:
        ch = source[i]
        if ch == "#":
            i = source.index("\n", i, end) if "\n" in source[i:end] else end
            continue
        if source.startswith(symbol, i) and not (len(symbol) == 1 and source[i + 1 : i + 2] == "="):
            return i
        i += 1
    raise ValueError(f"operator {symbol!r} not found between offsets {start} and {end}")


def apply_edits(source: str, edits: list[Edit]) -> str:
    """Apply edits; at one position insertions come before a replacement, ordered by ``rank``."""
    ordered = sorted(edits, key=lambda e: (e.pos, e.end is not None, e.rank))
    out: list[str] = []
    cursor = 0
    for edit in ordered:
        if edit.pos > cursor:
            out.append(source[cursor : edit.pos])
            cursor = edit.pos
        out.append(edit.text)
        if edit.end is not None:
            cursor = edit.end
    out.append(source[cursor:])
    return "".join(out)


def mask_magics(source: str) -> tuple[str, dict[int, str]]:
    """Replace IPython line magics and shell escapes by ``pass`` so Python can parse the cell.

    Only lines where a magic really starts a logical line are masked (``%time x``, ``!ls``,
    ``out = !ls``, ``files = %ls``); a ``%`` that continues an expression inside brackets or a
    string is Python and stays. Returns the masked source and the original lines by index, to be
    put back after instrumenting. Code run through a magic is not traced: callers report the
    masked lines as untraced.
    """
    lines = source.split("\n")
    masked: dict[int, str] = {}
    for i in _magic_line_indices(source):
        masked[i] = lines[i]
        lines[i] = lines[i][: len(lines[i]) - len(lines[i].lstrip())] + "pass"
    return "\n".join(lines), masked


def _magic_line_indices(source: str) -> list[int]:
    """0-based indices of lines that begin a logical line with an IPython magic or shell escape."""
    try:
        ast.parse(source)
        return []
    except (SyntaxError, ValueError):
        pass
    try:
        return _scan_logical_starts(source)
    except (tokenize.TokenError, SyntaxError):
        return [i for i, line in enumerate(source.split("\n")) if _MAGIC_LINE.match(line)]


def _scan_logical_starts(source: str) -> list[int]:
    found: list[int] = []
    depth = 0
    at_start = True
    pending: list[str] = []
    skip = (tokenize.INDENT, tokenize.DEDENT, tokenize.NL, tokenize.COMMENT, tokenize.ENCODING)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NEWLINE:
            at_start, pending = True, []
            continue
        if tok.type in skip or (tok.type == tokenize.ERRORTOKEN and not tok.string.strip()):
            continue
        if at_start and depth == 0:
            at_start = False
            if tok.string in ("%", "!", "%%"):
                found.append(tok.start[0] - 1)
                continue
            pending = [tok.string] if tok.type == tokenize.NAME else []
        elif pending and len(pending) < 3:
            pending.append(tok.string)
            if len(pending) == 3 and pending[1] == "=" and pending[2] in ("%", "!"):
                found.append(tok.start[0] - 1)
        if tok.string in "([{" and tok.type == tokenize.OP:
            depth += 1
        elif tok.string in ")]}" and tok.type == tokenize.OP:
            depth = max(0, depth - 1)
    return sorted(set(found))


def unmask_magics(source: str, masked: dict[int, str]) -> str:
    if not masked:
        return source
    lines = source.split("\n")
    for i, line in masked.items():
        lines[i] = line
    return "\n".join(lines)


def rewrite(source: str) -> tuple[str, list[int]]:
    """Instrument ``source``; returns the code and the lines left untraced (magics, odd f-strings).

    Raises ``SyntaxError`` if Python cannot parse it.
    """
    masked_source, masked = mask_magics(source)
    tree = ast.parse(masked_source)
    collector = _Collector(masked_source)
    collector.visit(tree)
    untraced = collector.skipped + [i + 1 for i in masked]
    return unmask_magics(apply_edits(masked_source, collector.edits), masked), untraced


def reserved_uses(source: str) -> list[str]:
    """Describe each line that names a reserved ``__pbx*`` identifier, under any spelling.

    Python NFKC-normalizes identifiers, so ``__\\uff50bx__`` (a fullwidth p) *is* ``__pbx__`` to
    the interpreter: the check reads every identifier and string of the parsed tree (whose names
    the parser has already normalized), and the NFKC form of every line for what the tree does not
    hold (comments, IPython magics, cells that do not parse).
    """
    lines: set[int] = set()
    for number, line in enumerate(source.splitlines(), start=1):
        if _names_reserved(line):
            lines.add(number)
    try:
        tree = ast.parse(mask_magics(source)[0])
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is not None:
        lines.update(_reserved_in_tree(tree))
    return [f"line {n}: names beginning with {RESERVED_PREFIX!r} are reserved for pixelbox" for n in sorted(lines)]


def _names_reserved(text: str) -> bool:
    return RESERVED_PREFIX in text or RESERVED_PREFIX in unicodedata.normalize("NFKC", text)


def _reserved_in_tree(tree: ast.AST) -> set[int]:
    """Lines of nodes whose identifier or string fields name the reserved prefix once normalized."""
    found: set[int] = set()
    for node in ast.walk(tree):
        for _, value in ast.iter_fields(node):
            texts = (
                [value]
                if isinstance(value, str)
                else [v for v in value if isinstance(v, str)]
                if isinstance(value, list)
                else []
            )
            if any(_names_reserved(text) for text in texts):
                found.add(getattr(node, "lineno", 1))
    return found
