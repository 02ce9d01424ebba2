"""Episode traces (append-only, fsync'd JSONL), their summaries, and run directories that resume.

One line per record: ``{"v": 1, "seq": N, "t": UNIX_SECONDS, "kind": KIND, ...}``; the format is
specified in docs/traces.md. A run directory holds ``run.json`` (the configuration) and
``episodes/<task_id>.jsonl`` + ``episodes/<task_id>.summary.json``. An episode counts as done when
its trace has an ``episode_end`` record; anything else is redone from scratch on resume, its
partial trace kept aside as ``<task_id>.jsonl.partial-N`` (so are finished traces whose status the
caller asks to retry, e.g. ``agent_error``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

TRACE_VERSION = 1
RECORD_KINDS = ("episode_start", "turn", "message", "action", "observation", "budget_hit", "error", "episode_end")
VOLATILE_CONFIG_KEYS = frozenset({"concurrency", "shard", "resume", "progress"})
"""Settings that may change between a run and its resumption without making the results incomparable."""


class TraceFormatError(ValueError):
    """A trace line other than the last is not a JSON record; the message names the file and line."""


class RunConfigMismatch(ValueError):
    """A run directory is being resumed with a different configuration."""


# -- writing --------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    for method in ("to_dict", "to_json"):
        if callable(getattr(value, method, None)) and not isinstance(value, type):
            result = getattr(value, method)()
            if not isinstance(result, str):
                return result
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return {"bytes": len(value), "sha256": hashlib.sha256(value).hexdigest()}
    return str(value)


def encode_record(record: Mapping[str, Any]) -> str:
    """One record as a JSON line (objects with ``to_dict``, dataclasses, paths and bytes are converted).

    Text stays readable (no ASCII escaping) unless it holds a lone surrogate, which an endpoint
    may legally send in JSON but UTF-8 cannot encode: then the line is escaped, so the record is
    written whole and reads back as the same string.
    """
    line = json.dumps(record, ensure_ascii=False, default=_jsonable)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(record, ensure_ascii=True, default=_jsonable)
    return line + "\n"


class TraceWriter:
    """Appends records to a new episode trace, one fsync'd line each.

    Refuses to open an existing file: traces are never overwritten (resume through
    :class:`RunDirectory`, which moves partial traces aside first).
    """

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time, fsync: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except FileExistsError:
            raise FileExistsError(
                f"trace {self.path} already exists; traces are append-only and never reused"
            ) from None
        self._clock = clock
        self._fsync = fsync
        self.seq = 0
        if fsync:
            _fsync_dir(self.path.parent)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def write(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append one record and make it durable; returns the record as written."""
        if kind not in RECORD_KINDS:
            raise ValueError(f"unknown trace record kind {kind!r}; known: {', '.join(RECORD_KINDS)}")
        record = {"v": TRACE_VERSION, "seq": self.seq, "t": round(self._clock(), 6), "kind": kind, **fields}
        return self._append([encode_record(record)])[0]

    def append_records(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append records written elsewhere (a :class:`TraceBuffer` on another machine), as they are.

        They keep their ``seq`` and ``t``; each must be a known kind numbered on from this trace, so
        the file reads exactly as if it had been written here. One fsync for the lot.
        """
        for offset, record in enumerate(records):
            if record.get("kind") not in RECORD_KINDS or record.get("seq") != self.seq + offset:
                raise ValueError(
                    f"record {offset} for {self.path} is kind {record.get('kind')!r} with seq {record.get('seq')!r}; "
                    f"expected a known kind with seq {self.seq + offset}"
                )
        self._append([encode_record(record) for record in records])

    def _append(self, lines: Sequence[str]) -> list[dict[str, Any]]:
        if self._fd is None:
            raise ValueError(f"trace {self.path} is closed")
        data = "".join(lines).encode("utf-8")
        os.write(self._fd, data)
        if self._fsync:
            os.fsync(self._fd)
        self.seq += len(lines)
        return [json.loads(line) for line in lines]

    def episode_start(self, *, task: Any, config: Any, model: str, mode: str, runtime: Any = None) -> dict[str, Any]:
        """The first record: what is being run, with what, on what."""
        return self.write("episode_start", task=task, config=config, model=model, mode=mode, runtime=runtime)

    def turn(self, *, round: int, messages: Mapping[str, Any], agent_turn: Any) -> dict[str, Any]:
        """A model turn: a summary of the messages sent and the whole :class:`AgentTurn`."""
        data = _jsonable(agent_turn)
        return self.write("turn", round=round, messages=dict(messages), **data)

    def action(self, *, round: int, action_id: str, type: str, name: str, **detail: Any) -> dict[str, Any]:
        """An action the harness takes for the model: ``type`` is ``code`` or ``tool``."""
        return self.write("action", round=round, action_id=action_id, type=type, name=name, **detail)

    def observation(
        self, *, action_id: str, execution: Any = None, tool_result: Any = None, **detail: Any
    ) -> dict[str, Any]:
        """What an action gave back: an ``Execution`` (code) and/or a tool result."""
        return self.write("observation", action_id=action_id, execution=execution, tool_result=tool_result, **detail)

    def budget_hit(self, hit: Any) -> dict[str, Any]:
        """A budget limit was reached (a :class:`BudgetHit`)."""
        return self.write("budget_hit", **_jsonable(hit))

    def error(self, *, where: str, message: str, **detail: Any) -> dict[str, Any]:
        """A failure of the harness, agent or runtime (not of the model's code, which is an observation)."""
        return self.write("error", where=where, message=message, **detail)

    def episode_end(
        self,
        *,
        status: str,
        reason: str | None = None,
        answer: str | None = None,
        totals: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The last record; its presence is what makes an episode finished."""
        return self.write("episode_end", status=status, reason=reason, answer=answer, totals=dict(totals or {}))


class TraceBuffer(TraceWriter):
    """A trace kept in memory: what an episode played on another machine writes, for the driver to append.

    Same records, numbering and clock as :class:`TraceWriter`; :attr:`records` holds them in order.
    """

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self._clock = clock
        self._fsync = False
        self._fd = None
        self._open = True
        self.seq = 0
        self.records: list[dict[str, Any]] = []

    def close(self) -> None:
        """Refuse further records (idempotent)."""
        self._open = False

    def _append(self, lines: Sequence[str]) -> list[dict[str, Any]]:
        if not self._open:
            raise ValueError(f"trace {self.path} is closed")
        written = [json.loads(line) for line in lines]
        self.records.extend(written)
        self.seq += len(lines)
        return written


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- reading ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trace:
    """A trace as read back. ``torn`` is true when an incomplete last line (a write cut short) was dropped."""

    path: Path
    records: list[dict[str, Any]]
    torn: bool = False

    @property
    def finished(self) -> bool:
        """Whether the episode recorded its end."""
        return any(r.get("kind") == "episode_end" for r in self.records)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """The records of one kind, in order."""
        return [r for r in self.records if r.get("kind") == kind]


def read_trace(path: str | Path) -> Trace:
    """Read a trace, dropping an incomplete last line; a bad line elsewhere is a :class:`TraceFormatError`."""
    location = Path(path)
    lines = location.read_bytes().split(b"\n")
    records, torn = [], False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if number == len(lines):
                torn = True
                break
            raise TraceFormatError(f"{location}:{number}: not a JSON record ({exc})") from exc
        if not isinstance(record, dict) or "kind" not in record:
            raise TraceFormatError(f"{location}:{number}: expected an object with 'kind'")
        records.append(record)
    return Trace(location, records, torn)


def summarize(trace: Trace) -> dict[str, Any]:
    """The summary of one episode: outcome, counts, token usage and timing."""
    start = next(iter(trace.of_kind("episode_start")), {})
    end: dict[str, Any] | None = next(iter(trace.of_kind("episode_end")), None)
    executions = [o["execution"] for o in trace.of_kind("observation") if isinstance(o.get("execution"), dict)]
    found = start.get("task")
    task: dict[str, Any] = found if isinstance(found, dict) else {}
    hits = trace.of_kind("budget_hit")
    return {
        "v": TRACE_VERSION,
        "task_id": task.get("task_id"),
        "model": start.get("model"),
        "mode": start.get("mode"),
        "finished": end is not None,
        "status": end["status"] if end else "unfinished",
        "reason": end.get("reason") if end else None,
        "answer": end.get("answer") if end else None,
        "rounds": len(trace.of_kind("turn")),
        "actions": dict(Counter(str(a.get("type")) for a in trace.of_kind("action"))),
        "executions": dict(Counter(str(e.get("status")) for e in executions)),
        "artifacts": sum(len(e.get("artifacts") or []) for e in executions),
        "events": sum(len(e.get("events") or []) for e in executions),
        "errors": len(trace.of_kind("error")),
        "budget_hit": hits[-1].get("limit") if hits else None,
        "usage": _usage_totals(trace.of_kind("turn")),
        "model_latency": round(sum(float(t.get("latency") or 0) for t in trace.of_kind("turn")), 3),
        "duration": _duration(trace),
        "totals": end.get("totals", {}) if end else {},
        "torn": trace.torn,
    }


def _usage_totals(turns: Iterable[dict[str, Any]]) -> dict[str, int | None]:
    totals: dict[str, int | None] = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None}
    for turn in turns:
        usage = turn.get("usage") or {}
        for key in totals:
            value = usage.get(key)
            if isinstance(value, int):
                totals[key] = (totals[key] or 0) + value
    return totals


def _duration(trace: Trace) -> float | None:
    times = [r["t"] for r in trace.records if isinstance(r.get("t"), (int, float))]
    return round(times[-1] - times[0], 3) if times else None


# -- run directories ---------------------------------------------------------------------------------


def find_traces(run_dir: str | Path) -> list[Path]:
    """Finished or not, every ``episodes/<task_id>.jsonl`` under ``run_dir`` (a run directory or a
    parent of several), in a stable order."""
    return sorted(p for p in Path(run_dir).rglob("episodes/*.jsonl") if p.is_file())


class HasTaskId(Protocol):
    """Anything with a ``task_id`` (a :class:`~pixelbox.harness.tasks.Task`)."""

    @property
    def task_id(self) -> str: ...


T = TypeVar("T", bound=HasTaskId)


class RunDirectory:
    """``RUN/run.json`` + ``RUN/episodes/``: where a run's traces live, and what is left to do on resume."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.episodes = self.root / "episodes"

    @classmethod
    def open(cls, root: str | Path, config: Mapping[str, Any]) -> RunDirectory:
        """Create the run directory, or reopen it for resuming when its ``run.json`` agrees with ``config``.

        Keys in :data:`VOLATILE_CONFIG_KEYS` may differ; any other difference raises
        :class:`RunConfigMismatch` naming the keys (use a new output directory instead).
        """
        run = cls(root)
        run.episodes.mkdir(parents=True, exist_ok=True)
        saved = run.config()
        if saved is None:
            _atomic_write_json(run.root / "run.json", {"v": TRACE_VERSION, "config": dict(config)})
        else:
            _check_same_config(run.root / "run.json", saved, dict(config))
        return run

    def config(self) -> dict[str, Any] | None:
        """The configuration in ``run.json`` (None before the run was created)."""
        path = self.root / "run.json"
        if not path.is_file():
            return None
        return dict(json.loads(path.read_text(encoding="utf-8")).get("config") or {})

    def trace_path(self, task_id: str) -> Path:
        """``episodes/<task_id>.jsonl``."""
        return self.episodes / f"{task_id}.jsonl"

    def summary_path(self, task_id: str) -> Path:
        """``episodes/<task_id>.summary.json``."""
        return self.episodes / f"{task_id}.summary.json"

    def images_dir(self, task_id: str) -> Path:
        """``episodes/<task_id>.images/``: host copies of the images the episode produced."""
        return self.episodes / f"{task_id}.images"

    def is_finished(self, task_id: str) -> bool:
        """Whether the task's trace exists and has an ``episode_end``."""
        return self.end_status(task_id) is not None

    def end_status(self, task_id: str) -> str | None:
        """The ``status`` of the task's ``episode_end`` (None when there is no finished trace)."""
        path = self.trace_path(task_id)
        if not path.is_file():
            return None
        ends = read_trace(path).of_kind("episode_end")
        return str(ends[-1].get("status")) if ends else None

    def needs_run(self, task_id: str, retry_statuses: Collection[str] = ()) -> bool:
        """Whether :meth:`pending` would run the task: no finished trace, or one ending in ``retry_statuses``."""
        status = self.end_status(task_id)
        return status is None or status in retry_statuses

    def pending(self, tasks: Sequence[T], retry_statuses: Collection[str] = ()) -> list[T]:
        """The tasks still to run, in order. Partial traces, and finished ones whose status is in
        ``retry_statuses``, are moved aside (``.partial-N``); missing summaries of finished episodes are
        written from their traces."""
        todo = []
        for task in tasks:
            if not self.needs_run(task.task_id, retry_statuses):
                if not self.summary_path(task.task_id).is_file():
                    self.finish(task.task_id)
                continue
            self.set_aside(task.task_id)
            todo.append(task)
        return todo

    def start_episode(self, task_id: str, **writer_options: Any) -> TraceWriter:
        """A writer for a new trace of ``task_id`` (fails if one exists: call :meth:`pending` first)."""
        return TraceWriter(self.trace_path(task_id), **writer_options)

    def finish(self, task_id: str) -> dict[str, Any]:
        """Summarize the task's trace into ``<task_id>.summary.json`` and return the summary."""
        summary = summarize(read_trace(self.trace_path(task_id)))
        _atomic_write_json(self.summary_path(task_id), summary)
        return summary

    def summaries(self) -> list[dict[str, Any]]:
        """Every episode summary in the run, sorted by task id."""
        paths = sorted(self.episodes.glob("*.summary.json"))
        return [json.loads(p.read_text(encoding="utf-8")) for p in paths]

    def partials(self, task_id: str) -> list[Path]:
        """Partial traces set aside for ``task_id``, oldest first."""
        found = self.episodes.glob(f"{task_id}.jsonl.partial-*")
        return sorted(found, key=lambda p: int(p.name.rsplit("-", 1)[1]))

    def set_aside(self, task_id: str) -> None:
        """Move the task's trace and images (if any) aside as ``.partial-N`` and drop its summary."""
        trace = self.trace_path(task_id)
        images = self.images_dir(task_id)
        moving = [p for p in (trace, images) if p.exists()]
        if moving:
            number = len(self.partials(task_id)) + 1
            while any(p.with_name(f"{p.name}.partial-{number}").exists() for p in (trace, images)):
                number += 1
            for path in moving:
                path.rename(path.with_name(f"{path.name}.partial-{number}"))
            _fsync_dir(self.episodes)
        self.summary_path(task_id).unlink(missing_ok=True)


def _check_same_config(path: Path, saved: dict[str, Any], config: dict[str, Any]) -> None:
    keys = sorted(
        k for k in set(saved) | set(config) if k not in VOLATILE_CONFIG_KEYS and saved.get(k) != config.get(k)
    )
    if keys:
        raise RunConfigMismatch(
            f"{path} was written with a different configuration ({', '.join(keys)} differ); "
            "resume with the same settings or choose a new output directory"
        )


def _atomic_write_json(path: Path, value: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(value, out, ensure_ascii=False, indent=2, default=_jsonable)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- sharding -----------------------------------------------------------------------------------------


SHARD_HELP = (
    "a shard is K/N: split the tasks into N parts (by a stable hash of the task id) and run part K, "
    "numbered from 0, so 0 <= K < N (e.g. 0/4, 1/4, 2/4 and 3/4 together cover every task)"
)


def parse_shard(text: str) -> tuple[int, int]:
    """``"k/n"`` -> ``(k, n)`` with ``0 <= k < n``; a :class:`ValueError` explaining shards otherwise."""
    try:
        index_text, count_text = text.split("/")
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise ValueError(f"bad shard {text!r}: {SHARD_HELP}") from None
    if count < 1 or not 0 <= index < count:
        last = f"; with N = {count} the shards are 0/{count} to {count - 1}/{count}" if count >= 1 else ""
        raise ValueError(f"bad shard {text!r}: {SHARD_HELP}{last}")
    return index, count


def shard_of(task_id: str, count: int) -> int:
    """The shard a task belongs to: a stable hash of its id (same on every machine and run)."""
    return int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "big") % count


def select_shard(tasks: Sequence[T], index: int, count: int) -> list[T]:
    """The tasks of shard ``index`` of ``count``, in their original order."""
    return [t for t in tasks if shard_of(t.task_id, count) == index]
