"""Named registries: one per extension point (backends, profiles, suites, judges, CLI commands).

A :class:`Registry` maps names to typed entries, keeps the order they were added in (that order is
the order users see in ``--help`` and the docs), refuses a name twice, and answers an unknown name
with an error that lists the known ones. Every choice list of the command line and every list in
the docs is read from a registry, so adding an entry never means editing a list elsewhere.

A registry can also *discover* its entries: given a package and an attribute name, it imports
every module of the package on first use and registers the attribute each one defines (suites
plug in this way: a new suite is a new module, nothing else). Host-only: the kernel never imports
this module.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownEntry(LookupError, ValueError):
    """A name that no entry of a registry has; the message lists the names there are."""

    def __init__(self, kind: str, name: object, names: tuple[str, ...]) -> None:
        super().__init__(f"unknown {kind} {name!r}; choose one of: {', '.join(names) or '(none registered)'}")
        self.kind, self.name, self.names = kind, name, names


class Registry(Generic[T]):
    """Entries of one kind by name, in registration order.

    ``kind`` names the extension point in messages (``"backend"``, ``"image I/O profile"``).
    ``discover=(package, attribute)`` registers, on first use, the ``attribute`` of every module
    of ``package`` that defines it (under the name ``name_of(entry)``).
    """

    def __init__(
        self,
        kind: str,
        *,
        discover: tuple[str, str] | None = None,
        name_of: Callable[[T], str] | None = None,
    ) -> None:
        if discover is not None and name_of is None:
            raise ValueError("a discovering registry needs name_of to name what it finds")
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._discover = discover
        self._name_of = name_of
        self._lock = threading.RLock()

    def add(self, name: str, entry: T) -> T:
        """Register ``entry`` as ``name``; a name registered twice is a programming error."""
        with self._lock:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = entry
        return entry

    def remove(self, name: str) -> T:
        """Unregister ``name`` (a plug-in unloading, a test undoing its entry); returns its entry."""
        with self._lock:
            entries = self._loaded()
            if name not in entries:
                raise UnknownEntry(self.kind, name, tuple(entries))
            return entries.pop(name)

    def get(self, name: str) -> T:
        """The entry called ``name``, or :class:`UnknownEntry` listing the known names."""
        entries = self._loaded()
        if not isinstance(name, str) or name not in entries:
            raise UnknownEntry(self.kind, name, tuple(entries))
        return entries[name]

    def names(self) -> tuple[str, ...]:
        """Every name, in registration order."""
        return tuple(self._loaded())

    def entries(self) -> tuple[T, ...]:
        """Every entry, in registration order."""
        return tuple(self._loaded().values())

    def items(self) -> tuple[tuple[str, T], ...]:
        """``(name, entry)`` pairs, in registration order."""
        return tuple(self._loaded().items())

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._loaded())

    def _loaded(self) -> dict[str, T]:
        if self._discover is not None:
            with self._lock:
                if self._discover is not None:
                    package, attribute = self._discover
                    self._discover = None
                    self._import_all(package, attribute)
        return self._entries

    def _import_all(self, package: str, attribute: str) -> None:
        assert self._name_of is not None
        root = importlib.import_module(package)
        for info in sorted(pkgutil.iter_modules(root.__path__), key=lambda m: m.name):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{package}.{info.name}")
            entry = getattr(module, attribute, None)
            if entry is not None:
                self.add(self._name_of(entry), entry)


__all__ = ["Registry", "UnknownEntry"]
