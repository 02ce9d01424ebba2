"""Host-side artifacts: the record type and the checks that admit a kernel's image into a result.

The kernel announces each captured image with a record (see ``pixelbox.kernel.imageio``); the
host never trusts it. :func:`ingest_artifact` re-opens the file from the host's view of the
workspace without following any symlink, refuses hard links (a hard link could be a host file
the sandbox was never meant to see), checks the bytes really are an image of sane size, and
recomputes every fact it reports.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from PIL import Image

from pixelbox.runtime.errors import WorkspacePathError
from pixelbox.runtime.workspace import read_workspace_file

MAX_PIXELS = 40_000_000
"""Default decompression-bomb guard: images with more pixels are rejected before decoding."""

MAX_BYTES = 64 * 1024 * 1024
"""Default cap on an artifact file's size."""

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"P1", "PPM"),
    (b"P2", "PPM"),
    (b"P3", "PPM"),
    (b"P4", "PPM"),
    (b"P5", "PPM"),
    (b"P6", "PPM"),
)


_SHA256 = re.compile(r"[0-9a-f]{64}")

_PNG_END = b"IEND\xaeB`\x82"
"""The last 8 bytes of every complete PNG: a cheap truncation check instead of a full CRC pass."""


class ArtifactRejected(Exception):
    """An announced artifact failed a host-side check; the message says which and why.

    ``forged`` is True when the record itself cannot be the kernel's honest account (a number
    out of sequence, bytes that changed after capture, no digest): the execution is then flagged
    ``tampered``, not just told that an image was left out.
    """

    def __init__(self, message: str, *, forged: bool = False) -> None:
        super().__init__(message)
        self.forged = forged


MAX_INDEX_AHEAD = 1000
"""How far past the next expected number an artifact's index may jump. The kernel skips a number
only for a name already taken in the artifact directory (or an earlier kernel's file it adopts),
so a bigger jump is a record the kernel's store did not make."""


@dataclass
class Numbering:
    """The host's own account of artifact numbers: each must be new, after the last one, and
    plausible; a profile that names artifacts by number must name this one by its number.

    Index ``first`` and up are artifacts (below it are the task's inputs: image 0 for most
    profiles); an index at or below the last admitted one is a duplicate.
    """

    first: int
    stems: tuple[str, ...] = ()
    """Name prefixes a numbering profile gives image N (``transformed_image_`` -> ``..._N.png``)."""
    next: int | None = None

    def claim(self, record: dict[str, Any]) -> int:
        """Check ``record``'s index and name and take the number; raise :class:`ArtifactRejected`."""
        index, expected = record.get("index"), self.first if self.next is None else self.next
        if not isinstance(index, int) or isinstance(index, bool):
            raise ArtifactRejected(f"artifact record has no integer index ({type(index).__name__})", forged=True)
        if index < expected:
            taken = "an input's number" if index < self.first else "a number already used"
            raise ArtifactRejected(f"artifact record claims index {index}, {taken} (next is {expected})", forged=True)
        if index > expected + MAX_INDEX_AHEAD:
            raise ArtifactRejected(f"artifact record claims index {index}, far past the next ({expected})", forged=True)
        name = PurePosixPath(str(record.get("relpath", ""))).name
        if self.stems and not any(
            re.fullmatch(re.escape(stem) + f"{index}" + r"\.[A-Za-z0-9]+", name) for stem in self.stems
        ):
            raise ArtifactRejected(f"artifact {index} is named {name[:80]!r}, not by its number", forged=True)
        self.next = index + 1
        return index


@dataclass(frozen=True)
class Artifact:
    """One image produced by model code, as verified by the host.

    ``index`` and ``name`` follow the sandbox profile's numbering; ``relpath`` is the file's
    place in the workspace and ``host_path`` where the host reads it; ``capture`` is how it
    was produced (saved / shown / displayed / last_expression); ``asked`` is the path the code
    used (None for shown images); ``exec_index`` and ``line`` locate the producing code.
    """

    index: int
    name: str
    relpath: str
    host_path: str
    kernel_path: str
    sha256: str
    size_bytes: int
    width: int
    height: int
    mode: str
    format: str
    capture: str
    asked: str | None
    api: str
    exec_index: int | None
    line: int | None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (inverse of :meth:`from_json`)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Artifact:
        """Rebuild from :meth:`to_json` output (traces are read back without a live sandbox)."""
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})

    def read_bytes(self) -> bytes:
        """The image's bytes from ``host_path`` (the workspace while the sandbox is open, or the
        kept copy under ``SandboxOptions.artifacts_dir``)."""
        return Path(self.host_path).read_bytes()

    def __getitem__(self, key: str) -> Any:
        """Read-only item access, as when artifacts were plain dicts (``artifact["width"]``)."""
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """Like ``dict.get`` over the JSON fields."""
        return getattr(self, key) if key in self.__dataclass_fields__ else default


@dataclass(frozen=True)
class Normalization:
    """A path the kernel served or stored somewhere other than where the code asked, and why."""

    op: str
    api: str
    asked: str
    used: str
    why: str
    message: str
    exec_index: int | None
    line: int | None
    artifact: int | None = None

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Normalization:
        """Build from the kernel's ``normalization`` record."""
        return cls(
            record["op"],
            record["api"],
            record["asked"],
            record["used"],
            record["why"],
            record["message"],
            record.get("exec"),
            record.get("line"),
            record.get("artifact"),
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (inverse of :meth:`from_json`)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Normalization:
        """Rebuild from :meth:`to_json` output."""
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


def ingest_artifact(
    record: dict[str, Any],
    workspace_host_dir: Path,
    *,
    max_pixels: int = MAX_PIXELS,
    max_bytes: int = MAX_BYTES,
    keep_in: Path | None = None,
) -> Artifact:
    """Verify the artifact a kernel announced and return the host's own account of it.

    With ``keep_in``, the verified bytes (never the file itself, which the kernel could still
    change) are also written there under the artifact's name, and ``host_path`` names that copy,
    so it outlives the sandbox. Raises :class:`ArtifactRejected` if the record is malformed, the
    file is missing, is or sits behind a symlink, has other hard links, is too big, is not an image, is a
    decompression bomb, or no longer matches the digest the kernel announced.
    """
    relpath = _relpath(record)
    data, _ = _read_regular(workspace_host_dir, relpath, max_bytes)
    sha256 = hashlib.sha256(data).hexdigest()
    announced = record.get("sha256")
    digest = isinstance(announced, str) and _SHA256.fullmatch(announced) is not None
    if digest and announced != sha256:
        raise ArtifactRejected(
            f"artifact {relpath!r} changed after the kernel captured it (its sha256 is not the one announced "
            "at capture); it was not admitted",
            forged=True,
        )
    width, height, mode, fmt = inspect_image(data, relpath, max_pixels=max_pixels)
    if not digest:
        raise ArtifactRejected(f"artifact record for {relpath!r} carries no sha256 of the captured bytes", forged=True)
    try:
        artifact = Artifact(
            index=int(record["index"]),
            name=str(record["name"]),
            relpath=relpath,
            host_path=str(Path(workspace_host_dir, *PurePosixPath(relpath).parts)),
            kernel_path=str(record.get("path", "")),
            sha256=sha256,
            size_bytes=len(data),
            width=width,
            height=height,
            mode=mode,
            format=fmt,
            capture=str(record["capture"]),
            asked=record.get("asked"),
            api=str(record.get("api", "")),
            exec_index=record.get("exec"),
            line=record.get("line"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ArtifactRejected(f"artifact record for {relpath!r} is malformed: {exc!r}") from exc
    return artifact if keep_in is None else replace(artifact, host_path=str(keep(data, artifact.name, keep_in)))


def keep(data: bytes, name: str, directory: Path) -> Path:
    """Write ``data`` to ``directory/name`` (a new file; an existing one gets a numbered twin)."""
    directory.mkdir(parents=True, exist_ok=True)
    base = PurePosixPath(name).name
    if base in ("", ".", "..") or "\x00" in base or len(base.encode("utf-8", "replace")) > 128:
        base = "artifact.png"
    stem, dot, suffix = base.rpartition(".")
    for attempt in range(10_000):
        candidate = base if attempt == 0 else (f"{stem}-{attempt}.{suffix}" if dot else f"{base}-{attempt}")
        try:
            fd = os.open(directory / candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return directory / candidate
    raise ArtifactRejected(f"could not keep artifact {name!r}: {directory} holds too many files of that name")


def _read_regular(workspace_host_dir: Path, relpath: str, max_bytes: int) -> tuple[bytes, os.stat_result]:
    """Read an announced artifact's bytes through :func:`read_workspace_file` (links refused)."""
    try:
        return read_workspace_file(workspace_host_dir, relpath, what="artifact", max_bytes=max_bytes)
    except WorkspacePathError as exc:
        raise ArtifactRejected(str(exc)) from None


def inspect_image(data: bytes, label: str, *, max_pixels: int = MAX_PIXELS) -> tuple[int, int, str, str]:
    """``(width, height, mode, format)`` of image bytes, or :class:`ArtifactRejected`."""
    magic_format = next((fmt for magic, fmt in _MAGIC if data.startswith(magic)), None)
    if magic_format is None and not (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
        raise ArtifactRejected(f"artifact {label!r} is not an image (unrecognized leading bytes {data[:8]!r})")
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
                if width * height > max_pixels:
                    raise ArtifactRejected(
                        f"artifact {label!r} is {width}x{height} = {width * height:,} pixels, over the "
                        f"{max_pixels:,} pixel limit (decompression-bomb guard)"
                    )
                mode, fmt = image.mode, image.format or magic_format or "UNKNOWN"
                if fmt == "PNG" and not data.endswith(_PNG_END):
                    raise ArtifactRejected(f"artifact {label!r} is a truncated PNG (no IEND chunk at its end)")
                if fmt != "PNG":
                    image.verify()
        except ArtifactRejected:
            raise
        except Exception as exc:
            raise ArtifactRejected(f"artifact {label!r} is not a valid image: {exc}") from exc
    return width, height, mode, fmt


def _relpath(record: dict[str, Any]) -> str:
    relpath = record.get("relpath")
    if not isinstance(relpath, str) or not relpath or "\x00" in relpath:
        raise ArtifactRejected(f"artifact record has no usable 'relpath': {relpath!r}")
    parts = PurePosixPath(relpath).parts
    if relpath.startswith("/") or any(part in ("..", ".") for part in parts):
        raise ArtifactRejected(f"artifact path {relpath!r} must be relative to the workspace, without '..'")
    return relpath
