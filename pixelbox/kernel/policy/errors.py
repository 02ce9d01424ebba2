"""The one error the restricted policy raises, in the flavours ordinary ``except`` clauses expect.

Every flavour reports itself under the type name ``PolicyViolation`` (that is the ``ename``
the host and the agent see), carries the rule it enforces in ``.rule``, and subclasses the
builtin error a plain Python program would have met: a denied import is an ``ImportError``,
a denied call a ``PermissionError``, a hidden attribute an ``AttributeError``, and a cell
rejected before it runs an IPython ``InputRejected`` (which aborts the cell cleanly instead
of making IPython drop the transformer).
"""

from __future__ import annotations

from typing import TypeVar

from IPython.core.error import InputRejected

PUBLIC_NAME = "PolicyViolation"
_V = TypeVar("_V", bound="PolicyViolation")


class PolicyViolation(Exception):
    """Base of every policy error; ``rule`` names the rule, ``line`` the cell line if known."""

    rule: str
    line: int | None

    def __init__(self, message: str, *, rule: str, line: int | None = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.line = line

    @classmethod
    def build(cls: type[_V], what: str, rule: str, hint: str = "") -> _V:
        """A run-time violation of ``rule``: what was refused, and what to do instead."""
        return cls(runtime_message(what, rule, hint), rule=rule)


class PolicyRejection(PolicyViolation, InputRejected):
    """A cell refused at compile time: nothing in it ran."""


class PolicyImportError(PolicyViolation, ImportError):
    """An import of a module outside the allow-list."""


class PolicyPermissionError(PolicyViolation, PermissionError):
    """A call or operation the policy forbids (process, network, destructive file system...)."""


class PolicyAttributeError(PolicyViolation, AttributeError):
    """An attribute the policy hides (names starting with '_', frame and code objects...)."""


class PolicyKeyError(PolicyViolation, KeyError):
    """A name ``globals()`` or ``locals()`` hides (the dunder names of the namespace)."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


for _flavour in (PolicyRejection, PolicyImportError, PolicyPermissionError, PolicyAttributeError, PolicyKeyError):
    _flavour.__name__ = PUBLIC_NAME
    _flavour.__qualname__ = PUBLIC_NAME
del _flavour


def runtime_message(what: str, rule: str, hint: str = "") -> str:
    """The text of a run-time violation: what was refused, the rule, and what to do instead."""
    text = f"{what} (policy rule: {rule})"
    return f"{text}. {hint}" if hint else text


def static_message(line: int | None, what: str, rule: str) -> str:
    """The text of a compile-time rejection, e.g. ``line 3: ... (policy rule: no-underscore-attr)``."""
    where = f"line {line}" if line is not None else "cell"
    return f"{where}: {what} (policy rule: {rule})"
