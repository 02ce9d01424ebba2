"""Serves reads of image paths that do not exist but plainly mean a known image.

Order of rules, first match wins:
1. ``saved_here``: the code saved to this very path earlier: the latest image it saved there;
2. the path exists: used as is;
3. ``input_name`` / ``artifact_name`` / ``saved_name``: the file name equals an input's name,
   an artifact's assigned name, or the file name of a path the code saved to;
4. ``extension``: the same name with another image extension;
5. ``placeholder``: an invented input location (``/mnt/data/...``) or name (``image.png``)
   when the task has exactly one input.
Two or more candidates at one rule are never guessed between: the read fails and lists them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pixelbox.kernel.imageio.errors import AmbiguousImagePathError, ImageNotFoundError
from pixelbox.kernel.imageio.paths import (
    IMAGE_EXTENSIONS,
    PLACEHOLDER_STEMS,
    absolute,
    under_placeholder_dir,
)
from pixelbox.kernel.imageio.settings import InputImage
from pixelbox.kernel.imageio.store import ArtifactStore

_LISTED = 24

_WHY_TEXT = {
    "saved_here": "the latest image this code saved to that path",
    "input_name": "the input with that file name",
    "artifact_name": "the artifact with that name",
    "saved_name": "the image the code saved under that file name",
    "extension": "the only image with that name",
    "placeholder": "the task's only input image",
}


@dataclass(frozen=True)
class Resolution:
    """Where a read is served from and, when that differs from the request, why."""

    path: str
    why: str | None = None
    input_index: int | None = None
    artifact_index: int | None = None

    @property
    def root_key(self) -> str | None:
        """The lineage key of the image read (``input:0`` / ``artifact:3``), if it is a known one."""
        if self.input_index is not None:
            return f"input:{self.input_index}"
        if self.artifact_index is not None:
            return f"artifact:{self.artifact_index}"
        return None

    def message(self, asked: str) -> str:
        """One short line for the agent's observation."""
        return f"read {asked!r} as {os.path.basename(self.path)}: {_WHY_TEXT.get(self.why or '', self.why)}"


@dataclass(frozen=True)
class _Known:
    """One image code may mean: an input or an artifact, with every name it answers to."""

    path: str
    label: str
    names: tuple[str, ...]
    input_index: int | None = None
    artifact_index: int | None = None


class ReadResolver:
    """Maps a requested read path to a real file using the inputs and the store's artifacts."""

    def __init__(self, inputs: tuple[InputImage, ...], store: ArtifactStore) -> None:
        self.inputs = inputs
        self.store = store

    def resolve(self, asked: str) -> Resolution:
        """Resolve ``asked`` or raise an error listing the images that exist."""
        target = absolute(asked)
        saved = self.store.saved_to.get(target)
        if saved is not None:
            return self._artifact(saved, None if saved["path"] == target else "saved_here")
        if os.path.lexists(target):
            return self._plain(target)
        for why, candidates in self._rules(target):
            if len(candidates) == 1:
                return self._known(candidates[0], why)
            if len(candidates) > 1:
                raise AmbiguousImagePathError(self._ambiguous_text(asked, candidates))
        raise ImageNotFoundError(self._missing_text(asked))

    def available(self) -> list[str]:
        """Human-readable lines naming every image the code can read."""
        return [f"{known.label} {known.names[0]!r} at {known.path}" for known in self._known_images()]

    def _rules(self, target: str) -> list[tuple[str, list[_Known]]]:
        base = os.path.basename(target)
        stem, ext = os.path.splitext(base)
        known = self._known_images()
        inputs = [k for k in known if k.input_index is not None]
        artifacts = [k for k in known if k.artifact_index is not None]
        placeholder = ext.lower() in IMAGE_EXTENSIONS and (
            under_placeholder_dir(target) or stem.lower() in PLACEHOLDER_STEMS
        )
        return [
            ("input_name", [k for k in inputs if base in k.names]),
            ("artifact_name", [k for k in artifacts if base == k.names[0]]),
            ("saved_name", self._saved_name(base)),
            ("extension", _same_stem(known, stem, ext)),
            ("placeholder", inputs if placeholder else []),
        ]

    def _saved_name(self, base: str) -> list[_Known]:
        latest: dict[str, dict[str, Any]] = {}
        for asked_path, record in self.store.saved_to.items():
            if os.path.basename(asked_path) == base:
                latest[asked_path] = record
        distinct = {record["path"]: record for record in latest.values()}
        return [self._artifact_known(record) for record in distinct.values()]

    def _known_images(self) -> list[_Known]:
        found = [
            _Known(
                image.path, f"input {image.index}", (image.name, os.path.basename(image.path)), input_index=image.index
            )
            for image in self.inputs
        ]
        found.extend(self._artifact_known(record) for record in self.store.records)
        return found

    @staticmethod
    def _artifact_known(record: dict[str, Any]) -> _Known:
        return _Known(record["path"], f"artifact {record['index']}", (record["name"],), artifact_index=record["index"])

    def _plain(self, target: str) -> Resolution:
        for image in self.inputs:
            if image.path == target:
                return Resolution(target, input_index=image.index)
        record = self.store.record_at(target)
        return Resolution(target, artifact_index=None if record is None else record["index"])

    @staticmethod
    def _artifact(record: dict[str, Any], why: str | None) -> Resolution:
        return Resolution(record["path"], why, artifact_index=record["index"])

    @staticmethod
    def _known(known: _Known, why: str) -> Resolution:
        return Resolution(known.path, why, known.input_index, known.artifact_index)

    def _missing_text(self, asked: str) -> str:
        return f"no image at {asked!r}. {self._listing()}"

    def _ambiguous_text(self, asked: str, candidates: list[_Known]) -> str:
        options = "; ".join(f"{k.label} {k.names[0]!r} at {k.path}" for k in candidates)
        return (
            f"{asked!r} does not exist and could mean several images ({options}); "
            f"open one of them by its path. {self._listing()}"
        )

    def _listing(self) -> str:
        lines = self.available()
        if not lines:
            return "This task has no images yet."
        shown = "; ".join(lines[:_LISTED])
        more = f" (and {len(lines) - _LISTED} more)" if len(lines) > _LISTED else ""
        return f"Available images: {shown}{more}."


def _same_stem(known: list[_Known], stem: str, ext: str) -> list[_Known]:
    if not stem or ext.lower() not in IMAGE_EXTENSIONS:
        return []
    return [k for k in known if any(os.path.splitext(name)[0] == stem for name in k.names)]
