"""Run metadata for reports: which model at which endpoint, on which backend and runtime, which suite,
when, with which pixelbox version.

Each episode carries its own facts (:func:`episode_facts`, read from the trace's ``episode_start`` and
the run's ``run.json``), because a run directory may hold several runs (the demo scores ``gen`` and
``atm`` together) and ``backend="auto"`` is decided per sandbox. :func:`run_meta` gathers them over
the episodes of a report: one value, or every distinct value, per field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pixelbox.harness.suites import DEFAULT_SUITE

FIELDS = (
    ("model", "model"),
    ("endpoint", "endpoint"),
    ("backend", "backend"),
    ("runtime", "runtime"),
    ("suite", "suite"),
    ("date", "date"),
    ("pixelbox", "pixelbox version"),
)
"""The metadata every report page shows, in order: ``(key, label)``."""


def episode_facts(start: dict[str, Any], run_root: Path) -> dict[str, Any]:
    """What ran one episode, from its ``episode_start`` record and the run's ``run.json``."""
    runtime, agent = object_at(start, "runtime"), object_at(start, "agent")
    config = _run_config(run_root)
    sandbox = object_at(config, "sandbox")
    backend = runtime.get("backend") or sandbox.get("backend")
    container_runtime = runtime.get("runtime") if runtime.get("backend") else sandbox.get("runtime")
    return {
        "endpoint": agent.get("endpoint"),
        "backend": backend,
        "runtime": container_runtime if backend == "docker" else ("none" if backend == "local" else None),
        "suite": str(config.get("suite") or DEFAULT_SUITE),
        "started": start.get("t"),
        "pixelbox": start.get("pixelbox"),
    }


def object_at(record: dict[str, Any], key: str) -> dict[str, Any]:
    """``record[key]`` when it is a JSON object, else an empty one (records from older or foreign writers)."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def _run_config(run_root: Path) -> dict[str, Any]:
    try:
        raw = json.loads((run_root / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    config = raw.get("config") if isinstance(raw, dict) else None
    return config if isinstance(config, dict) else {}


def run_meta(records: Iterable[dict[str, Any]], judges: Iterable[str] = ()) -> dict[str, str]:
    """The report's metadata (:data:`FIELDS`, plus ``judges``) over scored records ``{"score", "episode"}``.

    A field with several values lists them; one never recorded is ``n/a``.
    """
    values: dict[str, list[str]] = {key: [] for key, _ in FIELDS}
    times: list[float] = []
    for record in records:
        episode = record.get("episode") or {}
        facts = episode.get("facts") or {}
        _add(values["model"], (record.get("score") or {}).get("model") or episode.get("model"))
        for key in ("endpoint", "backend", "runtime", "suite", "pixelbox"):
            _add(values[key], facts.get(key))
        if isinstance(facts.get("started"), (int, float)):
            times.append(float(facts["started"]))
    if times:
        values["date"] = [_span(min(times), max(times))]
    meta = {key: _listed(found) for key, found in values.items()}
    judged = ", ".join(judges)
    if judged:
        meta["judges"] = judged
    return meta


def _listed(found: list[str], shown: int = 3) -> str:
    if not found:
        return "n/a"
    more = f" and {len(found) - shown} more" if len(found) > shown else ""
    return ", ".join(found[:shown]) + more


def _add(found: list[str], value: Any) -> None:
    if value is not None and str(value) not in found:
        found.append(str(value))


def _span(first: float, last: float) -> str:
    """``2025-06-01 12:00 UTC``, ``2025-06-01 12:00-12:40 UTC`` or ``2025-06-01 23:50 UTC to 2025-06-02 00:10 UTC``."""
    start, end = (datetime.fromtimestamp(t, tz=timezone.utc) for t in (first, last))
    head = start.strftime("%Y-%m-%d %H:%M")
    if start.strftime("%Y-%m-%d %H:%M") == end.strftime("%Y-%m-%d %H:%M"):
        return f"{head} UTC"
    if start.date() == end.date():
        return f"{head}-{end.strftime('%H:%M')} UTC"
    return f"{head} UTC to {end.strftime('%Y-%m-%d %H:%M')} UTC"


def meta_labels() -> dict[str, str]:
    """Field key -> label, judges included."""
    return {**dict(FIELDS), "judges": "judges"}
