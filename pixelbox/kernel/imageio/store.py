"""The artifact store: decides where each captured image goes, writes it once, and announces it.

Rules (the package docstring explains them for users):
- every capture gets the next index and a fresh file; an existing file is never replaced
  (files are reserved with ``O_CREAT | O_EXCL | O_NOFOLLOW`` before the writer runs);
- a save lands exactly where the code asked when that path is a free file in the workspace
  that fits the profile's naming, otherwise in the artifact directory under the profile's name,
  and that move is announced as a normalization;
- the path the code asked for is remembered, so its later reads see the latest image saved there;
- except under a host's per-cell save name (:class:`SaveAs`, the DeepEyes/Thyme runners' rule): a save
  through one of its APIs becomes that file in the artifact directory whatever the code asked, and a
  later one of the same cell replaces it (same index, ``replaces`` in its record), as those runners
  overwrite; the asked path is not remembered, since they ignore it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pixelbox.kernel.imageio.errors import ArtifactLimitError
from pixelbox.kernel.imageio.facts import ImageFacts, read_facts
from pixelbox.kernel.imageio.paths import absolute, extension, is_within
from pixelbox.kernel.imageio.profiles import Profile
from pixelbox.kernel.imageio.settings import IOSettings
from pixelbox.kernel.imageio.source import CellSite

T = TypeVar("T")
Publish = Callable[[str, dict[str, Any]], None]

CAPTURE_KINDS = ("saved", "shown", "displayed", "last_expression")
RECORD_VERSION = 1

_WRITE_REASONS = {
    "directory_as_name": "the path is a directory",
    "input_path": "inputs are read-only",
    "outside_workspace": "that location is outside the workspace",
    "missing_directory": "that directory does not exist",
    "no_extension": "the name has no image extension",
    "name_taken": "a file with that name exists and is never overwritten",
    "naming": "outputs here are named {stem}N in order",
    "save_as": "every image saved in this step is {name}",
}


@dataclass(frozen=True)
class SaveAs:
    """The host's save name for one cell (``SAVE_AS_METADATA_KEY``): saves through ``apis`` become ``name``."""

    name: str
    apis: frozenset[str]

    @classmethod
    def from_metadata(cls, raw: Any) -> SaveAs | None:
        """The directive in execute-request metadata; None when absent or malformed (a plain file name only)."""
        if not isinstance(raw, dict):
            return None
        name, apis = raw.get("name"), raw.get("apis")
        plain = isinstance(name, str) and name not in ("", ".", "..") and os.path.basename(name) == name
        if not plain or not extension(str(name)) or not isinstance(apis, list):
            return None
        return cls(str(name), frozenset(a for a in apis if isinstance(a, str)))


@dataclass
class _ExecState:
    """Counters and bookkeeping that reset at the start of every execution."""

    exec_hint: int | None = None
    save_as: SaveAs | None = None
    count: int = 0
    pixels: int = 0
    created: list[dict[str, Any]] = field(default_factory=list)
    reads_noted: set[tuple[str, str]] = field(default_factory=set)


class ArtifactStore:
    """Allocates names, writes through a caller-supplied writer, and publishes records."""

    def __init__(self, settings: IOSettings, profile: Profile, publish: Publish) -> None:
        self.settings = settings
        self.profile = profile
        self.publish = publish
        self.records: list[dict[str, Any]] = []
        self.saved_to: dict[str, dict[str, Any]] = {}
        self.next_index = settings.first_index if settings.first_index is not None else profile.first_index
        self.exec = _ExecState()
        self._input_paths = {image.path for image in settings.inputs}
        self._adopt_existing()

    def _adopt_existing(self) -> None:
        """Know again the artifacts an earlier kernel of this sandbox saved (after a restart: VisualToolBench
        restarts before every code call), so reading one is tied to its lineage (``artifact:N``) instead of
        starting a new root. Only regular files named by the profile (``STEM<N>.<ext>``) are adopted; they
        are not announced again."""
        stem = self.profile.stem
        try:
            names = sorted(os.listdir(self.settings.artifact_dir)) if stem else []
        except OSError:
            return
        pattern = re.compile(re.escape(stem or "") + r"(\d+)\.[A-Za-z0-9]+")
        for name in names:
            found = pattern.fullmatch(name)
            path = os.path.join(self.settings.artifact_dir, name)
            if found is None or os.path.islink(path) or not os.path.isfile(path) or path in self._input_paths:
                continue
            self.records.append({"v": RECORD_VERSION, "index": int(found.group(1)), "name": name, "path": path})
        if self.records:
            self.next_index = max(self.next_index, *(record["index"] + 1 for record in self.records))

    def start_execution(self, exec_hint: int | None, save_as: SaveAs | None = None) -> None:
        """Reset the per-execution caps; ``exec_hint`` numbers captures made outside any cell frame;
        ``save_as`` is the host's save name for this cell, if any."""
        self.exec = _ExecState(exec_hint=exec_hint, save_as=save_as)

    def capture(
        self,
        *,
        asked: str | None,
        kind: str,
        api: str,
        ext: str,
        write: Callable[[str], T],
        site: CellSite,
        pixels: int | None = None,
        digest: Callable[[], str | None] | None = None,
    ) -> tuple[T, dict[str, Any]]:
        """Write one image with ``write(path)`` at a fresh path and announce it as an artifact;
        ``digest()``, when given, is the sha256 ``write`` took of what it wrote (None if it could not)."""
        self._check_before(pixels)
        directed = self._directed(kind, api)
        if directed is not None:
            path, index, why, replaced = self._reserve_directed(directed, asked, ext)
        else:
            (path, index, why), replaced = self._reserve(asked, ext, kind), None
        try:
            result = write(path)
            facts = read_facts(path, digest() if digest is not None else None)
            self._check_after(facts)
        except BaseException:
            os.unlink(path)
            raise
        record = self._record(index, path, facts, kind, api, asked, site)
        if replaced is not None:  # its file is gone: only the new record names it
            record["replaces"] = replaced["index"]
            self.records.remove(replaced)
            self.exec.created.remove(replaced)
        self._commit(record, None if directed is not None else asked)
        if why is not None and asked is not None:
            self._publish_write_normalization(record, asked, why)
        self.publish("artifact", record)
        return result, record

    def note_read(self, *, api: str, asked: str, used: str, why: str, message: str, site: CellSite) -> None:
        """Announce a read that was served from another path (once per path pair per execution)."""
        key = (asked, used)
        if key in self.exec.reads_noted:
            return
        self.exec.reads_noted.add(key)
        self.publish(
            "normalization",
            {
                "v": RECORD_VERSION,
                "op": "read",
                "api": api,
                "asked": asked,
                "used": used,
                "why": why,
                "message": message,
                "exec": self._exec_of(site),
                "line": site.line,
            },
        )

    def record_at(self, path: str) -> dict[str, Any] | None:
        """The artifact stored at an absolute path, if any (the latest, when a save name replaced one)."""
        return next((record for record in reversed(self.records) if record["path"] == path), None)

    def _check_before(self, pixels: int | None) -> None:
        limits = self.settings.limits
        if self.exec.count >= limits.max_artifacts_per_exec:
            raise ArtifactLimitError(
                f"image not captured: this code block already produced {self.exec.count} images, the "
                f"limit per block is {limits.max_artifacts_per_exec}; keep only the images you need"
            )
        if pixels is not None:
            self._check_pixels(pixels)

    def _check_after(self, facts: ImageFacts) -> None:
        self._check_pixels(facts.width * facts.height)

    def _check_pixels(self, pixels: int) -> None:
        limits = self.settings.limits
        if pixels > limits.max_pixels_per_image:
            raise ArtifactLimitError(
                f"image not captured: it has {pixels:,} pixels, more than the {limits.max_pixels_per_image:,} "
                "allowed per image (decompression-bomb guard); resize or crop it first"
            )
        if self.exec.pixels + pixels > limits.max_pixels_per_exec:
            raise ArtifactLimitError(
                f"image not captured: this code block would write {self.exec.pixels + pixels:,} pixels of "
                f"images, more than the {limits.max_pixels_per_exec:,} allowed per block; save fewer or "
                "smaller images"
            )

    def _reserve(self, asked: str | None, ext: str, kind: str) -> tuple[str, int, str | None]:
        """Pick and atomically create the target file; returns (path, index, normalization reason)."""
        index = self.next_index
        why: str | None = None
        if asked is not None:
            target = absolute(asked)
            why = self._why_relocated(asked, target, index, ext)
            if why is None:
                if _create_exclusive(target):
                    return target, index, None
                why = "name_taken"
        while True:
            for name in self._candidate_names(asked, index, ext, kind):
                path = os.path.join(self.settings.artifact_dir, name)
                if _create_exclusive(path):
                    return path, index, why
            index += 1

    def _directed(self, kind: str, api: str) -> SaveAs | None:
        save_as = self.exec.save_as
        return save_as if save_as is not None and kind == "saved" and api in save_as.apis else None

    def _reserve_directed(
        self, save_as: SaveAs, asked: str | None, ext: str
    ) -> tuple[str, int, str | None, dict[str, Any] | None]:
        """The host's save name: (path, index, normalization reason, the record of this cell it replaces).

        A file of that name made earlier in this cell is replaced and its index reused; one from an
        earlier cell, an input or anything that is not a regular file is never touched (the save then
        takes the next free profile name, announced as ``name_taken``)."""
        path = os.path.join(self.settings.artifact_dir, save_as.name)
        replaced = next((r for r in reversed(self.exec.created) if r["path"] == path), None)
        if replaced is not None and os.path.isfile(path) and not os.path.islink(path):
            os.unlink(path)
        if _create_exclusive(path):
            index = replaced["index"] if replaced is not None else self.next_index
            moved = asked is not None and absolute(asked) != path
            return path, index, ("save_as" if moved else None), replaced
        path, index, _ = self._reserve(None, ext, "saved")
        return path, index, "name_taken", None

    def _why_relocated(self, asked: str, target: str, index: int, ext: str) -> str | None:
        """Why a save cannot land where the code asked (None when it can)."""
        workspace = self.settings.workspace
        parent = os.path.dirname(target)
        if not extension(asked) and (asked.endswith(("/", os.sep)) or os.path.isdir(target)):
            return "directory_as_name"
        if target in self._input_paths:
            return "input_path"
        if not is_within(target, workspace) or not is_within(os.path.realpath(parent), workspace):
            return "outside_workspace"
        if not os.path.isdir(parent):
            return "missing_directory"
        if not extension(asked):
            return "no_extension"
        if os.path.lexists(target):
            return "name_taken"
        if self.profile.stem is not None and (
            parent != self.settings.artifact_dir or os.path.basename(target) != self.profile.numbered_name(index, ext)
        ):
            return "naming"
        return None

    def _candidate_names(self, asked: str | None, index: int, ext: str, kind: str) -> list[str]:
        if asked is None:
            return [self.profile.unnamed_name(index, kind)]
        if self.profile.stem is not None:
            return [self.profile.numbered_name(index, ext)]
        stem, asked_ext = os.path.splitext(os.path.basename(asked.rstrip("/" + os.sep)))
        if not stem or asked_ext.lower() != ext or os.path.isdir(absolute(asked)):
            return [f"image_{index}{ext}"]
        return [f"{stem}{ext}", f"{stem}_{index}{ext}"]

    def _record(
        self, index: int, path: str, facts: ImageFacts, kind: str, api: str, asked: str | None, site: CellSite
    ) -> dict[str, Any]:
        return {
            "v": RECORD_VERSION,
            "index": index,
            "name": os.path.basename(path),
            "path": path,
            "relpath": os.path.relpath(path, self.settings.workspace).replace(os.sep, "/"),
            "sha256": facts.sha256,
            "bytes": facts.size_bytes,
            "mtime_ns": facts.mtime_ns,
            "width": facts.width,
            "height": facts.height,
            "mode": facts.mode,
            "format": facts.format,
            "capture": kind,
            "asked": asked,
            "api": api,
            "exec": self._exec_of(site),
            "line": site.line,
        }

    def _commit(self, record: dict[str, Any], asked: str | None) -> None:
        self.records.append(record)
        self.next_index = max(self.next_index, record["index"] + 1)
        self.exec.count += 1
        self.exec.pixels += record["width"] * record["height"]
        self.exec.created.append(record)
        if asked is not None:
            self.saved_to[absolute(asked)] = record

    def _publish_write_normalization(self, record: dict[str, Any], asked: str, why: str) -> None:
        reason = _WRITE_REASONS[why].format(stem=self.profile.stem, name=record["name"])
        existing = self.record_at(absolute(asked)) if why == "name_taken" else None
        if existing is not None:
            reason = f"{existing['name']} is artifact {existing['index']} and is never overwritten"
        self.publish(
            "normalization",
            {
                "v": RECORD_VERSION,
                "op": "write",
                "api": record["api"],
                "asked": asked,
                "used": record["path"],
                "why": why,
                "message": f"saved {asked!r} as {record['name']}: {reason}",
                "exec": record["exec"],
                "line": record["line"],
                "artifact": record["index"],
            },
        )

    def _exec_of(self, site: CellSite) -> int | None:
        return site.exec_index if site.exec_index is not None else self.exec.exec_hint


def _create_exclusive(path: str) -> bool:
    """Create an empty file at ``path`` unless anything (even a dangling symlink) is there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except (FileExistsError, IsADirectoryError):
        return False
    os.close(fd)
    return True
