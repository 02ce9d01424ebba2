"""Compile-time half of the policy: RestrictedPython's AST rewrite, adapted to notebook cells.

RestrictedPython rejects names and attributes starting with '_', ``exec``/``eval`` calls,
star imports and unknown syntax, and rewrites attribute reads, subscripts, iteration,
unpacking and star-calls into calls of guard functions (``_getattr_``, ``_getitem_``...)
that :mod:`pixelbox.kernel.policy.guards` supplies. Departures from stock RestrictedPython,
each so that ordinary image code keeps working:

- ``print`` stays the real builtin (stdout), not RestrictedPython's ``printed`` collector;
- augmented assignment to items, slices and attributes (``a[0:10] += 5``, ``self.n += 1``)
  is allowed, with the container passed through the ``_write_`` guard;
- annotated assignments (dataclass fields) and ``nonlocal`` are allowed;
- the recorder binding (``__pbx__``) may be *read*, never bound or deleted;
- ``get_ipython`` (and so ``%magic`` / ``!shell``, which IPython turns into it) is refused;
- model code's own '_' names, private attributes (checked at run time by ``_getattr_`` and
  ``_private_write_``), a few dunder reads and special methods are allowed
  (:mod:`pixelbox.kernel.policy.names`).

Violations become one :class:`PolicyRejection` naming the rule and line of each.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from RestrictedPython.transformer import RestrictingNodeTransformer

from pixelbox.kernel.policy import names
from pixelbox.kernel.policy.errors import PolicyRejection, static_message

RESERVED_PREFIX = "__pbx"
SHELL_NAMES = frozenset({"get_ipython"})

# RestrictedPython reports violations as prose; map each kind to a rule name and our wording.
_RP_MESSAGES: tuple[tuple[str, str, str], ...] = (
    (
        'invalid attribute name because it starts with "_"',
        "no-underscore-attr",
        "attribute names starting with '_' are not allowed: {name!r}{hint}",
    ),
    (
        'invalid variable name because it starts with "_"',
        "no-underscore-name",
        "names starting with '_' are not allowed: {name!r}",
    ),
    ("__roles__", "no-underscore-name", "names ending with '__roles__' are not allowed: {name!r}"),
    (
        "forbidden to access in RestrictedPython",
        "no-frame-access",
        "{name!r} exposes interpreter frames or code objects and is not allowed",
    ),
    ("Exec calls are not allowed", "no-eval-exec", "exec() is not allowed; write the code directly"),
    ("Eval calls are not allowed", "no-eval-exec", "eval() is not allowed; write the expression directly"),
    (
        '"*" imports are not allowed',
        "no-star-import",
        "'from module import *' is not allowed; import the names you need",
    ),
    ("is a reserved name", "reserved-name", "{name!r} is a reserved name and cannot be defined"),
    ("metaclass", "no-metaclass", "the metaclass keyword is not allowed"),
    ("statements are not allowed", "unsupported-syntax", "{node} is not supported under the policy"),
)
_QUOTED = re.compile(r'"([^"]*)"')
_LINE = re.compile(r"^Line (\d+|None): ")
_NODE = re.compile(r"(\w+) statements are not allowed")


def classify(info: str) -> tuple[str, str]:
    """Turn one RestrictedPython error text into ``(rule, our description)``."""
    body = _LINE.sub("", info)
    quoted = _QUOTED.search(body)
    node = _NODE.search(body)
    for needle, rule, template in _RP_MESSAGES:
        if needle in body:
            name = quoted.group(1) if quoted else "?"
            return rule, template.format(
                name=name, node=node.group(1) if node else "this statement", hint=names.hint(name)
            )
    return "restricted-syntax", body


class PolicyTransformer(RestrictingNodeTransformer):
    """RestrictedPython's transformer for one cell, with the notebook departures listed above."""

    def __init__(self, reserved_names: Iterable[str]) -> None:
        super().__init__()
        self.reserved_names = frozenset(reserved_names)
        self.violations: list[tuple[int | None, str, str]] = []

    def violation(self, node: ast.AST, what: str, rule: str) -> None:
        """Record a violation of ``rule`` at ``node``'s line."""
        entry = (getattr(node, "lineno", None), what, rule)
        if entry not in self.violations:
            self.violations.append(entry)

    def error(self, node: ast.AST, info: str) -> None:
        """Route RestrictedPython's own findings through our rule names."""
        rule, what = classify(info)
        self.violation(node, what, rule)

    def check_name(self, node: ast.AST, name: str | None, allow_magic_methods: bool = False) -> None:
        """Refuse the reserved recorder names outright; ``printed`` is an ordinary name here."""
        if name is not None and name.startswith(RESERVED_PREFIX):
            self.violation(node, f"{name!r} is reserved for pixelbox's recorder", "reserved-name")
            return
        if name == "printed" or (name is not None and names.private_name(name)):
            return
        if allow_magic_methods and name in names.DEFINABLE_METHODS and getattr(node, "col_offset", 0) != 0:
            return
        super().check_name(node, name, allow_magic_methods)  # type: ignore[arg-type]

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        """Private attributes are read through ``_getattr_`` and written through ``_private_write_``,
        which check the object at run time; readable dunders go through ``_getattr_``."""
        private = names.private_attribute(node.attr)
        if not private and not (names.dunder_readable(node.attr) and isinstance(node.ctx, ast.Load)):
            return super().visit_Attribute(node)  # type: ignore[return-value]
        node = self.node_contents_visit(node)
        if isinstance(node.ctx, ast.Load):
            call = ast.Call(
                func=ast.Name("_getattr_", ast.Load()), args=[node.value, ast.Constant(node.attr)], keywords=[]
            )
            return ast.copy_location(call, node)
        guard = ast.Name("_private_write_", ast.Load())
        node.value = ast.copy_location(
            ast.Call(func=guard, args=[node.value, ast.Constant(node.attr)], keywords=[]), node.value
        )
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        """Allow reading the recorder binding and the real ``print``; refuse shell access."""
        if node.id in self.reserved_names and isinstance(node.ctx, ast.Load):
            return node
        if node.id in SHELL_NAMES:
            self.violation(
                node, "IPython magics, shell escapes (!cmd) and get_ipython() are not available", "no-shell-access"
            )
            return node
        if node.id in ("print", "printed") and isinstance(node.ctx, ast.Load):
            return node
        if node.id.startswith(RESERVED_PREFIX):
            self.check_name(node, node.id)
            return node
        return super().visit_Name(node)  # type: ignore[return-value]

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        """``a[i] += v`` and ``obj.x += v`` run natively on ``_write_(a)`` / ``_write_(obj)``."""
        if isinstance(node.target, (ast.Attribute, ast.Subscript)):
            return self.node_contents_visit(node)
        return super().visit_AugAssign(node)  # type: ignore[return-value]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        """Annotated assignments (dataclass fields); the target is checked like any other."""
        return self.node_contents_visit(node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        """``nonlocal`` only rebinds names of an enclosing function, which are checked like others."""
        for name in node.names:
            self.check_name(node, name)
        return node


class PolicyAstHook(ast.NodeTransformer):
    """The object registered in ``shell.ast_transformers``: checks and rewrites each cell.

    It must never raise anything but :class:`PolicyRejection`: IPython silently unregisters
    an AST transformer that raises any other exception, which would switch the policy off.
    An internal failure therefore rejects the cell (fail closed).
    """

    def __init__(self, reserved_names: Iterable[str]) -> None:
        super().__init__()
        self.reserved_names = tuple(reserved_names)

    def visit(self, node: ast.AST) -> ast.AST:
        """Check and rewrite a whole cell; raise :class:`PolicyRejection` listing every violation."""
        __tracebackhide__ = True
        transformer = PolicyTransformer(self.reserved_names)
        try:
            result = transformer.visit(node)
        except Exception as exc:
            what = f"the policy could not check this cell ({type(exc).__name__}: {exc})"
            rule = "internal-error"
            raise PolicyRejection(static_message(None, what, rule), rule=rule) from None
        if transformer.violations:
            raise rejection(transformer.violations)
        return result


def rejection(violations: list[tuple[int | None, str, str]]) -> PolicyRejection:
    """One exception for all violations of a cell, the first one's rule and line on top."""
    line, _, rule = violations[0]
    text = "\n".join(static_message(ln, what, r) for ln, what, r in violations)
    return PolicyRejection(text, rule=rule, line=line)


def check_source(source: str, reserved_names: Iterable[str] = ("__pbx__",)) -> ast.Module:
    """Parse and check ``source`` outside IPython (tests, host-side pre-checks)."""
    module = ast.parse(source)
    result = PolicyAstHook(reserved_names).visit(module)
    assert isinstance(result, ast.Module)
    return result
