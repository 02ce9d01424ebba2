"""The restricted-Python policy layer: ``install(shell, section)`` makes every cell run under it.

Installed first of the in-kernel layers (see :mod:`pixelbox.kernel.plugins`). After it:

- every cell is checked and rewritten at compile time (:mod:`pixelbox.kernel.policy.transform`);
  a violation fails the cell as ``PolicyViolation`` naming rule and line, and nothing in it runs;
- cells run with a restricted ``__builtins__`` (:mod:`pixelbox.kernel.policy.guards`) whose
  guards hide '_' attributes, gate modules against the allow-list and hand out ``os``/``io``
  proxies (:mod:`pixelbox.kernel.policy.modules`);
- while a cell runs, an audit hook refuses processes, network, ctypes, links, pseudo-file
  systems and destructive file operations outside writable places, whoever asks
  (:mod:`pixelbox.kernel.policy.audit`).

It is a layer, not the wall: the container or the local backend's OS limits are what contain
code that gets past it (see ``docs/policy.md``).

Section keys (all optional): ``enabled`` (read by the plugin loader), ``extra_modules`` and
``deny_modules`` (lists of dotted module names added to the allow- or deny-list),
``writable_dirs`` (extra directories where files may be removed or renamed) and
``reserved_names`` (names model code may read but never bind; default ``["__pbx__"]``).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from types import MethodType, TracebackType
from typing import Any

from pixelbox.kernel import tracebacks
from pixelbox.kernel.policy import audit
from pixelbox.kernel.policy.errors import (
    PolicyAttributeError,
    PolicyImportError,
    PolicyPermissionError,
    PolicyRejection,
    PolicyViolation,
)
from pixelbox.kernel.policy.guards import Guards, build_builtins, guarded_display, make_open, substitutes
from pixelbox.kernel.policy.modules import (
    ModuleGate,
    ModuleRules,
    make_display_proxy,
    make_io_proxy,
    make_os_proxy,
)
from pixelbox.kernel.policy.transform import PolicyAstHook

__all__ = [
    "PolicyAttributeError",
    "PolicyImportError",
    "PolicyPermissionError",
    "PolicyRejection",
    "PolicySettings",
    "PolicyViolation",
    "install",
]

SECTION_KEYS = frozenset({"enabled", "extra_modules", "deny_modules", "writable_dirs", "reserved_names"})
SHELL_ENTRIES = ("get_ipython", "exit", "quit", "open")
"""What IPython puts in the user namespace that would shadow the policy's builtins."""
_PIXELBOX_DIR = Path(__file__).resolve().parents[2]
_in_kernel_package = tracebacks.under(str(_PIXELBOX_DIR / "kernel"), str(_PIXELBOX_DIR / "contract"))
"""Frames of the in-kernel package and of the contract it runs (both shipped into the kernel)."""


@dataclass(frozen=True)
class PolicySettings:
    """The validated ``policy`` section of the kernel config."""

    extra_modules: tuple[str, ...] = ()
    deny_modules: tuple[str, ...] = ()
    writable_dirs: tuple[str, ...] = ()
    reserved_names: tuple[str, ...] = ("__pbx__",)

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> PolicySettings:
        """Validate ``section``; a bad key or value raises ``ValueError`` saying what to fix."""
        if not isinstance(section, dict):
            raise ValueError(f"the policy section must be a JSON object, got {type(section).__name__}")
        unknown = sorted(set(section) - SECTION_KEYS)
        if unknown:
            raise ValueError(f"unknown policy section keys {unknown}; known keys are {sorted(SECTION_KEYS)}")
        values = {key: _names(section, key) for key in SECTION_KEYS - {"enabled"} if key in section}
        for name in values.get("reserved_names", ()):
            if not name.startswith("__pbx"):
                raise ValueError(f"reserved_names may only hold names starting with '__pbx', got {name!r}")
        return cls(**values)


def _names(section: dict[str, Any], key: str) -> tuple[str, ...]:
    value = section[key]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"policy section key {key!r} must be a list of non-empty strings, got {value!r}")
    return tuple(value)


class PolicyLayer:
    """The policy as installed in one shell: its guards, builtins and per-cell bookkeeping."""

    def __init__(self, shell: Any, settings: PolicySettings) -> None:
        self.shell = shell
        self.settings = settings
        rules = ModuleRules(settings.extra_modules, settings.deny_modules)
        self.open = make_open(audit.check_open_path)
        display = _ipython_display()
        proxies = {"os": make_os_proxy(), "io": make_io_proxy(self.open)}
        if display is not None:
            proxies["IPython.display"] = make_display_proxy(guarded_display(display))
        self.gate = ModuleGate(rules, proxies)
        self.guards = Guards(self.gate, self.is_reserved_object, self.is_cell_file)
        for original, substitute in substitutes(self.guards):
            self.guards.substitutes[id(original)] = (original, substitute)
        self.builtins = build_builtins(self.guards, self.open, display)
        self.hook = PolicyAstHook(settings.reserved_names)
        self.shell_entries: dict[str, Any] = {}
        self.audit = audit.Switch(lambda: None, lambda: None, lambda: False)

    def is_reserved_object(self, obj: Any) -> bool:
        """Whether ``obj`` is what a reserved name (the recorder) is bound to."""
        ns = self.shell.user_ns
        return any(name in ns and ns[name] is obj for name in self.settings.reserved_names)

    def install(self) -> None:
        """Register the AST hook, the namespace, the audit hook and the per-cell events."""
        ns = self.shell.user_ns
        self.shell_entries = {name: ns[name] for name in SHELL_ENTRIES if name in ns}
        self.enforce()
        audit.STATE.configure(audit.default_writable(os.getcwd(), self.settings.writable_dirs))
        self.audit = audit.install_hook(self.is_cell_file)
        self.shell.events.register("pre_execute", self.pre_execute)
        self.shell.events.register("post_run_cell", self.post_run_cell)
        tracebacks.add_traceback_filter(self.shell, self.clean_traceback)

    def clean_traceback(self, exc: BaseException) -> None:
        """Keep host internals out of what the agent reads.

        A policy error shows only the agent's own frames (a cell rejected before it ran gets
        one pointing at the offending line); any other error loses the frames of pixelbox's
        in-kernel code (guards, proxies, audit hook) it passed through.
        """
        cells = self._cell_files()

        def outside_cells(tb: TracebackType) -> bool:
            return tb.tb_frame.f_code.co_filename not in cells

        for index, current in enumerate(tracebacks.chain(exc)):
            hidden = outside_cells if isinstance(current, PolicyViolation) else _in_kernel_package
            current.__traceback__ = tracebacks.unlink(current.__traceback__, hidden, keep_head=index == 0)
        head = exc.__traceback__
        if isinstance(exc, PolicyRejection) and head is not None and head.tb_next is None:
            # Nothing of the cell ran: point at the offending line, or show no frame at all
            # (IPython skips the head frame only when another follows it).
            name = self._running_cell()
            line = exc.line
            head.tb_next = tracebacks.cell_frame(name, line) if name is not None and line is not None else None
            exc.__traceback__ = head if head.tb_next is not None else None

    def is_cell_file(self, filename: str) -> bool:
        """Whether ``filename`` is one the shell compiled an agent's cell under (cheap: a dict lookup)."""
        names = getattr(self.shell.compile, "_filename_map", None)
        return isinstance(names, dict) and filename in names

    def _cell_files(self) -> set[str]:
        """File names under which the shell compiled the agent's cells."""
        names = getattr(self.shell.compile, "_filename_map", None)
        return set(names) if isinstance(names, dict) else set()

    def _running_cell(self) -> str | None:
        """The file name of the cell being run: the last one compiled (the highest number)."""
        names = getattr(self.shell.compile, "_filename_map", None)
        if not isinstance(names, dict) or not names:
            return None
        latest = max(names.values())
        return [name for name, number in names.items() if number == latest][-1]

    def enforce(self) -> None:
        """(Re)assert the policy on the shell; cheap, so it runs before every cell.

        A namespace reset or anything that removed the AST hook would otherwise leave cells
        running with the real builtins.
        """
        if not any(t is self.hook for t in self.shell.ast_transformers):
            self.shell.ast_transformers.append(self.hook)
        for ns in {
            id(self.shell.user_ns): self.shell.user_ns,
            id(self.shell.user_global_ns): self.shell.user_global_ns,
        }.values():
            if ns.get("__builtins__") is not self.builtins:
                ns["__builtins__"] = self.builtins
            for name, value in self.shell_entries.items():
                if name in ns and _same_entry(ns[name], value):
                    del ns[name]

    def pre_execute(self) -> None:
        """Before each execution: re-assert the policy, switch the audit hook on, and make sure
        it is switched off only by the last end-of-cell callback.

        Other layers do work for the cell after it returns (the image I/O layer draws and saves
        open figures, which runs model code's draw callbacks), so the hook stays on until every
        other ``post_run_cell`` callback has run, whoever registered after the policy.
        """
        self.enforce()
        callbacks = self.shell.events.callbacks["post_run_cell"]
        if callbacks[-1:] != [self.post_run_cell]:
            with contextlib.suppress(ValueError):
                callbacks.remove(self.post_run_cell)
            callbacks.append(self.post_run_cell)
        self.audit.begin()

    def post_run_cell(self, result: Any = None) -> None:
        """After each execution and everything other layers do for it: switch the audit hook off."""
        self.audit.end()


def _same_entry(current: Any, installed: Any) -> bool:
    """Whether ``current`` is IPython's entry (bound methods are recreated on each access)."""
    return current is installed or (isinstance(current, MethodType) and current == installed)


def _ipython_display() -> Any:
    try:
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython hosts the kernel
        return None
    return display


def install(shell: Any, section: dict[str, Any]) -> None:
    """Put ``shell`` under the restricted policy described by ``section`` (see module doc)."""
    PolicyLayer(shell, PolicySettings.from_section(section)).install()
