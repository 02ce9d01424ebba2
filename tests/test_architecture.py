"""The architecture holds: layers point downward, no import cycles, the host reaches the kernel only
through the contract, and the package list and the kernel image cover what they must.

The import graph is read from the sources with ``ast``: every ``import`` and ``from ... import``,
at module level or inside functions (lazy imports are dependencies too), except under
``if TYPE_CHECKING:``. ``from package import name`` is an edge to ``package.name`` when that is a
module, else to ``package``. The layers, lowest first (``docs/architecture.md``)::

    base     pixelbox (the root module), pixelbox.contract, pixelbox.registry, pixelbox.images
    kernel   pixelbox.kernel      -> base (not pixelbox.registry, which is host-only)
    tracer   pixelbox.tracer      -> base, and the kernel modules in pixelbox.kernel.HOST_SHARED
    runtime  pixelbox.runtime     -> tracer, base (and HOST_SHARED)
    harness  pixelbox.harness     -> runtime, tracer, base (and HOST_SHARED)
    ray      pixelbox.ray         -> harness, runtime, tracer, base (and HOST_SHARED)
    plugins  pixelbox.plugins     -> runtime, tracer, base (and HOST_SHARED)
    cli      pixelbox.cli         -> plugins, ray, harness, runtime, tracer, base (and HOST_SHARED)
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from pixelbox.kernel import HOST_SHARED

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {
    "pixelbox": "pixelbox",
    "runtime": "pixelbox.runtime",
    "tracer": "pixelbox.tracer",
    "harness": "pixelbox.harness",
    "images": "pixelbox.images",
}
LAYERS = ("base", "kernel", "tracer", "runtime", "harness", "ray", "plugins", "cli")
ALLOWED: dict[str, set[str]] = {
    "base": {"base"},
    "kernel": {"base", "kernel"},
    "tracer": {"base", "tracer"},
    "runtime": {"base", "tracer", "runtime"},
    "harness": {"base", "tracer", "runtime", "harness"},
    "ray": {"base", "tracer", "runtime", "harness", "ray"},
    "plugins": {"base", "tracer", "runtime", "plugins"},
    "cli": {"base", "tracer", "runtime", "harness", "ray", "plugins", "cli"},
}
HOST_ONLY_BASE = ("pixelbox.registry",)
"""Base modules the kernel may not import (they are not shipped into the image)."""


@cache
def modules() -> dict[str, Path]:
    """Every module of the distribution by its installed name."""
    found: dict[str, Path] = {}
    for directory, package in SOURCES.items():
        for path in sorted((ROOT / directory).rglob("*.py")):
            parts = list(path.relative_to(ROOT / directory).with_suffix("").parts)
            if directory == "pixelbox" and parts and parts[0] in SOURCES:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def layer_of(module: str) -> str:
    """The layer a module belongs to."""
    parts = module.split(".")
    second = parts[1] if len(parts) > 1 else ""
    if second in ("kernel", "tracer", "runtime", "harness", "ray", "plugins", "cli"):
        return second
    return "base"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in modules() else base)
        stack.extend(ast.iter_child_nodes(node))
    return {name for name in found if name == "pixelbox" or name.startswith("pixelbox.")}


@cache
def graph() -> dict[str, set[str]]:
    """Module -> the pixelbox modules it imports."""
    edges = {}
    for module, path in modules().items():
        tree = ast.parse(path.read_text(), str(path))
        edges[module] = _imports(tree, module, path.name == "__init__.py")
    return edges


def test_the_graph_sees_every_package_and_its_imports() -> None:
    """Guards the checks below against reading nothing: the graph knows the real modules and edges."""
    edges = graph()
    assert {"pixelbox.runtime.sandbox", "pixelbox.kernel.recorder.core", "pixelbox.contract.wire"} <= set(edges)
    assert "pixelbox.contract.wire" in edges["pixelbox.runtime.sandbox"]
    assert "pixelbox.tracer.dynamic" in edges["pixelbox.runtime.sandbox"]


def test_every_import_points_down_the_layers() -> None:
    upward = []
    for module, targets in graph().items():
        layer = layer_of(module)
        for target in targets:
            if target in HOST_SHARED and layer in ("tracer", "runtime", "harness", "ray", "plugins", "cli"):
                continue
            if layer_of(target) not in ALLOWED[layer]:
                upward.append(f"{module} ({layer}) imports {target} ({layer_of(target)})")
    assert not upward, "imports against the layering:\n" + "\n".join(sorted(upward))


def test_the_kernel_imports_nothing_host_only() -> None:
    """The kernel image holds pixelbox/__init__.py, pixelbox/contract and pixelbox/kernel: nothing else."""
    bad = [
        f"{module} imports {target}"
        for module, targets in graph().items()
        if layer_of(module) == "kernel" or module.startswith("pixelbox.contract")
        for target in targets
        if target in HOST_ONLY_BASE or target.startswith("pixelbox.images")
    ]
    assert not bad, "\n".join(bad)


def test_host_code_reaches_the_kernel_only_through_the_contract() -> None:
    """Host code imports ``pixelbox.contract``; a kernel module only when ``HOST_SHARED`` lists it."""
    internal = [
        f"{module} imports the kernel internal {target}"
        for module, targets in graph().items()
        if layer_of(module) in ("tracer", "runtime", "harness", "ray", "plugins", "cli")
        for target in targets
        if layer_of(target) == "kernel" and target not in HOST_SHARED
    ]
    assert not internal, "\n".join(sorted(internal))


def test_the_contract_check_catches_a_host_import_of_a_kernel_internal() -> None:
    """The rule above is not vacuous: an import of a kernel internal from host code is seen."""
    tree = ast.parse("from pixelbox.kernel.recorder.core import Recorder\n")
    targets = _imports(tree, "pixelbox.runtime.probe", False)
    assert targets == {"pixelbox.kernel.recorder.core"}
    assert layer_of("pixelbox.kernel.recorder.core") == "kernel" and "pixelbox.kernel.recorder.core" not in HOST_SHARED


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    edges = {module: {t for t in targets if t in graph() and t != module} for module, targets in graph().items()}
    cycles = _cycles(edges)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# -- docs/architecture.md's "where to make a change" table ----------------------------------------

WHERE = ROOT / "docs" / "architecture.md"
LIMITS = {"new backend": 2, "new image I/O profile": 2, "new recorded op": 2, "new atomic tool": 2}
"""What the issue asked for: a backend in at most 2 files, a profile in 1-2, an op in 1-2 (plus tests)."""


def where_rows() -> dict[str, tuple[list[str], int]]:
    """Each row of the table: the change, the files it names, and the count it states."""
    text = WHERE.read_text(encoding="utf-8")
    table = text.split("<!-- where-to-change -->", 1)[1].split("<!-- /where-to-change -->", 1)[0]
    rows = {}
    for line in table.strip().splitlines()[2:]:
        change, files, count = (cell.strip() for cell in line.strip("|").split("|"))
        paths = list(dict.fromkeys(p for p in re.findall(r"`([\w./]+\.py)`", files) if "/" in p))
        rows[change] = (paths, int(count))
    return rows


def test_the_where_to_change_table_names_files_that_exist() -> None:
    rows = where_rows()
    assert {"new backend", "new image I/O profile", "new suite", "new judge", "new CLI command"} <= set(rows)
    missing = []
    for change, (paths, count) in rows.items():
        assert len(paths) == count, f"{change}: states {count} files but names {paths}"
        for path in paths:
            target = ROOT / path
            exists = target.parent.is_dir() if "NAME" in path else target.is_file()
            if not exists:
                missing.append(f"{change}: {path}")
    assert not missing, "the table names files that do not exist:\n" + "\n".join(missing)


def test_adding_a_backend_a_profile_or_an_op_touches_at_most_two_files() -> None:
    rows = {change.split(" (")[0]: value for change, value in where_rows().items()}
    for change, limit in LIMITS.items():
        assert rows[change][1] <= limit, f"{change} touches {rows[change][1]} files (at most {limit})"
