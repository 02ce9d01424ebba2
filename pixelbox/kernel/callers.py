"""Callables that look attributes up by name at call time, through a lookup the policy chooses.

``operator.methodcaller`` and ``operator.attrgetter`` take names, but what matters is what the
name reaches on the object they are finally called with: ``methodcaller('format', obj)`` looks
harmless by name, yet called on a format string it walks ``obj``'s attributes. Under the policy
model code gets these instead, with the policy's guarded ``getattr`` as the lookup, so every
attribute they reach is vetted like one model code named itself (``str.format`` comes back as
the guarded formatter). The recorder knows :class:`MethodCaller` and traces the method it
reaches, as it does for ``operator.methodcaller``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Lookup = Callable[[Any, str], Any]


class MethodCaller:
    """``methodcaller(name, *args, **kwargs)(obj)`` is ``lookup(obj, name)(*args, **kwargs)``."""

    __slots__ = ("args", "kwargs", "lookup", "name")

    def __init__(self, lookup: Lookup, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.lookup, self.name, self.args, self.kwargs = lookup, name, args, kwargs

    def __call__(self, obj: Any, *extra: Any, **extra_kwargs: Any) -> Any:
        if extra or extra_kwargs:
            raise TypeError("methodcaller expected 1 argument, got more")
        return self.lookup(obj, self.name)(*self.args, **self.kwargs)

    def __repr__(self) -> str:
        return f"operator.methodcaller({self.name!r}, ...)"


class AttrGetter:
    """``attrgetter('a.b', 'c')(obj)`` through ``lookup`` at every step of every dotted name."""

    __slots__ = ("lookup", "paths")

    def __init__(self, lookup: Lookup, paths: tuple[str, ...]) -> None:
        self.lookup, self.paths = lookup, paths

    def __call__(self, obj: Any) -> Any:
        values = []
        for path in self.paths:
            value = obj
            for part in path.split("."):
                value = self.lookup(value, part)
            values.append(value)
        return values[0] if len(values) == 1 else tuple(values)

    def __repr__(self) -> str:
        return f"operator.attrgetter({', '.join(map(repr, self.paths))})"
