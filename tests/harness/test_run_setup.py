"""``pixelbox run`` setup errors, infrastructure statuses, ``--retry-failed``, exit codes and ``--shard`` messages.

An agent that cannot be built is a configuration error: the run stops before any episode with exit
code 2 and nothing is marked finished, so the corrected command runs everything. An agent that fails
during an episode ends it as ``agent_error``; such episodes make the exit code 1 and are rerun only
with ``--retry-failed``. Real local sandboxes, real replay agents, the real CLI entry point.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pixelbox.cli import main
from pixelbox.harness.agents import ReplayAgent
from pixelbox.harness.runner import RunSetupError, run_tasks
from pixelbox.harness.tasks import Task, load_tasks
from pixelbox.harness.traces import read_trace
from pixelbox.runtime.options import SandboxOptions
from tests.harness.episodes import task_image


def write_tasks(root: Path, ids: list[str]) -> Path:
    lines = []
    for task_id in ids:
        task_image(root / "images" / f"{task_id}.png", (64, 48))
        lines.append(
            json.dumps({"id": task_id, "prompt": "Colour?", "images": [f"images/{task_id}.png"], "answer": "red"})
        )
    path = root / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def record(recordings: Path, task_id: str, turns: list[str]) -> None:
    recordings.mkdir(parents=True, exist_ok=True)
    (recordings / f"{task_id}.json").write_text(json.dumps(turns))


def run_cli(tasks: Path, agent: str, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--tasks",
        str(tasks),
        "--agent",
        agent,
        "--mode",
        "gen",
        "--backend",
        "local",
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]


def traces(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "episodes").glob("*.jsonl*")) if (out / "episodes").exists() else []


def test_a_missing_replay_path_fails_fast_and_the_corrected_command_runs_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path, ["t1", "t2"])
    out = tmp_path / "run"
    missing = tmp_path / "nonexistent"
    assert main(run_cli(tasks, f"replay:{missing}", out)) == 2
    err = capsys.readouterr().err
    assert f"{missing} does not exist" in err and "directory of TASK_ID.json/.jsonl recordings" in err
    assert traces(out) == []

    recordings = tmp_path / "recordings"
    record(recordings, "t1", ["<answer>red</answer>"])
    record(recordings, "t2", ["<answer>red</answer>"])
    assert main(run_cli(tasks, f"replay:{recordings}", out)) == 0
    printed = capsys.readouterr().out
    assert "2/2 episodes finished (2 run now, 0 already done)" in printed and "answered: 2 (t1, t2)" in printed


def test_an_unreadable_recording_fails_fast_through_the_runner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path, ["t1"])
    out = tmp_path / "run"
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert main(run_cli(tasks, f"replay:{broken}", out)) == 2
    err = capsys.readouterr().err
    assert "cannot start the run: building the agent for task 't1' failed: RecordingError" in err
    assert "not valid JSON" in err and "nothing was marked finished" in err
    assert traces(out) == []


def test_openai_without_a_key_fails_fast(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PIXELBOX_TEST_MISSING_KEY", raising=False)
    tasks = write_tasks(tmp_path, ["t1", "t2"])
    out = tmp_path / "run"
    code = main(run_cli(tasks, "openai:gpt-test", out, "--api-key-env", "PIXELBOX_TEST_MISSING_KEY"))
    err = capsys.readouterr().err
    assert code == 2
    assert "no API key for model 'gpt-test': set PIXELBOX_TEST_MISSING_KEY" in err
    assert traces(out) == []


def test_run_tasks_raises_before_any_episode_when_the_agent_cannot_be_built(tmp_path: Path) -> None:
    tasks = load_tasks(write_tasks(tmp_path, ["t1", "t2"]))
    built: list[str] = []

    def factory(task: Task) -> ReplayAgent:
        built.append(task.task_id)
        raise OSError("the model server's certificate file is missing")

    with pytest.raises(RunSetupError, match="building the agent for task 't1' failed: OSError: the model server"):
        run_tasks(
            tasks,
            agent_factory=factory,
            mode="gen",
            out_dir=tmp_path / "run",
            sandbox_options=SandboxOptions(backend="local"),
            progress=False,
        )
    assert built == ["t1"] and traces(tmp_path / "run") == []


def test_infrastructure_failures_set_the_exit_code_and_are_retried_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path, ["t1", "t2", "t3"])
    out, recordings = tmp_path / "run", tmp_path / "recordings"
    record(recordings, "t1", ["<answer>red</answer>"])
    record(recordings, "t2", ["Let me think about it."])  # runs out of turns mid-episode: agent_error
    # no recording for t3 at all: its agent cannot be built, so it stays unfinished

    assert main(run_cli(tasks, f"replay:{recordings}", out)) == 1
    captured = capsys.readouterr()
    assert "2/3 episodes finished (3 run now, 0 already done)" in captured.out
    assert "  answered: 1 (t1)\n" in captured.out
    assert "  agent_error: 1 (t2) - the run failed, not the model" in captured.out and "--retry-failed" in captured.out
    assert "t3: EpisodeSetupError: building the agent for task 't3' failed" in captured.err
    assert traces(out) == ["t1.jsonl", "t2.jsonl"]
    first_t2 = read_trace(out / "episodes" / "t2.jsonl")
    assert first_t2.of_kind("episode_end")[0]["status"] == "agent_error"

    record(recordings, "t2", ["<answer>blue</answer>"])
    record(recordings, "t3", ["<answer>green</answer>"])
    assert main(run_cli(tasks, f"replay:{recordings}", out)) == 1  # t2 is still an agent_error
    printed = capsys.readouterr().out
    assert "3/3 episodes finished (1 run now, 2 already done)" in printed and "agent_error: 1 (t2)" in printed
    assert read_trace(out / "episodes" / "t2.jsonl").records == first_t2.records

    assert main(run_cli(tasks, f"replay:{recordings}", out, "--retry-failed")) == 0
    printed = capsys.readouterr().out
    assert "3/3 episodes finished (1 run now, 2 already done)" in printed
    assert "answered: 3 (t1, t2, t3)" in printed and "agent_error" not in printed
    assert read_trace(out / "episodes" / "t2.jsonl").of_kind("episode_end")[0]["answer"] == "blue"
    kept = read_trace(out / "episodes" / "t2.jsonl.partial-1")
    assert kept.records == first_t2.records
    summary = json.loads((out / "episodes" / "t2.summary.json").read_text())
    assert summary["status"] == "answered"


@pytest.mark.parametrize("shard", ["3/2", "2/2", "-1/4", "1/0", "two/4", "1"])
def test_a_bad_shard_says_what_a_shard_is(tmp_path: Path, capsys: pytest.CaptureFixture[str], shard: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(run_cli(tmp_path / "tasks.jsonl", "replay:x", tmp_path / "run", f"--shard={shard}"))
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert f"argument --shard: bad shard '{shard}': a shard is K/N" in err and "0 <= K < N" in err
    assert "invalid" not in err
    if shard == "3/2":
        assert "with N = 2 the shards are 0/2 to 1/2" in err
