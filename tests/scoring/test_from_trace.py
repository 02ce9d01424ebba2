"""Harness traces read back as EpisodeView: the fixture episode written as a real trace scores the same."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pixelbox.harness.scoring.from_trace import episode_from_trace, find_traces
from pixelbox.harness.scoring.judges import GeometricJudge
from pixelbox.harness.scoring.run import score_run
from pixelbox.harness.scoring.score import score_episode
from pixelbox.harness.scoring.view import Artifact, EpisodeView
from pixelbox.harness.traces import RunDirectory
from pixelbox.runtime.execution import Execution
from tests.scoring.builders import code_episode


def raw_task(view: EpisodeView) -> dict:
    spec = view.task
    return {
        "task_id": spec.task_id,
        "meta": {"level": spec.level},
        "input": {"prompt": spec.prompt},
        "golden_answer": spec.golden_answer,
        "process_evaluation": spec.process_evaluation,
    }


def write_trace(
    view: EpisodeView,
    run: Path,
    *,
    tampered: dict[int, list[str]] | None = None,
    store_images: bool = False,
    end: bool = True,
) -> Path:
    """Record ``view`` the way the harness does: executions for code, ToolResult dicts for searches.

    ``tampered`` maps interaction indices to the trace-integrity notices the runtime gave them;
    ``store_images`` copies artifacts under ``episodes/<task_id>.images/`` (the run's own copies,
    referenced by ``images[].stored``); ``end=False`` leaves the episode unfinished (no episode_end).
    """
    tampered = tampered or {}
    directory = RunDirectory.open(run, {"model": view.model})
    task = {"task_id": view.task.task_id, "images": [str(p) for p in view.root_images], "raw": raw_task(view)}
    with directory.start_episode(view.task.task_id, fsync=False) as writer:
        writer.episode_start(task=task, config={}, model=view.model, mode="code")
        for turn in view.interactions:
            action_id = f"a{turn.index}"
            writer.action(round=turn.index, action_id=action_id, type=turn.kind, name=turn.name, **turn.arguments)
            if turn.kind == "code":
                events = [t.event.to_dict() for t in view.events if t.interaction == turn.index]
                artifacts = [
                    {
                        "index": a.index,
                        "host_path": str(a.path),
                        "sha256": a.sha256,
                        "width": a.width,
                        "height": a.height,
                    }
                    for a in view.artifacts
                    if a.interaction == turn.index
                ]
                execution = Execution(
                    index=turn.index,
                    status="ok",
                    stdout="done\n",
                    events=events,
                    artifacts=artifacts,
                    notices=list(tampered.get(turn.index, [])),
                    tampered=turn.index in tampered,
                )
                images = [_store(a, run, view.task.task_id) for a in view.artifacts if a.interaction == turn.index]
                writer.observation(action_id=action_id, execution=execution, images=images if store_images else [])
            else:
                call = next(s for s in view.searches if s.interaction == turn.index)
                result = {"tool": call.tool, "args": call.arguments, "ok": True, "text": call.payload}
                writer.observation(action_id=action_id, tool_result=result)
        if end:
            writer.episode_end(status="done", answer=view.answer)
    return directory.trace_path(view.task.task_id)


def _store(artifact: Artifact, run: Path, task_id: str) -> dict[str, Any]:
    """Copy an artifact where the harness keeps it and return its image entry."""
    relative = Path("episodes") / f"{task_id}.images" / f"transformed_image_{artifact.index}.png"
    (run / relative).parent.mkdir(parents=True, exist_ok=True)
    if artifact.path.is_file():
        shutil.copyfile(artifact.path, run / relative)
    return {"index": artifact.index, "stored": str(relative), "sha256": artifact.sha256}


def test_trace_round_trip_scores_like_the_fixture(tmp_path: Path) -> None:
    view = code_episode(tmp_path)
    path = write_trace(view, tmp_path / "run")
    read = episode_from_trace(path)
    assert read.mode == "gen" and read.answer == view.answer and read.termination == "answered"
    assert [a.box_root for a in read.artifacts] == [a.box_root for a in view.artifacts]
    assert [a.event_seq for a in read.artifacts] == [2, 5]
    assert [s.payload for s in read.searches] == [s.payload for s in view.searches]
    judges = [GeometricJudge()]
    ours, theirs = score_episode(read, judges), score_episode(view, judges)
    assert [c.passed for c in ours.checkpoints] == [c.passed for c in theirs.checkpoints] == [True] * 4
    assert (ours.v_tool, ours.v_true, ours.s, ours.calls) == (1.0, 1.0, 1.0, 3)


def test_score_run_finds_traces_in_a_run_directory(tmp_path: Path) -> None:
    write_trace(code_episode(tmp_path), tmp_path / "run")
    assert [p.name for p in find_traces(tmp_path / "run")] == ["0001.jsonl"]
    result = score_run(tmp_path / "run", ["geometric"], progress=False)
    assert result["summary"]["rows"][0]["acc"] == 1.0
