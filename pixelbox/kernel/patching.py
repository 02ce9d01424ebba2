"""Reversible attribute patches, applied now or as soon as a library is first imported.

Patching at import time (instead of importing matplotlib, imageio and skimage at kernel
start) keeps kernel start fast and still catches code that imports a library and uses it in
the same cell. Every patch is remembered so the layer can be removed cleanly.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

ModuleCallback = Callable[[ModuleType], None]


class Patcher:
    """Replaces attributes on modules or classes and can put every original back."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any, bool]] = []
        self._saved_items: list[tuple[dict[str, Any], str, Any]] = []
        self._watches: list[_Watch] = []

    def replace(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        """Set ``owner.name`` to ``make(original)``; skipped if the attribute does not exist.

        The replacement takes the original's name, qualname, module and docstring, because
        libraries introspect them (pyplot rebuilds its wrappers from ``Figure.savefig``).
        """
        had = name in vars(owner)
        original = getattr(owner, name, None)
        if original is None:
            return
        replacement = make(original)
        if isinstance(replacement, types.FunctionType):
            functools.update_wrapper(replacement, original)
        self._saved.append((owner, name, vars(owner).get(name), had))
        setattr(owner, name, replacement)

    def replace_item(self, mapping: dict[str, Any], key: str, make: Callable[[Any], Any]) -> None:
        """Like :meth:`replace` for a namespace entry (IPython gives cells their own ``open``)."""
        original = mapping.get(key)
        if original is None:
            return
        replacement = make(original)
        if isinstance(replacement, types.FunctionType):
            functools.update_wrapper(replacement, original)
        self._saved_items.append((mapping, key, original))
        mapping[key] = replacement

    def when_imported(self, module_name: str, callback: ModuleCallback, *, every_load: bool = False) -> None:
        """Run ``callback(module)`` now if ``module_name`` is loaded, else right after it loads.

        A watch ends once a load succeeds (a failed or interrupted import leaves it armed for
        the retry); with ``every_load`` it stays, so a reload runs ``callback`` again.
        """
        module = sys.modules.get(module_name)
        if module is not None:
            callback(module)
            if not every_load:
                return
        self._watches.append(_import_hook().watch(module_name, callback, every_load))

    def restore(self) -> None:
        """Undo every patch (last first) and stop watching imports."""
        for owner, name, value, had in reversed(self._saved):
            if had:
                setattr(owner, name, value)
            else:
                delattr(owner, name)
        self._saved.clear()
        for mapping, key, item in reversed(self._saved_items):
            mapping[key] = item
        self._saved_items.clear()
        if _HOOK is not None:
            _HOOK.forget(self._watches)
        self._watches.clear()


@dataclass(eq=False)
class _Watch:
    module: str
    callback: ModuleCallback
    every_load: bool


class _ImportHook(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the real loader of watched modules to run callbacks after loading.

    One per process, shared by every :class:`Patcher`: two finders that each asked the rest of
    ``sys.meta_path`` for the real spec would recurse into each other forever.
    """

    def __init__(self) -> None:
        self.watches: dict[str, list[_Watch]] = {}
        self._lock = threading.Lock()

    def watch(self, module: str, callback: ModuleCallback, every_load: bool) -> _Watch:
        entry = _Watch(module, callback, every_load)
        with self._lock:
            self.watches.setdefault(module, []).append(entry)
        return entry

    def forget(self, entries: list[_Watch]) -> None:
        with self._lock:
            for entry in entries:
                waiting = self.watches.get(entry.module, [])
                if entry in waiting:
                    waiting.remove(entry)
                if not waiting:
                    self.watches.pop(entry.module, None)

    def loaded(self, module: ModuleType) -> None:
        """Run the watches of a module that just loaded; one-shot ones end here."""
        with self._lock:
            due = list(self.watches.get(module.__name__, []))
        self.forget([entry for entry in due if not entry.every_load])
        for entry in due:
            entry.callback(module)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.watches:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _NotifyingLoader(spec.loader, self.loaded)
                return spec
        return None


_HOOK: _ImportHook | None = None
_HOOK_LOCK = threading.Lock()


def _import_hook() -> _ImportHook:
    """The process's import hook, first in ``sys.meta_path`` (installed on first use)."""
    global _HOOK
    with _HOOK_LOCK:
        if _HOOK is None:
            _HOOK = _ImportHook()
        if _HOOK not in sys.meta_path:
            sys.meta_path.insert(0, _HOOK)
        return _HOOK


class _NotifyingLoader(importlib.abc.Loader):
    """Delegates to the real loader, then hands the executed module to a callback."""

    def __init__(self, inner: Any, callback: ModuleCallback) -> None:
        self._inner = inner
        self._callback = callback

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self._inner.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        module.__loader__ = self._inner
        if module.__spec__ is not None:
            module.__spec__.loader = self._inner
        self._callback(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
