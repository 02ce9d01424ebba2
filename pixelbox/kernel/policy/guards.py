"""Run-time half of the policy: the guard functions the rewritten cell calls, and its builtins.

The transformer turns ``a.b`` into ``_getattr_(a, "b")``, ``a[i]`` into ``_getitem_(a, i)``,
``a.b = v`` into ``_write_(a).b = v`` and so on; :class:`Guards` implements those calls.
:func:`build_builtins` assembles the ``__builtins__`` dict that cells run with: the
harmless builtins, guarded versions of the ones that take attribute names or open files,
refusing stand-ins for the dangerous ones (``eval``, ``exec``, ``vars``...), and the guard
names themselves, which model code cannot rebind because it cannot name anything that
starts with '_'.
"""

from __future__ import annotations

import _string  # the C helper behind str.format's field parsing
import builtins
import dis
import functools
import operator
import string
import sys
import typing
import weakref
from collections.abc import Callable
from types import FrameType, ModuleType
from typing import Any

from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from pixelbox.contract.wire import MIME_PREFIX
from pixelbox.kernel.callers import AttrGetter, MethodCaller
from pixelbox.kernel.policy import names
from pixelbox.kernel.policy.errors import (
    PolicyAttributeError,
    PolicyImportError,
    PolicyKeyError,
    PolicyPermissionError,
)
from pixelbox.kernel.policy.modules import EnvironView, ModuleGate, ModuleProxy

DENIED_ATTRIBUTES = INSPECT_ATTRIBUTES | {"ctypes"}
"""Attributes refused besides '_' names: frames, code objects, and numpy's raw-pointer view."""

FORMAT_METHODS = frozenset({"format", "format_map"})

_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
    "@=": operator.imatmul,
}

_MISSING = object()


class Refusal:
    """Stands in a substitution table for a library object model code may not have at all."""

    def __init__(self, what: str, hint: str, rule: str = "denied-function") -> None:
        self.what, self.hint, self.rule = what, hint, rule

    def error(self) -> PolicyPermissionError:
        """The exception to raise when model code reaches the refused object."""
        return PolicyPermissionError.build(self.what, self.rule, self.hint)


def hidden_attribute(name: str) -> PolicyAttributeError:
    """The error for an attribute the policy hides."""
    if name.startswith("_"):
        what = f"attribute names starting with '_' are not allowed: {name!r}{names.hint(name)}"
        return PolicyAttributeError.build(what, "no-underscore-attr")
    what = f"attribute {name!r} exposes interpreter internals or raw memory and is not allowed"
    return PolicyAttributeError.build(what, "no-frame-access")


def check_attribute_name(name: object) -> str:
    """Return ``name`` if model code may use it as an attribute name, else raise."""
    if type(name) is not str:
        raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
    if name[:1] == "_" or name in DENIED_ATTRIBUTES:
        raise hidden_attribute(name)
    return name


def private_refused(obj: Any, name: str) -> PolicyAttributeError:
    """The error for a private attribute of an object whose class model code did not define."""
    kind = obj if isinstance(obj, type) else type(obj)
    what = (
        f"attribute names starting with '_' are allowed only on objects of classes your code defined "
        f"(from plain bases), not on {kind.__module__}.{kind.__qualname__}: {name!r}"
    )
    return PolicyAttributeError.build(what, "no-underscore-attr", "Use the object's public API")


class NamespaceView(dict):
    """What ``globals()`` and ``locals()`` return: a copy of the namespace without its dunder names.

    A hidden name looked up, set or deleted is a policy error, not a bare ``KeyError``, so the
    agent learns why.
    """

    @staticmethod
    def check(key: Any) -> None:
        """Refuse ``key`` if it is a name the view hides."""
        if isinstance(key, str) and key.startswith("_") and not names.private_name(key):
            what = f"names starting with '_' are not available through globals() or locals(): {key!r}"
            raise PolicyKeyError.build(what, "no-underscore-name")

    def __missing__(self, key: Any) -> Any:
        self.check(key)
        raise KeyError(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.check(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self.check(key)
        super().__delitem__(key)


def _is_str_class(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, str)


class _SafeFormatter(string.Formatter):
    """``str.format`` whose ``{0.attr}`` fields go through the attribute guard."""

    def __init__(self, guarded_getattr: Callable[[Any, str], Any]) -> None:
        self.guarded_getattr = guarded_getattr

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, Any]:
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            obj = self.guarded_getattr(obj, key) if is_attr else obj[key]
        return obj, first


class Guards:
    """The guard functions of one policy installation (one kernel)."""

    def __init__(
        self,
        gate: ModuleGate,
        is_reserved: Callable[[Any], bool] = lambda obj: False,
        is_cell_file: Callable[[str], bool] = lambda filename: False,
    ) -> None:
        self.gate = gate
        self.is_reserved = is_reserved
        self.is_cell_file = is_cell_file
        self.model_classes: weakref.WeakSet[type] = weakref.WeakSet()
        self.substitutes: dict[int, tuple[Any, Any]] = {}
        self.formatter = _SafeFormatter(self.getattr)

    # -- reading -----------------------------------------------------------------------------

    def getattr(self, obj: Any, name: str, default: Any = _MISSING) -> Any:
        """``_getattr_`` and the ``getattr`` builtin: only the '_' names :meth:`check_read` allows, no frames."""
        self.check_read(obj, name)
        if name in FORMAT_METHODS and (isinstance(obj, str) or _is_str_class(obj)):
            return self._format_method(obj, name)
        value = getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        return self.vet(value)

    def owns(self, obj: Any) -> bool:
        """Whether ``obj`` is (an instance of) a class model code defined from plain bases."""
        return names.owned(obj if isinstance(obj, type) else type(obj), self.model_classes)

    def check_read(self, obj: Any, name: object) -> None:
        """Refuse reading ``name`` from ``obj`` unless it is public, or a '_' name :mod:`.names` allows there."""
        if type(name) is not str:
            raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
        if name[:1] != "_" or name in DENIED_ATTRIBUTES:
            check_attribute_name(name)
        elif names.private_attribute(name):
            if not (self.owns(obj) or names.named_tuple_api(obj, name)):
                raise private_refused(obj, name)
        elif name not in names.READABLE_DUNDERS and not (type(obj) is super and names.dunder_readable(name)):
            raise hidden_attribute(name)

    def private_write(self, obj: Any, name: str) -> Any:
        """``_private_write_``: ``obj._x = v`` only on objects of classes model code defined."""
        if not self.owns(obj):
            raise private_refused(obj, name)
        return self.write(obj)

    def _write_target(self, obj: Any, name: object) -> Any:
        if type(name) is str and names.private_attribute(name):
            return self.private_write(obj, name)
        target = self.write(obj)
        check_attribute_name(name)
        return target

    def namespace(self, which: str) -> NamespaceView:
        """``globals()`` / ``locals()`` of the calling cell code: a copy without dunder names."""
        frame = sys._getframe(2)
        if not self.is_cell_file(frame.f_code.co_filename):
            what = f"{which}() is only available to your own code"
            raise PolicyPermissionError.build(what, "denied-builtin", "Refer to your variables by name")
        space = frame.f_globals if which == "globals" else frame.f_locals
        return NamespaceView(names.public_items(space))

    def vars(self, *args: Any) -> dict[str, Any]:
        """The ``vars`` builtin: ``vars(obj)`` for objects of model code's own classes, without dunders."""
        if len(args) == 1 and self.owns(args[0]):
            return names.public_items(vars(args[0]))
        what = "vars() is only available as vars(obj) on objects of classes your code defined"
        raise PolicyPermissionError.build(what, "denied-builtin", "Use locals(), or getattr() with public names")

    def vet(self, value: Any) -> Any:
        """Pass ``value`` to model code, unless it is a gated module or a substituted function."""
        if type(value) is ModuleType:
            return self.gate.admit(value)
        entry = self.substitutes.get(id(value))
        if entry is not None and entry[0] is value:
            substitute = entry[1]
            if isinstance(substitute, Refusal):
                raise substitute.error()
            return substitute
        return value

    def getitem(self, obj: Any, key: Any) -> Any:
        """``_getitem_``: plain subscription, with module values gated."""
        value = obj[key]
        return self.gate.admit(value) if type(value) is ModuleType else value

    def hasattr(self, obj: Any, name: str) -> bool:
        """The ``hasattr`` builtin over the guarded ``getattr``."""
        try:
            self.getattr(obj, name)
        except AttributeError:
            return False
        return True

    def _format_method(self, obj: Any, name: str) -> Callable[..., str]:
        fmt = self.formatter
        if isinstance(obj, str):
            if name == "format":
                return functools.partial(fmt.format, obj)
            return lambda mapping: fmt.vformat(obj, (), mapping)
        if name == "format":
            return fmt.format
        return lambda text, mapping: fmt.vformat(text, (), mapping)

    # -- writing -----------------------------------------------------------------------------

    def write(self, obj: Any) -> Any:
        """``_write_``: refuse changing modules, classes model code did not define, and pixelbox objects."""
        kind = type(obj)
        if kind in (list, dict, set, bytearray, NamespaceView):
            return obj
        if kind is ModuleType or kind is ModuleProxy:
            what = f"modules cannot be modified: {getattr(obj, '__name__', repr(obj))!r}"
            raise PolicyPermissionError.build(what, "no-module-write", "Keep your values in variables")
        if isinstance(obj, type) and obj not in self.model_classes:
            what = f"class {obj.__name__!r} was not defined by your code and cannot be modified"
            hint = "Subclass it, or wrap its instances, instead of patching it"
            raise PolicyPermissionError.build(what, "no-class-write", hint)
        if kind is EnvironView:
            return obj  # it refuses item assignment itself, with a clearer message
        if str(getattr(kind, "__module__", "")).startswith("pixelbox") or self.is_reserved(obj):
            what = "pixelbox's own objects (the recorder, I/O layer) cannot be modified"
            raise PolicyPermissionError.build(what, "reserved-object")
        return obj

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        """The ``setattr`` builtin: guarded name, guarded target."""
        setattr(self._write_target(obj, name), name, value)

    def delattr(self, obj: Any, name: str) -> None:
        """The ``delattr`` builtin: guarded name, guarded target."""
        delattr(self._write_target(obj, name), name)

    # -- everything else the rewritten code calls --------------------------------------------

    @staticmethod
    def inplacevar(op: str, target: Any, value: Any) -> Any:
        """``_inplacevar_``: ``n += v`` on a plain name."""
        return _INPLACE[op](target, value)

    @staticmethod
    def apply(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``_apply_``: calls with ``*args`` / ``**kwargs``."""
        return func(*args, **kwargs)

    @staticmethod
    def unpack(value: Any, spec: Any, getiter: Any) -> Any:
        """``_unpack_sequence_`` and ``_iter_unpack_sequence_``: iteration is not guarded, so native."""
        return value

    def build_class(self, func: Any, name: str, *bases: Any, **kwargs: Any) -> Any:
        """``__build_class__``: remember classes made by model code (their attributes may be set)."""
        cls = builtins.__build_class__(func, name, *bases, **kwargs)
        self.model_classes.add(cls)
        return cls

    def import_(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        """``__import__``: allow-listed modules only; ``os``/``io`` come back as proxies.

        C code that imports while a cell's frame is the innermost Python frame (numpy loading
        ``numpy._core._methods`` lazily) also lands here, because CPython looks ``__import__``
        up in that frame's builtins. Such imports serve the library, not the cell, and get the
        real import; only ``import`` statements of model code are checked.
        """
        if not _import_statement(sys._getframe(1)):
            return builtins.__import__(name, globals, locals, fromlist, level)
        if level:
            what = "relative imports are not available in cells"
            raise PolicyImportError.build(what, "relative-import")
        if any(part.startswith("_") for part in name.split(".")) or not self.gate.rules.allows(name):
            raise self.gate.rules.refusal(name)
        module = builtins.__import__(name, None, None, fromlist, 0)
        admitted = self.gate.admit(module)
        if not fromlist or admitted is not module:
            return admitted
        return ImportView(module, self.getattr)


_IMPORT_NAME = dis.opmap["IMPORT_NAME"]


def _import_statement(frame: FrameType) -> bool:
    """Whether ``frame`` is executing an ``import`` statement (rather than calling into C code)."""
    code = frame.f_code.co_code
    return 0 <= frame.f_lasti < len(code) and code[frame.f_lasti] == _IMPORT_NAME


class ImportView:
    """What ``from m import a, b`` reads ``a`` and ``b`` from: ``m`` behind the attribute guard."""

    __slots__ = ("_pbx_get", "_pbx_module")

    def __init__(self, module: ModuleType, guarded_getattr: Callable[[Any, str], Any]) -> None:
        self._pbx_module = module
        self._pbx_get = guarded_getattr

    def __getattr__(self, attr: str) -> Any:
        return self._pbx_get(self._pbx_module, attr)


def refusing(name: str, hint: str) -> Callable[..., Any]:
    """A stand-in for a dangerous builtin that explains itself when called."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        what = f"{name}() is not available under the pixelbox policy"
        raise PolicyPermissionError.build(what, "denied-builtin", hint)

    refuse.__name__ = name
    return refuse


SAFE_BUILTINS = (
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "complex",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "format",
    "frozenset",
    "hash",
    "hex",
    "id",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "ord",
    "pow",
    "print",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "zip",
    "NotImplemented",
    "Ellipsis",
    "None",
    "True",
    "False",
)

REFUSED_BUILTINS: dict[str, str] = {
    "eval": "Write the expression directly",
    "exec": "Write the code directly in the cell",
    "compile": "Write the code directly in the cell",
    "breakpoint": "There is no debugger; print() what you need to see",
    "input": "There is no interactive input; use the files and variables you were given",
    "help": "Documentation is not available inside the sandbox",
    "exit": "End the cell normally, or raise an exception to stop early",
    "quit": "End the cell normally, or raise an exception to stop early",
}


def build_builtins(
    guards: Guards, open_function: Callable[..., Any], display_function: Callable[..., Any] | None
) -> dict[str, Any]:
    """The ``__builtins__`` dict that policy cells run with."""
    table: dict[str, Any] = {name: getattr(builtins, name) for name in SAFE_BUILTINS}
    for name, value in vars(builtins).items():
        if isinstance(value, type) and issubclass(value, BaseException) and not name.startswith("_"):
            table[name] = value
    table.update({name: refusing(name, hint) for name, hint in REFUSED_BUILTINS.items()})
    table.update(
        {
            "getattr": guards.getattr,
            "setattr": guards.setattr,
            "delattr": guards.delattr,
            "hasattr": guards.hasattr,
            "open": open_function,
            "__import__": guards.import_,
            "__build_class__": guards.build_class,
            "__metaclass__": type,
            "_getattr_": guards.getattr,
            "_getitem_": guards.getitem,
            "_getiter_": iter,
            "_write_": guards.write,
            "_private_write_": guards.private_write,
            "globals": namespace_builtin(guards, "globals"),
            "locals": namespace_builtin(guards, "locals"),
            "vars": guards.vars,
            "_inplacevar_": guards.inplacevar,
            "_apply_": guards.apply,
            "_unpack_sequence_": guards.unpack,
            "_iter_unpack_sequence_": guards.unpack,
        }
    )
    if display_function is not None:
        table["display"] = guarded_display(display_function)
    return table


def namespace_builtin(guards: Guards, which: str) -> Callable[[], NamespaceView]:
    """The ``globals`` or ``locals`` builtin: :meth:`Guards.namespace` of its caller."""

    def namespace() -> NamespaceView:
        return guards.namespace(which)

    namespace.__name__ = namespace.__qualname__ = which
    return namespace


def guarded_display(display_function: Callable[..., Any]) -> Callable[..., Any]:
    """``display`` that cannot publish raw records on pixelbox's side channel."""

    def display(*objs: Any, **kwargs: Any) -> Any:
        if kwargs.get("raw"):
            for obj in objs:
                if isinstance(obj, dict) and any(str(key).startswith(MIME_PREFIX) for key in obj):
                    what = "publishing pixelbox channel records from a cell is not allowed"
                    raise PolicyPermissionError.build(what, "no-channel-forgery")
        return display_function(*objs, **kwargs)

    return display


def make_open(check_path: Callable[[Any], None]) -> Callable[..., Any]:
    """``open`` that refuses the kernel's own standard streams and the paths ``check_path`` refuses."""

    def open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, int) and file in (0, 1, 2):
            what = f"opening file descriptor {file} would break the kernel's streams"
            raise PolicyPermissionError.build(what, "denied-path", "Use print()")
        check_path(file)
        return builtins.open(file, *args, **kwargs)

    return open


# -- substitutes for library functions that take attribute names or load code ---------------


def _checked_names(names: tuple[Any, ...]) -> None:
    for dotted in names:
        if type(dotted) is not str:
            raise TypeError(f"attribute name must be a string, not {type(dotted).__name__}")
        for part in dotted.split("."):
            check_attribute_name(part)


def guarded_attrgetter(guards: Guards) -> Callable[..., AttrGetter]:
    """``operator.attrgetter`` whose every step goes through the guarded ``getattr`` when called."""

    def attrgetter(*attrs: str) -> AttrGetter:
        if not attrs:
            raise TypeError("attrgetter expected 1 argument, got 0")
        _checked_names(attrs)
        return AttrGetter(guards.getattr, tuple(attrs))

    return attrgetter


def guarded_methodcaller(guards: Guards) -> Callable[..., MethodCaller]:
    """``operator.methodcaller`` that reaches its method through the guarded ``getattr`` when called.

    Guarded by what it reaches, not by its name: ``methodcaller('format', obj)`` called on a
    string gets the guarded formatter, whose fields cannot walk to '_' attributes.
    """

    def methodcaller(name: str, /, *args: Any, **kwargs: Any) -> MethodCaller:
        _checked_names((name,))
        return MethodCaller(guards.getattr, name, args, kwargs)

    return methodcaller


def _no_pickle(call: Callable[..., Any], position: int) -> Callable[..., Any]:
    @functools.wraps(call)
    def load(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("allow_pickle") or (len(args) > position and args[position]):
            what = "allow_pickle=True is not allowed: unpickling runs arbitrary code"
            raise PolicyPermissionError.build(what, "no-pickle", "Save arrays without object dtype")
        return call(*args, **kwargs)

    return load


def substitutes(guards: Guards) -> list[tuple[Any, Any]]:
    """(library object, what model code gets instead) pairs for the allowed modules."""

    def update_wrapper(
        wrapper: Any,
        wrapped: Any,
        assigned: Any = functools.WRAPPER_ASSIGNMENTS,
        updated: Any = functools.WRAPPER_UPDATES,
    ) -> Any:
        if not set(assigned) <= set(functools.WRAPPER_ASSIGNMENTS) or not set(updated) <= set(
            functools.WRAPPER_UPDATES
        ):
            what = "functools.update_wrapper/wraps with custom 'assigned' or 'updated' is not allowed"
            raise PolicyPermissionError.build(what, "denied-function")
        return functools.update_wrapper(guards.write(wrapper), wrapped, assigned, updated)

    def wraps(
        wrapped: Any, assigned: Any = functools.WRAPPER_ASSIGNMENTS, updated: Any = functools.WRAPPER_UPDATES
    ) -> Any:
        return functools.partial(update_wrapper, wrapped=wrapped, assigned=assigned, updated=updated)

    evaluates = "It evaluates strings as code"
    pairs: list[tuple[Any, Any]] = [
        (operator.attrgetter, guarded_attrgetter(guards)),
        (operator.methodcaller, guarded_methodcaller(guards)),
        (functools.update_wrapper, update_wrapper),
        (functools.wraps, wraps),
        (functools.singledispatch, Refusal("functools.singledispatch is not available", evaluates)),
        (functools.singledispatchmethod, Refusal("singledispatchmethod is not available", evaluates)),
        (typing.get_type_hints, Refusal("typing.get_type_hints is not available", evaluates)),
        (string.Formatter, Refusal("string.Formatter is not available", "Use str.format or f-strings")),
    ]
    pairs.extend(_evaluating_library_functions())
    try:
        import numpy
        import numpy.lib.format
    except ImportError:  # pragma: no cover - numpy is part of the kernel image
        return pairs
    pairs.append((numpy.load, _no_pickle(numpy.load, 2)))
    pairs.append((numpy.lib.format.read_array, _no_pickle(numpy.lib.format.read_array, 1)))
    return pairs


def _evaluating_library_functions() -> list[tuple[Any, Refusal]]:
    """Library functions of allowed modules that ``eval`` a string model code gives them.

    ``PIL.ImageMath.unsafe_eval`` runs its expression with the real ``eval`` in ImageMath's own
    globals: attribute names the policy hides (``gi_frame``, ``f_globals``, ``_private``) become
    plain keywords, and a generator's frame leads to the real builtins and modules.
    ``ImageMath.lambda_eval`` (a callable, no string) stays available.
    """
    try:
        from PIL import ImageMath
    except ImportError:  # pragma: no cover - PIL is part of the kernel image
        return []
    hint = "Use PIL.ImageMath.lambda_eval(lambda args: ..., a=image) or NumPy"
    return [(ImageMath.unsafe_eval, Refusal("PIL.ImageMath.unsafe_eval evaluates strings as code", hint))]
