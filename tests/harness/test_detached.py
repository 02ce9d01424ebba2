"""Episodes played away from the run directory (what a Ray worker does) and landed by the driver: the
trace reads as if written in place, images follow it, and a second delivery of the same task is dropped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pixelbox.harness.agents import ReplayAgent
from pixelbox.harness.episode import EpisodeConfig
from pixelbox.harness.runner import EpisodeSpec, Player, play_detached
from pixelbox.harness.suites import SUITES
from pixelbox.harness.traces import RunDirectory, TraceWriter, read_trace
from pixelbox.runtime import SandboxOptions
from tests.harness.episodes import make_task

TURNS = [
    "<code>import os\nfrom PIL import Image\nimg = Image.open(os.environ['ORIGINAL_IMAGE_PATH'])\n"
    "img.crop((240, 60, 360, 140)).save('box.png')</code>",
    "<answer>red</answer>",
]


def spec() -> EpisodeSpec:
    return EpisodeSpec(
        EpisodeConfig(mode="gen", profile="agentic-mme"),
        SandboxOptions(backend="local", memory="1g"),
        lambda task: ReplayAgent.from_turns(TURNS),
        None,
        SUITES.get("agentic-mme"),
    )


def test_a_detached_episode_lands_once_with_its_images(tmp_path: Path) -> None:
    task = make_task(tmp_path / "data", "d-1")
    episode = play_detached(spec(), task, tmp_path / "staging")
    assert episode.outcome.status == "answered" and episode.images
    assert [r["seq"] for r in episode.records] == list(range(len(episode.records)))
    run = RunDirectory.open(tmp_path / "run", {"mode": "gen"})
    player = Player(run, spec())

    def place(relative: str, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(episode.staging / relative, target)

    assert player.land(episode, place) is episode.outcome
    trace = read_trace(run.trace_path("d-1"))
    assert trace.records == episode.records and trace.finished
    stored = [i["stored"] for o in trace.of_kind("observation") for i in o.get("images") or []]
    assert stored and all((run.root / s).is_file() for s in stored)
    assert run.summaries()[0]["status"] == "answered"
    before = run.trace_path("d-1").read_bytes()
    assert player.land(episode, place) is None  # the same task again: its identity says it is done
    assert run.trace_path("d-1").read_bytes() == before and not run.partials("d-1")


def test_appended_records_must_continue_the_numbering(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "t.jsonl") as writer:
        writer.error(where="test", message="first")
        with pytest.raises(ValueError, match="expected a known kind with seq 1"):
            writer.append_records([{"v": 1, "seq": 0, "t": 0.0, "kind": "error"}])
        writer.append_records([{"v": 1, "seq": 1, "t": 0.0, "kind": "episode_end", "status": "answered"}])
    assert [r["seq"] for r in read_trace(tmp_path / "t.jsonl").records] == [0, 1]
