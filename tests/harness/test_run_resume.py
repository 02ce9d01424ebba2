"""``pixelbox run`` as a user runs it: killed mid-run, then resumed; nothing finished is lost or redone."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pixelbox.harness.traces import read_trace
from pixelbox.runtime.cleanup import remove_leftovers_of
from tests.harness.episodes import task_image

TASKS = 6
FAST_TASKS = 2
"""The first tasks end in seconds; the rest take LATE_S, so a run is reliably caught mid-way once
the first tasks have finished, however fast fresh sandboxes start and however busy the machine."""
LATE_S = 10


def slow_turn(seconds: float) -> str:
    """A code turn that sleeps, then crops and saves (so every episode has an artifact)."""
    return (
        f"<code>\nimport time, os\nfrom PIL import Image\ntime.sleep({seconds})\n"
        "Image.open(os.environ['ORIGINAL_IMAGE_PATH']).crop((240, 60, 360, 140)).save('box.png')\n</code>"
    )


def write_run_inputs(root: Path) -> tuple[Path, Path]:
    """A JSONL task file with TASKS tasks and a directory of recordings, one per task."""
    tasks, recordings = root / "tasks.jsonl", root / "recordings"
    recordings.mkdir(parents=True)
    lines = []
    for k in range(TASKS):
        task_id = f"task-{k}"
        task_image(root / "images" / f"{task_id}.png")
        lines.append(
            json.dumps({"id": task_id, "prompt": "Colour?", "images": [f"images/{task_id}.png"], "answer": "red"})
        )
        turns = [slow_turn(1.5 if k < FAST_TASKS else LATE_S), f"<answer>red {k}</answer>"]
        (recordings / f"{task_id}.json").write_text(json.dumps(turns))
    tasks.write_text("\n".join(lines) + "\n")
    return tasks, recordings


def command(tasks: Path, recordings: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pixelbox.cli",
        "run",
        "--tasks",
        str(tasks),
        "--agent",
        f"replay:{recordings}",
        "--mode",
        "gen",
        "--backend",
        "local",
        "--out",
        str(out),
        "--json",
    ]


WAIT_S = 600
"""A margin for a busy machine (another test session beside this one), not a timing assertion."""


def background(args: list[str], tmp_path: Path) -> subprocess.Popen[bytes]:
    """Start ``pixelbox run`` with its output in files (a pipe nobody reads could fill and stall it)
    and Ctrl-C at its default, as from a terminal."""
    with open(tmp_path / "first.out", "wb") as out, open(tmp_path / "first.err", "wb") as err:
        return subprocess.Popen(args, stdout=out, stderr=err, preexec_fn=_default_sigint)


def _default_sigint() -> None:
    """Give the run Python's Ctrl-C handling even when the tests run as a background job of a
    non-interactive shell, whose children start with SIGINT ignored (and then never see it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def finished(out: Path) -> list[str]:
    return sorted(p.name[: -len(".summary.json")] for p in (out / "episodes").glob("*.summary.json"))


def reap(owner: int) -> None:
    """Remove what the killed run left (its kernels, containers, workspaces and cgroups), as
    `pixelbox cleanup` would, touching nothing of other test sessions."""
    remove_leftovers_of(owner)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_killed_run_resumes_without_redoing_finished_episodes(tmp_path: Path) -> None:
    tasks, recordings = write_run_inputs(tmp_path)
    out = tmp_path / "run"
    first = background(command(tasks, recordings, out), tmp_path)
    deadline = time.monotonic() + WAIT_S
    while len(finished(out)) < 2 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    reap(first.pid)

    done_before = finished(out)
    assert 2 <= len(done_before) < TASKS, done_before
    kept = {task_id: digest(out / "episodes" / f"{task_id}.jsonl") for task_id in done_before}
    unfinished = [p for p in (out / "episodes").glob("*.jsonl") if p.stem not in done_before]

    second = subprocess.run(command(tasks, recordings, out), capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["finished"] == TASKS and report["skipped"] == len(done_before)
    assert report["ran"] == TASKS - len(done_before) and report["counts"] == {"answered": TASKS}

    assert finished(out) == [f"task-{k}" for k in range(TASKS)]
    for task_id, before in kept.items():
        assert digest(out / "episodes" / f"{task_id}.jsonl") == before, f"{task_id} was redone"
    for path in unfinished:
        assert path.with_name(path.name + ".partial-1").is_file()
    for k in range(TASKS):
        trace = read_trace(out / "episodes" / f"task-{k}.jsonl")
        assert trace.finished and trace.of_kind("episode_end")[0]["answer"] == f"red {k}"
        assert (out / "episodes" / f"task-{k}.images" / "transformed_image_1.png").is_file()


def test_a_changed_configuration_is_refused_on_resume(tmp_path: Path) -> None:
    tasks, recordings = write_run_inputs(tmp_path)
    out = tmp_path / "run"
    args = [*command(tasks, recordings, out), "--ids", "task-0"]
    assert subprocess.run(args, capture_output=True, timeout=300).returncode == 0
    changed = subprocess.run([*args, "--max-rounds", "3"], capture_output=True, text=True, timeout=300)
    assert changed.returncode != 0 and "different configuration (budgets differ)" in changed.stderr


def test_ctrl_c_leaves_running_episodes_unfinished_and_resume_completes_them(tmp_path: Path) -> None:
    tasks, recordings = write_run_inputs(tmp_path)
    out = tmp_path / "run"
    args = [*command(tasks, recordings, out), "--concurrency", "2"]
    first = background(args, tmp_path)
    deadline = time.monotonic() + WAIT_S
    while len(finished(out)) < 1 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    first.send_signal(signal.SIGINT)
    assert first.wait(timeout=WAIT_S) == 130, (tmp_path / "first.err").read_text()[-3000:]
    reap(first.pid)
    done_before = finished(out)
    assert len(done_before) < TASKS
    for trace_path in (out / "episodes").glob("*.jsonl"):
        assert read_trace(trace_path).finished == (trace_path.stem in done_before), trace_path.name

    second = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["counts"] == {"answered": TASKS} and report["skipped"] == len(done_before)
