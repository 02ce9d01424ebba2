"""Which modules model code may reach, and the proxies that stand in for ``os`` and ``io``.

A module is reachable if its dotted name is, or is under, an allowed name and is not, and is
not under, a denied name. The gate applies to ``import`` statements and to every module
*value* that reaches model code through an attribute or item (``PIL.Image.os``,
``warnings.sys``, ``np.ctypeslib``), so an allowed package cannot be used as a ladder to a
denied one. ``os`` and ``io`` are always handed out as proxies.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import ModuleType
from typing import Any

from pixelbox.kernel.policy.errors import PolicyImportError, PolicyPermissionError

ALLOWED_MODULES: frozenset[str] = frozenset(
    {
        # image and numeric work
        "numpy",
        "PIL",
        "cv2",
        "scipy",
        "skimage",
        "matplotlib",
        "imageio",
        # standard library: maths, data, text, time
        "math",
        "cmath",
        "statistics",
        "random",
        "fractions",
        "decimal",
        "numbers",
        "json",
        "csv",
        "re",
        "string",
        "textwrap",
        "pprint",
        "base64",
        "struct",
        "binascii",
        "hashlib",
        "zlib",
        # uuid: its module values (os, sys, platform, _uuid) pass the gate like any other's; the
        # ``getnode`` fallbacks that run ip/ifconfig are refused by the audit hook (no-process)
        # and uuid then falls back to a random node
        "uuid",
        "colorsys",
        "array",
        "time",
        "datetime",
        "calendar",
        # standard library: functional helpers and types
        "collections",
        "itertools",
        "functools",
        "operator",
        "copy",
        "heapq",
        "bisect",
        "typing",
        "dataclasses",
        "enum",
        "abc",
        "contextlib",
        "warnings",
        # files (os and io are proxies; destructive operations are checked at run time)
        "os",
        "posixpath",
        "genericpath",
        "stat",
        "io",
        "glob",
        "fnmatch",
        "pathlib",
        "tempfile",
        # showing results (a proxy: only the display helpers, never the raw publisher)
        "IPython.display",
    }
)
"""Default allow-list: what image-processing code needs, nothing that runs processes or code."""

DENIED_MODULES: frozenset[str] = frozenset(
    {
        "numpy.ctypeslib",
        "numpy.f2py",
        "numpy.distutils",
        "numpy.testing",
        "matplotlib.testing",
        "matplotlib.animation",
        "PIL.ImageGrab",
        "PIL.ImageShow",
    }
)
"""Submodules of allowed packages that lead to native memory access, compilers or processes."""

OS_ALLOWED: frozenset[str] = frozenset(
    {
        "path",
        "sep",
        "altsep",
        "extsep",
        "pathsep",
        "linesep",
        "curdir",
        "pardir",
        "devnull",
        "name",
        "getcwd",
        "chdir",
        "listdir",
        "scandir",
        "walk",
        "stat",
        "lstat",
        "access",
        "fspath",
        "fsencode",
        "fsdecode",
        "makedirs",
        "mkdir",
        "remove",
        "unlink",
        "rmdir",
        "removedirs",
        "rename",
        "renames",
        "replace",
        "getenv",
        "cpu_count",
        "urandom",
        "getpid",
        "PathLike",
        "DirEntry",
        "stat_result",
        "error",
        "F_OK",
        "R_OK",
        "W_OK",
        "X_OK",
        "SEEK_SET",
        "SEEK_CUR",
        "SEEK_END",
    }
)
"""The part of ``os`` model code may use; destructive calls are limited to writable places
by the audit hook (:mod:`pixelbox.kernel.policy.audit`)."""

IO_DENIED: frozenset[str] = frozenset({"open_code"})


def _under(name: str, roots: Iterable[str]) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


class ModuleRules:
    """The allow- and deny-lists in force, with the decision for a dotted module name."""

    def __init__(self, extra_allowed: Iterable[str] = (), extra_denied: Iterable[str] = ()) -> None:
        self.allowed = ALLOWED_MODULES | frozenset(extra_allowed)
        self.denied = (DENIED_MODULES | frozenset(extra_denied)) - frozenset(extra_allowed)
        self._cache: dict[str, bool] = {}

    def allows(self, name: str) -> bool:
        """Whether ``name`` (dotted) may reach model code."""
        decision = self._cache.get(name)
        if decision is None:
            decision = _under(name, self.allowed) and not _under(name, self.denied)
            self._cache[name] = decision
        return decision

    def refusal(self, name: str) -> PolicyImportError:
        """The error for a module that is not allowed, listing what is."""
        top = sorted(self.allowed)
        what = f"module {name!r} is not available under the pixelbox policy"
        hint = f"Allowed modules are: {', '.join(top)}"
        return PolicyImportError.build(what, "denied-module", hint)


class ModuleProxy:
    """A read-only stand-in for a module that exposes only part of it.

    Attribute reads are answered by ``lookup`` (which may refuse); writes always fail. The
    real module lives in a slot whose name starts with '_', which model code cannot name.
    """

    __slots__ = ("_pbx_lookup", "_pbx_name", "_pbx_names")

    def __init__(self, name: str, names: Iterable[str], lookup: Callable[[str], Any]) -> None:
        object.__setattr__(self, "_pbx_name", name)
        object.__setattr__(self, "_pbx_names", sorted(names))
        object.__setattr__(self, "_pbx_lookup", lookup)

    def __getattr__(self, attr: str) -> Any:
        return self._pbx_lookup(attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        raise _module_write_error(self._pbx_name)

    def __delattr__(self, attr: str) -> None:
        raise _module_write_error(self._pbx_name)

    def __dir__(self) -> list[str]:
        return list(self._pbx_names)

    def __repr__(self) -> str:
        return f"<module {self._pbx_name!r} (pixelbox policy proxy)>"


def _module_write_error(name: str) -> PolicyPermissionError:
    what = f"modules cannot be modified: {name!r}"
    return PolicyPermissionError.build(what, "no-module-write", "Keep your own values in variables")


class EnvironView(Mapping[str, str]):
    """A live, read-only view of ``os.environ`` (the runtime decides what the kernel's environment holds)."""

    def __getitem__(self, key: str) -> str:
        return os.environ[key]

    def __iter__(self) -> Iterator[str]:
        return iter(dict(os.environ))

    def __len__(self) -> int:
        return len(os.environ)

    def __setitem__(self, key: str, value: str) -> None:
        what = "os.environ is read-only under the pixelbox policy"
        raise PolicyPermissionError.build(what, "read-only-environ", "Keep settings in variables")

    def copy(self) -> dict[str, str]:
        """A plain dict copy, as ``os.environ.copy()`` gives."""
        return dict(os.environ)

    def __repr__(self) -> str:
        return f"environ({dict(os.environ)!r})"


def make_os_proxy() -> ModuleProxy:
    """``os`` with process, network, signal and file-descriptor functions refused."""
    environ = EnvironView()

    def lookup(attr: str) -> Any:
        if attr == "environ":
            return environ
        if attr in OS_ALLOWED:
            return getattr(os, attr)
        what = f"os.{attr} is not available under the pixelbox policy"
        hint = (
            "Process, network, signal, permission and file-descriptor functions are blocked; "
            "os.path, os.listdir, os.makedirs, os.getcwd, os.environ (read) and the like work"
        )
        raise PolicyPermissionError.build(what, "denied-os-function", hint)

    return ModuleProxy("os", [*OS_ALLOWED, "environ"], lookup)


DISPLAY_ALLOWED: frozenset[str] = frozenset(
    {
        "display",
        "Image",
        "HTML",
        "Markdown",
        "Math",
        "Latex",
        "JSON",
        "SVG",
        "Pretty",
        "clear_output",
    }
)


def make_display_proxy(display_function: Callable[..., Any]) -> ModuleProxy:
    """``IPython.display`` reduced to the helpers models use; ``display`` is the guarded one.

    The raw publisher (``publish_display_data``) stays out of reach: it could forge records
    on pixelbox's side channel.
    """
    import IPython.display as ipd

    def lookup(attr: str) -> Any:
        if attr == "display":
            return display_function
        if attr in DISPLAY_ALLOWED:
            return getattr(ipd, attr)
        what = f"IPython.display.{attr} is not available under the pixelbox policy"
        raise PolicyPermissionError.build(what, "denied-display-function", f"use one of {sorted(DISPLAY_ALLOWED)}")

    return ModuleProxy("IPython.display", sorted(DISPLAY_ALLOWED), lookup)


def make_io_proxy(open_function: Callable[..., Any]) -> ModuleProxy:
    """``io`` whose ``open`` is the policy's ``open``."""

    def lookup(attr: str) -> Any:
        if attr == "open":
            return open_function
        if attr in IO_DENIED or attr.startswith("_"):
            what = f"io.{attr} is not available under the pixelbox policy"
            raise PolicyPermissionError.build(what, "denied-io-function")
        return getattr(io, attr)

    return ModuleProxy("io", [n for n in dir(io) if not n.startswith("_") and n not in IO_DENIED], lookup)


class ModuleGate:
    """Decides what model code gets for a module object: the module, a proxy, or an error."""

    def __init__(self, rules: ModuleRules, proxies: Mapping[str, ModuleProxy]) -> None:
        self.rules = rules
        self.proxies = dict(proxies)

    def admit(self, module: ModuleType) -> Any:
        """Return what stands for ``module`` in model code, or raise the refusal."""
        name = module.__name__
        proxy = self.proxies.get(name)
        if proxy is not None:
            return proxy
        if self.rules.allows(name):
            return module
        raise self.rules.refusal(name)
