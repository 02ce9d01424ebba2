"""Sixteen episodes at once on the local backend: all finish, each in its own sandbox, none left behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image

from pixelbox.harness.agents import ReplayAgent
from pixelbox.harness.runner import run_tasks
from pixelbox.harness.tasks import Task
from pixelbox.harness.web import WebTools
from pixelbox.runtime import SandboxOptions, live
from tests.conftest import find_leaks
from tests.harness.episodes import make_task, trace_of

EPISODES = 16


def turns_for(task: Task) -> list[Any]:
    """Each episode crops a different strip and stores a marker variable, so a mixed-up sandbox would show."""
    k = int(task.task_id.split("-")[1])
    return [
        "<code>import os\nfrom PIL import Image\nimg = Image.open(os.environ['ORIGINAL_IMAGE_PATH'])\n"
        f"mine = {k}\nimg.crop(({k * 20}, 0, {k * 20 + 20 + k}, 50)).save('strip.png')</code>",
        {"tool_calls": [{"name": "download_image", "arguments": {"url": "not a url"}}]},
        "<code>print('marker', mine)</code>",
        f"<answer>{k}</answer>",
    ]


def test_sixteen_concurrent_episodes_finish_without_leaks(tmp_path: Path) -> None:
    tasks = [make_task(tmp_path / "data", f"c-{k}") for k in range(EPISODES)]
    live_before, leaks_before = live.live_count(), find_leaks()
    summary = run_tasks(
        tasks,
        agent_factory=lambda task: ReplayAgent.from_turns(turns_for(task)),
        mode="gen",
        out_dir=tmp_path / "run",
        sandbox_options=SandboxOptions(backend="local", memory="1g"),
        web=lambda task: WebTools(),
        concurrency=EPISODES,
        progress=False,
    )
    assert summary.counts == {"answered": EPISODES} and summary.ran == EPISODES and not summary.failed
    for k in range(EPISODES):
        trace = trace_of(tmp_path / "run", f"c-{k}")
        end = trace.of_kind("episode_end")[0]
        assert end["answer"] == str(k)
        shown = [o["shown"] for o in trace.of_kind("observation")]
        assert f"marker {k}" in shown[2] and "must be an http(s) URL" in shown[1]
        stored = trace.of_kind("observation")[0]["images"][0]["stored"]
        with Image.open(tmp_path / "run" / stored) as strip:
            assert strip.size == (20 + k, 50)
    assert live.live_count() == live_before
    assert find_leaks() == leaks_before  # sandboxes other tests hold open stay, ours are gone
