"""Run directories made by the real runner: demo tasks, replayed solutions, local sandboxes.

``with_search`` inserts a ``google_search`` call after the first turn of a recording, answered
from a pre-recorded web cache (replay mode: offline), so chronological order across searches,
code blocks and operations can be checked in the export.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pixelbox.harness.agents.replay import ReplayAgent
from pixelbox.harness.demo import RECORDINGS, write_demo
from pixelbox.harness.runner import RunSummary, WebConfig, run_tasks
from pixelbox.harness.tasks import Task, load_tasks
from pixelbox.harness.web.cache import WebCache
from pixelbox.runtime.options import SandboxOptions

QUERY = {"query": "warehouse bay tag colours", "gl": "us", "hl": "en"}
RESULTS = {"query": QUERY["query"], "results": [{"title": "Bay tags", "link": "https://example.org/tags",
                                                 "snippet": "Yellow tags mark storage bays."}]}  # fmt: skip
SEARCH_TURN = {
    "text": "Before reading it, let me check what yellow tags usually mark.",
    "tool_calls": [{"name": "google_search", "arguments": {"query": QUERY["query"]}}],
}


def demo_tasks(root: Path, ids: Sequence[str] | None = None) -> list[Task]:
    """Write the demo tasks under ``root`` and load them (all, or those ``ids``)."""
    return load_tasks(write_demo(root).tasks, ids=ids)


def with_search(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recording with a web search inserted after its first turn."""
    return [turns[0], SEARCH_TURN, *turns[1:]]


def write_recordings(folder: Path, mode: str, tasks: Sequence[Task], search: bool) -> Path:
    """One recording file per task (with the search inserted when ``search``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        turns = RECORDINGS[mode][task.task_id]
        (folder / f"{task.task_id}.json").write_text(json.dumps(with_search(turns) if search else turns))
    return folder


def web_cache(root: Path, tasks: Sequence[Task]) -> WebConfig:
    """A replay-only web cache that knows the one search the recordings make."""
    for task in tasks:
        WebCache.for_task(root, task.task_id, "record").put("google_search", QUERY, ok=True, data=RESULTS, error=None)
    return WebConfig(cache_root=root, cache_mode="replay")


def run_mode(
    root: Path,
    mode: Literal["gen", "atm"],
    tasks: Sequence[Task],
    *,
    recordings: Path,
    web: WebConfig | None = None,
) -> RunSummary:
    """Play the recordings of ``tasks`` in ``mode`` on local sandboxes into ``root``."""
    return run_tasks(
        tasks,
        agent_factory=lambda task: ReplayAgent.from_file(recordings, task.task_id, model="replay-demo"),
        mode=mode,
        out_dir=root,
        sandbox_options=SandboxOptions(backend="local"),
        web=web,
        progress=False,
    )
