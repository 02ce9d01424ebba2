"""The result of running one cell: what came back, how it ended, and what was lost."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pixelbox.runtime.artifacts import Artifact

Status = Literal["ok", "error", "timeout", "crashed"]
STATUSES: tuple[Status, ...] = ("ok", "error", "timeout", "crashed")


@dataclass
class ErrorInfo:
    """An exception raised by the cell, rendered as plain text (no ANSI colour codes)."""

    ename: str
    evalue: str
    traceback: str

    def __str__(self) -> str:
        return f"{self.ename}: {self.evalue}"


@dataclass
class Output:
    """One rich output in the order it was produced.

    ``data`` holds textual MIME types inline (``text/plain``, ``text/html``, JSON...).
    Binary MIME types (PNG, JPEG...) are written to files on the host and listed in
    ``files`` as MIME type -> host path, so results stay small and JSON-friendly.
    """

    type: Literal["display_data", "execute_result"]
    data: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)


class Text(str):
    """A string that can also be called, returning itself: ``Execution.text`` was once a method."""

    def __call__(self) -> str:
        return str(self)


@dataclass
class Execution:
    """Everything one ``Sandbox.execute`` call produced. JSON round-trips via :meth:`to_dict`.

    ``status`` is ``ok``, ``error`` (the cell raised), ``timeout`` (the deadline passed; the
    kernel was interrupted, or replaced if it would not stop) or ``crashed`` (the kernel died:
    ``crash_reason`` says how). ``state_lost`` is set whenever the kernel behind this result
    is not the one that ran the previous cells, so the caller knows variables are gone.
    """

    index: int
    status: Status
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: int = 0
    stderr_truncated: int = 0
    outputs: list[Output] = field(default_factory=list)
    outputs_dropped: int = 0
    error: ErrorInfo | None = None
    duration: float = 0.0
    crash_reason: str | None = None
    restarted: bool = False
    state_lost: bool = False
    execution_count: int | None = None
    artifacts: list[Artifact] = field(default_factory=list)
    """Every image the cell wrote or showed, verified by the host (``to_dict`` gives their JSON)."""
    events: list[dict[str, Any]] = field(default_factory=list)
    normalizations: list[dict[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    tampered: bool = False
    """The recorder saw its trace interfered with or incomplete (details in ``notices``)."""
    audit: dict[str, Any] | None = None
    """What the code says beside what ran (``Sandbox.audit`` fills it on demand; see ``docs/static-tracer.md``)."""

    @property
    def ok(self) -> bool:
        """True when the cell ran to completion without raising."""
        return self.status == "ok"

    @property
    def text(self) -> Text:
        """The plain-text results (``text/plain`` of each output), newline-joined.

        A property like ``ok``; the older call form ``result.text()`` still works.
        """
        return Text("\n".join(o.data["text/plain"] for o in self.outputs if "text/plain" in o.data))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return asdict(self)

    def to_json(self, **kwargs: Any) -> str:
        """This result as a JSON string."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Execution:
        """Rebuild an :class:`Execution` from :meth:`to_dict` output."""
        data = dict(raw)
        data["outputs"] = [Output(**o) for o in data.get("outputs", [])]
        if data.get("error") is not None:
            data["error"] = ErrorInfo(**data["error"])
        data["artifacts"] = [Artifact.from_json(a) for a in data.get("artifacts", [])]
        return cls(**data)
