"""The operation table: which callables are image operations, and how to describe a call.

Entries are written as public dotted paths (``"PIL.Image.Image.crop"``) and resolved to the
real objects once their module has been imported (by the kernel or by the agent), so optional
libraries cost nothing until used. A callable is then recognised by identity, or by its
``(module, qualified name)`` so that aliases, ``getattr``, unbound calls, star imports and
module reloads all find the same entry.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterable
from typing import Any

from pixelbox.kernel.recorder import libs
from pixelbox.kernel.recorder.ops import arrays, opencv, pillow, scientific
from pixelbox.kernel.recorder.ops.base import Spec

_BUILTIN = types.BuiltinFunctionType
_DESCRIPTORS = (types.MethodDescriptorType, types.WrapperDescriptorType)

Key = tuple[str, str]


def _entries() -> Iterable[tuple[str, str, Any, bool]]:
    for module in (pillow, opencv, arrays, scientific):
        inplace: frozenset[str] = getattr(module, "INPLACE", frozenset())
        for path, op, describe in module.SPECS:
            yield path, op, describe, path in inplace


def key_of(obj: Any) -> Key | None:
    """The stable name of a callable: ``(module, qualname)``; ``None`` for anything else."""
    t = type(obj)
    if t is types.FunctionType or t is libs.dispatcher:
        return getattr(obj, "__module__", None) or "", getattr(obj, "__qualname__", "")
    if t in _DESCRIPTORS:
        owner = obj.__objclass__
        return owner.__module__, f"{owner.__qualname__}.{obj.__name__}"
    if t is _BUILTIN:
        bound = obj.__self__
        if bound is None or type(bound) is types.ModuleType:
            return getattr(obj, "__module__", None) or getattr(bound, "__name__", "") or "", obj.__name__
        return type(bound).__module__, f"{type(bound).__qualname__}.{obj.__name__}"
    if t is libs.ufunc:
        return "numpy", obj.__name__
    return None


def resolve(path: str) -> Any:
    """The object at a dotted path whose module prefix is already imported, else ``None``."""
    found = resolve_owner(path)
    return None if found is None else getattr(found[0], found[1], None)


def resolve_owner(path: str) -> tuple[Any, str] | None:
    """``(owner, attribute name)`` of a dotted path whose module prefix is imported."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        owner: Any = sys.modules.get(".".join(parts[:cut]))
        if owner is None:
            continue
        for name in parts[cut:-1]:
            owner = getattr(owner, name, None)
            if owner is None:
                return None
        return (owner, parts[-1]) if getattr(owner, parts[-1], None) is not None else None
    return None


class OpTable:
    """Resolves the table lazily and answers "is this callable an image operation?"."""

    def __init__(self) -> None:
        self.by_obj: dict[Any, Spec] = {}
        self.by_key: dict[Key, Spec] = {}
        self.resolved: dict[str, Any] = {}
        self._owners: dict[str, tuple[Any, str]] = {}
        self.plain: set[Any] = set()
        """Code objects and module-level builtins already known not to be operations (a fast path)."""
        self.specs: dict[str, Spec] = {}
        self._pending: dict[str, Spec] = {}
        self._inplace: set[str] = set()
        for path, op, describe, inplace in _entries():
            self.specs[path] = self._pending[path] = Spec(op, path, describe)
            if inplace:
                self._inplace.add(path)
        self._modules_seen = -1

    def is_inplace(self, spec: Spec) -> bool:
        return spec.api in self._inplace

    def refresh(self) -> None:
        """Resolve entries whose modules have been imported since the last call."""
        if len(sys.modules) == self._modules_seen or not self._pending:
            return
        self._modules_seen = len(sys.modules)
        for path in list(self._pending):
            found = resolve_owner(path)
            if found is None:
                continue
            obj = getattr(*found)
            self._owners[path] = found
            self.plain.clear()
            spec = self._pending.pop(path)
            self.resolved[path] = obj
            with contextlib.suppress(TypeError):  # unhashable callables are found by key only
                self.by_obj[obj] = spec
            key = key_of(obj)
            if key is not None:
                self.by_key.setdefault(key, spec)

    def lookup(self, fn: Any) -> tuple[Spec, Any] | None:
        """``(spec, bound self or None)`` when calling ``fn`` is a known image operation."""
        t = type(fn)
        if t is types.MethodType:
            func = fn.__func__
            spec = self._find(func)
            return (spec, fn.__self__) if spec is not None else None
        if t is _BUILTIN:
            bound = fn.__self__
            if bound is not None and type(bound) is not types.ModuleType:
                key = key_of(fn)
                spec = self.by_key.get(key) if key is not None else None
                if spec is None and self._stale():
                    self.refresh()
                    spec = self.by_key.get(key) if key is not None else None
                return (spec, bound) if spec is not None else None
        if t is types.FunctionType or t is libs.dispatcher or t is _BUILTIN or t is libs.ufunc or t in _DESCRIPTORS:
            spec = self._find(fn)
            return (spec, None) if spec is not None else None
        return None

    def remember_plain(self, fn: Any) -> None:
        """Note that ``fn`` is not an operation, so the next call skips the lookup."""
        t = type(fn)
        if t is types.FunctionType:
            self.plain.add(fn.__code__)
        elif t is types.MethodType and type(fn.__func__) is types.FunctionType:
            self.plain.add(fn.__func__.__code__)
        elif t is _BUILTIN:
            bound = fn.__self__
            if bound is None or type(bound) is types.ModuleType:
                self.plain.add(fn)
            else:
                self.plain.add((type(bound), fn.__name__))

    def _find(self, fn: Any) -> Spec | None:
        spec = self._get(fn)
        if spec is None and self._stale():
            self.refresh()
            spec = self._get(fn)
        return spec

    def _get(self, fn: Any) -> Spec | None:
        try:
            spec = self.by_obj.get(fn)
        except TypeError:
            spec = None
        if spec is None:
            key = key_of(fn)
            if key is not None:
                spec = self.by_key.get(key)
        return spec

    def _stale(self) -> bool:
        return bool(self._pending) and len(sys.modules) != self._modules_seen

    def replaced(self) -> list[str]:
        """Resolved entries whose public name now points at a different, unrelated callable."""
        problems = []
        for path, obj in self.resolved.items():
            owner, name = self._owners[path]
            current = getattr(owner, name, None)
            if current is obj:
                continue
            current = resolve(path)  # the owner itself may have been reloaded
            if current is obj or current is None:
                continue
            if key_of(current) != key_of(obj):
                problems.append(f"{path} was replaced by {getattr(current, '__qualname__', type(current).__name__)}")
        return problems


def api_table() -> dict[str, str]:
    """Every API the recorder knows, by public dotted name, mapped to its default canonical op.

    Some APIs refine the op from their arguments at run time (``convert("L")`` is ``grayscale``,
    ``cv2.addWeighted`` with a negative weight is ``sharpen``...).
    """
    return {path: spec.op for path, spec in sorted(OpTable().specs.items())}


__all__ = ["OpTable", "Spec", "api_table", "key_of", "resolve", "resolve_owner"]
