"""Keep the restore cache within a byte budget, least recently used first, without breaking any process.

The cache (:data:`pixelbox.runtime.backends.restore.CACHE`) holds an export of the kernel image per
image id (``rootfs/<id12>``, 700-750 MB each, one more per image rebuild), exports set aside as damaged
(``rootfs/<id12>.damaged.*``), half-made exports (``rootfs/<id12>.<pid>.<random>``) and each process's
checkpoints (``templates/pbx-<owner>-<key>``). :func:`prune` removes, in this order:

1. what nobody can use: damaged exports (those set aside once no process holds their export's lock),
   half-made exports and checkpoints of dead processes, and what an interrupted prune left in
   ``trash/`` (always, whatever the budget);
2. while the cache is over its budget, exports of images no longer in Docker (or left untagged by a
   rebuild), then the other exports, least recently used first.

It never removes an entry a process holds (:mod:`.cache_locks`: the shared lock every user holds; the
pruner's exclusive lock is taken without waiting), the current kernel image's export, or anything a
mount reaches into or shows elsewhere (a bind of an export, as a killed ``runc restore`` leaves at
``<state>/criu-root``: see :func:`pixelbox.runtime.mounts.mounts_exposing`); those it refuses and
reports. An entry is renamed into ``trash/`` under its exclusive lock, then deleted without following
symbolic links or entering another file system, so no process ever finds a half-deleted entry.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pixelbox.runtime.backends import cache_locks
from pixelbox.runtime.mounts import mounts_exposing
from pixelbox.runtime.workspace import owner_alive, owner_of

logger = logging.getLogger(__name__)
BUDGET_VARIABLE = "PIXELBOX_RESTORE_CACHE_BUDGET"
"""Host environment variable: the restore cache's byte budget (``4G``, ``500M``, or bytes)."""
DEFAULT_BUDGET = 4 * 1024**3
"""About five exports of the kernel image: room for the images of a few checkouts side by side."""
TRASH = "trash"
EXPORT = re.compile(r"^[0-9a-f]{12}$")
SET_ASIDE = re.compile(r"^[0-9a-f]{12}\.damaged\.")
PARTIAL = re.compile(r"^[0-9a-f]{12}\.(\d+)\.[0-9a-f]+$")
UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
GARBAGE, UNUSED_IMAGE, LEAST_RECENT = 0, 1, 2
"""Ranks: removed in this order; garbage whatever the budget, the others only while over it."""


def parse_size(text: str) -> int:
    """Bytes from ``4G``, ``500M``, ``1.5GiB`` or a plain number; ValueError naming the format."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if found is None:
        raise ValueError(f"not a size: {text!r} (write bytes, or a number with K, M, G or T, e.g. 4G)")
    return int(float(found.group(1)) * UNITS[found.group(2).upper()])


def budget() -> int:
    """The configured budget: ``PIXELBOX_RESTORE_CACHE_BUDGET``, else :data:`DEFAULT_BUDGET`."""
    configured = os.environ.get(BUDGET_VARIABLE, "").strip()
    try:
        return parse_size(configured) if configured else DEFAULT_BUDGET
    except ValueError as exc:
        raise ValueError(f"{BUDGET_VARIABLE}: {exc}") from None


def human(size: int) -> str:
    """``712.4 MiB``: a byte count for people, in the binary units budgets are written in (``4G``)."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        scale = UNITS[unit[0]]
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


@dataclass
class Entry:
    """One entry of the cache, and what the pruner makes of it."""

    kind: str
    name: str
    size: int
    last_used: float
    rank: int | None
    """Its :data:`GARBAGE`.. rank, or None: never removed (``why`` says why)."""
    why: str
    locked: bool = True
    """Whether users hold its lock (exports and checkpoints); garbage nobody can use has none."""
    guard: str = ""
    """The name of the entry whose lock covers this one, if not its own: a damaged export set aside is
    covered by its export's lock (the processes whose containers may still run on it held that lock)."""

    def label(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass
class PruneReport:
    """What one prune removed, kept and refused, and the cache's size before and after."""

    root: str
    budget: int
    dry_run: bool = False
    """Only say what would be removed (entries in use and mounted ones are still found out)."""
    before: int = 0
    after: int = 0
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The report for people: one line per entry, then the totals."""
        verb, freed = ("would prune", "would free") if self.dry_run else ("pruned", "freed")
        return [
            *(f"{verb} {line}" for line in self.removed),
            *(f"kept {line}" for line in self.kept),
            *(f"REFUSED {line}" for line in self.refused),
            *self.notes,
            f"restore cache {self.root}: {human(self.before)} -> {human(self.after)} "
            f"(budget {human(self.budget)}; {freed} {human(self.before - self.after)})",
        ]


class CrossesMount(Exception):
    """A directory of the tree is on another file system (a mount): nothing is removed below it."""


def _walk(top: int, device: int, remove: bool, seen: set[int], where: str) -> int:
    """Bytes of the tree open at ``top`` (each inode once), removing it bottom-up if ``remove``; never
    follows a symbolic link or enters a directory of another device (skipped when measuring)."""
    total = 0
    with os.scandir(top) as found:
        entries = list(found)
    for entry in entries:
        info = entry.stat(follow_symlinks=False)
        if info.st_ino not in seen:
            seen.add(info.st_ino)
            total += info.st_blocks * 512
        if entry.is_dir(follow_symlinks=False):
            if info.st_dev != device and remove:
                raise CrossesMount(f"{where}/{entry.name}")
            if info.st_dev != device:
                continue
            child = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top)
            try:
                total += _walk(child, device, remove, seen, f"{where}/{entry.name}")
            finally:
                os.close(child)
            if remove:
                os.rmdir(entry.name, dir_fd=top)
        elif remove:
            os.unlink(entry.name, dir_fd=top)
    return total


def tree_bytes(path: Path, remove: bool = False) -> int:
    """Disk bytes of the tree at ``path`` (0 if missing); with ``remove``, also delete it (then the
    directory itself), on its own file system only (CrossesMount otherwise)."""
    try:
        top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0
    try:
        info = os.fstat(top)
        total = info.st_blocks * 512 + _walk(top, info.st_dev, remove, {info.st_ino}, str(path))
    finally:
        os.close(top)
    if remove:
        os.rmdir(path)
    return total


def _pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def exports_of_running_templates(root: Path) -> dict[str, int]:
    """Export name -> pid of a live process whose checkpoint runs on it (its template's OCI spec names
    the export as its root): in use whether or not that process holds locks (one running code from
    before they were taken does not)."""
    named: dict[str, int] = {}
    for spec in (root / "templates").glob("pbx-*/bundle/config.json"):
        owner = owner_of(f"/{spec.parent.parent.name}-")
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            export = Path(json.loads(spec.read_text())["root"]["path"])
            if owner is not None and export.parent == root / "rootfs" and owner_alive(owner):
                named[export.name] = owner.pid
    return named


def _export(root: Path, name: str, keep: set[str]) -> Entry:
    """An export: its size (measured once, then recorded), last use and rank."""
    size = cache_locks.recorded_size(root, "rootfs", name)
    if size is None:
        size = tree_bytes(root / "rootfs" / name)
        cache_locks.record_size(root, "rootfs", name, size)
    used = cache_locks.last_used(root, "rootfs", name)
    entry = Entry("rootfs", name, size, used, LEAST_RECENT, "least recently used")
    if not (root / "rootfs" / name / "usr" / "bin").is_dir():
        entry.rank, entry.why = GARBAGE, "damaged export (no usr/bin)"
    elif name in keep:
        entry.rank, entry.why = None, "current kernel image"
    return entry


def _in_use(entries: list[Entry], named: dict[str, int]) -> None:
    """Keep the exports the checkpoints of running processes are made from (see
    :func:`exports_of_running_templates`), and the damaged ones set aside from them (their containers
    may still run on the set-aside tree)."""
    for entry in entries:
        export = entry.guard or entry.name
        if entry.kind == "rootfs" and export in named and entry.rank is not None:
            entry.rank, entry.why = None, f"in use by the checkpoints of running process {named[export]}"


def _other(root: Path, kind: str, name: str) -> Entry:
    """Anything but a finished export: set-aside and half-made exports, checkpoints, trash."""
    path = root / kind / name
    entry = Entry(kind, name, 0, cache_locks.last_used(root, kind, name), None, "", locked=kind == "templates")
    partial = PARTIAL.match(name)
    owner = owner_of(f"/{name}-") if kind == "templates" else None
    trash_pid = int(name.split(".")[0]) if kind == TRASH and name.split(".")[0].isdigit() else None
    if kind == "rootfs" and SET_ASIDE.match(name):
        entry.rank, entry.why, entry.locked, entry.guard = GARBAGE, "damaged export set aside", True, name[:12]
    elif partial is not None and not _pid_alive(int(partial.group(1))):
        entry.rank, entry.why = GARBAGE, "half-made export of a dead process"
    elif partial is not None:
        entry.why = f"export in progress (pid {partial.group(1)})"
    elif owner is not None and not owner_alive(owner):
        entry.rank, entry.why = GARBAGE, f"checkpoint of a dead process (pid {owner.pid})"
    elif owner is not None:
        entry.why = f"checkpoint of running process {owner.pid}"
    elif trash_pid is not None and not _pid_alive(trash_pid):
        entry.rank, entry.why = GARBAGE, "left by an interrupted prune"
    else:
        entry.why = "being removed by another prune" if kind == TRASH else "not a cache entry pixelbox knows"
    if entry.rank is not None or kind == "templates":
        entry.size = tree_bytes(path)
    return entry


def entries(root: Path, keep: set[str], notes: list[str] | None = None) -> list[Entry]:
    """Every entry of the cache at ``root``, measured and ranked (exports by last use alone). One that
    cannot be measured (replaced meanwhile by a file or a link, or not readable) is left out, so left as
    it is, and said in ``notes``."""
    found = []
    for kind in ("rootfs", "templates", TRASH):
        folder = root / kind
        for name in sorted(os.listdir(folder)) if folder.is_dir() else []:
            export = kind == "rootfs" and EXPORT.match(name)
            try:
                found.append(_export(root, name, keep) if export else _other(root, kind, name))
            except FileNotFoundError:  # renamed or removed meanwhile by its user
                continue
            except OSError as exc:
                if notes is not None:
                    notes.append(f"could not measure {kind}/{name}; left as it is: {exc}")
    return found


def docker_images(client: Any) -> set[str]:
    """Ids (12 hex digits) of the tagged images of a Docker client: an image a rebuild left untagged is
    no longer reachable by its name, so its export is as good as unused."""
    return {image.id.split(":")[-1][:12] for image in client.images.list() if image.tags}


@contextlib.contextmanager
def _only_pruner(root: Path) -> Iterator[bool]:
    """One prune at a time per cache (yields False if another is running)."""
    (root / cache_locks.LOCKS).mkdir(parents=True, exist_ok=True)
    fd = os.open(root / cache_locks.LOCKS / "prune", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def prune(
    root: Path,
    limit: int,
    keep: set[str] | None = None,
    images: Callable[[], set[str] | None] = lambda: None,
    dry_run: bool = False,
) -> PruneReport:
    """Bring the cache at ``root`` within ``limit`` bytes (see the module's docstring for the order).

    ``keep``: image ids (12 hex digits) whose exports stay whatever the budget; ``images``: the ids of
    images present (and tagged) in Docker, None if unknown; asked only when the cache is over budget."""
    report = PruneReport(str(root), limit, dry_run)
    with _only_pruner(root) as alone:
        if not alone:
            report.notes.append("another prune of this cache is running; nothing done")
            return report
        _prune(root, limit, keep or set(), images, report)
    return report


def _prune(root: Path, limit: int, keep: set[str], images: Callable[[], set[str] | None], report: PruneReport) -> None:
    listed = entries(root, keep, report.notes)
    _in_use(listed, exports_of_running_templates(root))
    report.before = report.after = sum(entry.size for entry in listed)
    if report.before > limit:  # Docker is asked only when exports may have to go
        present = _asked(images, report)
        for entry in listed if present is not None else []:
            if entry.kind == "rootfs" and entry.rank == LEAST_RECENT and entry.name not in (present or ()):
                entry.rank, entry.why = UNUSED_IMAGE, "image no longer in Docker (or untagged)"
    for entry in sorted(listed, key=lambda e: (e.rank is None, e.rank or 0, e.last_used)):
        if entry.rank is None or (entry.rank != GARBAGE and report.after <= limit):
            reason = entry.why if entry.rank is None else "within the budget"
            report.kept.append(f"{entry.label()} ({human(entry.size)}): {reason}")
            continue
        _remove(root, entry, report)
    if not report.dry_run:
        _forget_stale_locks(root)


def _asked(images: Callable[[], set[str] | None], report: PruneReport) -> set[str] | None:
    """Docker's images, or None (noted in the report) when they are unknown or cannot be read."""
    try:
        present = images()
    except Exception as exc:  # Docker unreachable or failing: exports are ranked by last use alone
        report.notes.append(f"Docker's images could not be read ({exc.__class__.__name__}: {exc})")
        return None
    if present is None:
        report.notes.append("Docker's images were not consulted: exports were ranked by last use only")
    return present


def prune_soon(root: Path, keep: set[str], images: Callable[[], set[str] | None]) -> threading.Thread:
    """:func:`prune` to the configured :func:`budget` in a background thread, as done after a new export
    or checkpoint (cheap while under budget); what it removed is logged, what it refused as a warning."""

    def run() -> None:
        try:
            report = prune(root, budget(), keep, images)
        except (OSError, ValueError) as exc:
            logger.warning("pruning the restore cache %s failed: %s", root, exc)
            return
        if report.removed or report.refused:  # refusals need a person (a mount left behind): warned
            logger.log(logging.WARNING if report.refused else logging.INFO, "%s", "\n".join(report.lines()))

    thread = threading.Thread(target=run, name="pbx-cache-prune", daemon=True)
    thread.start()
    return thread


def _remove(root: Path, entry: Entry, report: PruneReport) -> None:
    """Move the entry into the trash (:func:`_claim`), then delete it there."""
    trash = _claim(root, entry, report)
    if trash is None:
        return
    try:
        tree_bytes(trash, remove=True)
    except (CrossesMount, OSError) as exc:  # what was deleted before is not counted
        report.refused.append(f"{entry.label()}: stopped deleting it in {trash}: {exc}")
        return
    report.after -= entry.size
    report.removed.append(f"{entry.label()} ({human(entry.size)}): {entry.why}")


def _claim(root: Path, entry: Entry, report: PruneReport) -> Path | None:
    """Under the entry's exclusive lock, unless a process holds it or a mount reaches it (both reported),
    rename it into ``trash/`` and drop its lock file; where it is now (None: left, or a dry run)."""
    path = root / entry.kind / entry.name
    lock = entry.guard or entry.name
    with cache_locks.exclusive(root, entry.kind, lock) if entry.locked else contextlib.nullcontext(True) as free:
        if not free:
            whose = f"the lock of {entry.kind}/{lock}: its containers may run on it" if entry.guard else "its lock"
            report.kept.append(f"{entry.label()} ({human(entry.size)}): in use (a process holds {whose})")
            return None
        exposed = mounts_exposing(path)
        if exposed:
            report.refused.append(
                f"{entry.label()}: mounted at {', '.join(exposed)}; left as it is (`pixelbox cleanup` unmounts "
                "what a stopped restore left once its sandbox is gone; then prune again)"
            )
            return None
        if report.dry_run:
            report.after -= entry.size
            report.removed.append(f"{entry.label()} ({human(entry.size)}): {entry.why}")
            return None
        trash = path
        if entry.kind != TRASH:
            trash = root / TRASH / f"{os.getpid()}.{uuid.uuid4().hex[:6]}.{entry.kind}.{entry.name}"
            trash.parent.mkdir(exist_ok=True)
            try:
                path.rename(trash)
            except FileNotFoundError:  # gone meanwhile (its user set it aside)
                return None
        if entry.locked and not entry.guard:
            cache_locks.forget(root, entry.kind, entry.name)
        return trash


def _forget_stale_locks(root: Path) -> None:
    """Remove lock files (and recorded sizes) of entries that are gone (each process's checkpoints leave one)."""
    folder = root / cache_locks.LOCKS
    for path in [*folder.glob("*.lock"), *folder.glob("*.size")] if folder.is_dir() else []:
        kind, _, rest = path.name.partition(".")
        name = rest.removesuffix(path.suffix)
        if not (root / kind / name).exists():
            with cache_locks.exclusive(root, kind, name) as free:
                if free and not (root / kind / name).exists():
                    cache_locks.forget(root, kind, name)
