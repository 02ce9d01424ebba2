"""Which names starting with '_' model code may use, so ordinary code is not refused.

Stock RestrictedPython refuses every name and attribute starting with '_'. Ordinary model code
uses them for its own things: private attributes of its classes (``self._cache``), private
helpers (``_clamp``), ``type(x).__name__``, ``cv2.__version__``, ``__repr__`` and
``__post_init__`` methods, ``super().__init__()``. What the policy keeps from the reflective
machinery behind the classic escapes (``__class__``, ``__globals__``, ``__subclasses__``...)
stays refused. The rules:

- **names**: ``_name`` may be bound and read (``_`` too) unless it ends with ``_``: the guard
  functions the rewritten cell calls (``_getattr_``, ``_write_``...) all do, so none can be
  named, shadowed or rebound. Dunder names stay refused.
- **private attributes** (one leading underscore, ``obj._x``): compile-time allowed; at run time
  only on objects of classes model code defined whose every base is one of those or a plain
  builtin type (:func:`owned`), read and written; and the documented API of named tuples
  (``_asdict``, ``_replace``...). Everything else (library objects, pixelbox's objects, modules)
  still refuses them.
- **dunder attributes**: only :data:`READABLE_DUNDERS` may be read, on anything; the methods of
  :data:`DEFINABLE_METHODS` may be defined in classes and reached through ``super()``.

Imported by the transformer (compile time) and the guards (run time) alike.
"""

from __future__ import annotations

import abc
import builtins
import re
import typing
from collections.abc import Container
from typing import Any

_PRIVATE = re.compile(r"^_[A-Za-z0-9][A-Za-z0-9_]*$")

READABLE_DUNDERS = frozenset({"__name__", "__version__", "__doc__"})
"""Dunder attributes any object's may be read: names, versions and docstrings are plain data."""

DEFINABLE_METHODS = frozenset(
    {
        "__repr__",
        "__str__",
        "__hash__",
        "__bool__",
        "__len__",
        "__iter__",
        "__next__",
        "__getitem__",
        "__setitem__",
        "__call__",
        "__enter__",
        "__exit__",
        "__post_init__",
        "__add__",
        "__sub__",
        "__mul__",
        "__truediv__",
        "__neg__",
    }
)
"""Special methods a class in a cell may define (besides RestrictedPython's ``__init__`` and the
comparisons), and ``super()`` may reach. Never the ones that take over attribute access
(``__getattr__``, ``__getattribute__``, ``__setattr__``), object creation or pickling, nor
``__del__``, which would run model code whenever the garbage collector does, outside any cell."""

HINTS = {
    "__class__": "write type(obj) instead",
    "__dict__": "write vars(obj) for objects of your own classes",
    "__qualname__": "write __name__ instead",
}
"""What to write instead of a refused dunder attribute that ordinary code reaches for."""

NAMED_TUPLE_API = frozenset({"_asdict", "_replace", "_fields", "_field_defaults", "_make"})
"""The documented API of ``collections.namedtuple`` classes, which starts with '_'."""

TRUSTED_BASES: frozenset[type] = frozenset(
    {value for name, value in vars(builtins).items() if isinstance(value, type) and not name.startswith("_")}
    | {abc.ABC, typing.Generic}
)
"""Bases a class of model code may have and still own its private attributes: the builtin types
(``object``, ``dict``, ``Exception``...), ``abc.ABC`` and ``typing.Generic``."""


def private_name(name: str) -> bool:
    """Whether model code may bind and read the variable ``name`` (``_tmp``, ``_helper``, ``_``)."""
    return name == "_" or (_PRIVATE.match(name) is not None and not name.endswith("_"))


def private_attribute(name: str) -> bool:
    """Whether ``name`` is a private attribute (one leading underscore) checked at run time."""
    return _PRIVATE.match(name) is not None


def dunder_readable(name: str) -> bool:
    """Whether the dunder attribute ``name`` may be read (checked further at run time)."""
    return name in READABLE_DUNDERS or name in DEFINABLE_METHODS or name == "__init__"


def owned(cls: type, model_classes: Container[type]) -> bool:
    """Whether ``cls`` is a class of model code whose every base is model code's or trusted."""
    if cls not in model_classes:
        return False
    return all(klass in model_classes or klass in TRUSTED_BASES for klass in cls.__mro__)


def hint(name: str) -> str:
    """`` (what to write instead)`` for a refused attribute ``name``, or nothing."""
    return f" ({HINTS[name]})" if name in HINTS else ""


def public_items(space: Any) -> dict[str, Any]:
    """A copy of the namespace or ``__dict__`` ``space`` without its dunder names."""
    return {k: v for k, v in space.items() if type(k) is str and (not k.startswith("_") or private_name(k))}


def named_tuple_api(obj: Any, name: str) -> bool:
    """Whether ``name`` is the documented '_' API of a named tuple (or its class)."""
    cls = obj if isinstance(obj, type) else type(obj)
    return name in NAMED_TUPLE_API and issubclass(cls, tuple) and hasattr(cls, "_fields")
