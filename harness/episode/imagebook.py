"""The host's copy of an episode's images: inputs and every artifact, by index, kept in the run directory.

A sandbox's workspace is deleted when the episode ends, but scoring (visual checks), reports and
the official-layout export need the images the agent produced. So each artifact announced in an
``Execution`` is read back through ``Sandbox.download`` (which refuses links) and stored once as
``RUN/episodes/<task_id>.images/<name>``. The book also answers "the bytes of image N" for
reverse image search on the host.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelbox.runtime.artifacts import Artifact
from pixelbox.runtime.errors import PixelboxError

ArtifactRecord = Artifact | Mapping[str, Any]
"""An artifact of a live ``Execution``, or its JSON as a trace holds it."""


@dataclass(frozen=True)
class ImageEntry:
    """One image of the episode: its index, name, where the host keeps it, and what made it."""

    index: int
    name: str
    path: Path
    width: int | None
    height: int | None
    sha256: str
    origin: str
    """``input``, ``code``, ``tool:<name>`` or ``download``."""

    def to_dict(self, root: Path | None = None) -> dict[str, Any]:
        """JSON view; ``stored`` is relative to ``root`` when given (the run directory)."""
        stored = os.path.relpath(self.path, root) if root is not None else str(self.path)
        return {
            "index": self.index,
            "name": self.name,
            "stored": stored.replace(os.sep, "/"),
            "width": self.width,
            "height": self.height,
            "sha256": self.sha256,
            "origin": self.origin,
        }

    def label(self) -> str:
        """``image 3 (transformed_image_3.png, 300x200)``."""
        size = f", {self.width}x{self.height}" if self.width and self.height else ""
        return f"image {self.index} ({self.name}{size})"


class ImageBook:
    """Every image of one episode by index; artifacts are copied into ``directory`` as they appear."""

    def __init__(self, directory: Path, inputs: list[Path], input_names: list[str] | None = None) -> None:
        self.directory = directory
        self.entries: dict[int, ImageEntry] = {}
        self.problems: list[str] = []
        """Artifacts that were not kept because they changed after capture (what and why)."""
        names = input_names or [p.name for p in inputs]
        for index, (path, name) in enumerate(zip(inputs, names, strict=True)):
            self.entries[index] = _input_entry(index, name, path)

    @property
    def latest(self) -> ImageEntry | None:
        """The image with the highest index."""
        return self.entries[max(self.entries)] if self.entries else None

    def get(self, index: int) -> ImageEntry | None:
        """The image at ``index``, if there is one."""
        return self.entries.get(index)

    def ingest(
        self, sandbox: Any, artifacts: Sequence[ArtifactRecord], origin: str, *, execution: Any = None
    ) -> list[ImageEntry]:
        """Copy newly announced artifacts out of the sandbox; returns them in index order.

        Each copy must be the image the host verified at capture (``sha256``): one deleted or
        rewritten since (by the kernel, after the host hashed it) is not kept, and the execution
        that announced it (``execution``, when given) gets a notice and is flagged ``tampered``.
        That is the episode's own doing, never a failure of the run.
        """
        added = []
        for record in sorted(artifacts, key=lambda r: int(r["index"])):
            index = int(record["index"])
            if index in self.entries and self.entries[index].origin != "input":
                continue
            problem, data = _copy_of(sandbox, record)
            if problem is not None:
                self.problems.append(problem)
                if execution is not None:
                    execution.notices.append(f"trace integrity: {problem}")
                    execution.tampered = True
                continue
            entry = self._store(record, data, origin)
            self.entries.setdefault(index, entry)
            added.append(entry)
        return added

    def read(self, index: int) -> bytes | None:
        """The bytes of image ``index`` (None when there is no such image)."""
        entry = self.entries.get(index)
        return entry.path.read_bytes() if entry is not None else None

    def _store(self, record: ArtifactRecord, data: bytes, origin: str) -> ImageEntry:
        self.directory.mkdir(parents=True, exist_ok=True)
        name = _safe_name(record)
        target = self.directory / name
        if target.exists():
            target = self.directory / f"{record['index']}_{name}"
        target.write_bytes(data)
        return ImageEntry(
            index=int(record["index"]),
            name=name,
            path=target,
            width=_int(record.get("width")),
            height=_int(record.get("height")),
            sha256=hashlib.sha256(data).hexdigest(),
            origin=origin,
        )


def _safe_name(record: ArtifactRecord) -> str:
    """A file name for the host's copy: the record's name (kernel-made) if it is a plain one, else ``image_N.png``.

    A name such as ``..``, one with a NUL byte or a separator, or one longer than a file name may
    be must not make storing the copy fail (that would end the episode as an infrastructure fault).
    """
    name = os.path.basename(str(record.get("name") or ""))
    plain = name not in ("", ".", "..") and "\x00" not in name and len(name.encode("utf-8", "replace")) <= 128
    return name if plain else f"image_{int(record['index'])}.png"


def _copy_of(sandbox: Any, record: ArtifactRecord) -> tuple[str | None, bytes]:
    """The artifact's bytes as downloaded now, or why they are not the image the host verified."""
    name = os.path.basename(str(record.get("name") or record.get("relpath") or "")) or f"image {record['index']}"
    try:
        data = sandbox.download(str(record.get("relpath") or record.get("kernel_path") or record["path"]))
    except PixelboxError as exc:
        return f"artifact {record['index']} ({name}) was removed or replaced after capture ({exc}); not kept", b""
    expected = record.get("sha256")
    if isinstance(expected, str) and hashlib.sha256(data).hexdigest() != expected:
        return f"artifact {record['index']} ({name}) was rewritten after capture (its sha256 changed); not kept", b""
    return None, data


def _input_entry(index: int, name: str, path: Path) -> ImageEntry:
    from PIL import Image

    with Image.open(path) as image:
        width, height = image.size
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return ImageEntry(index, name, path, width, height, digest, "input")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
