"""Episode traces: append-only records, torn-line tolerance, summaries, resumable run directories, shards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pixelbox.harness.agents import AgentTurn, ToolCall, Usage
from pixelbox.harness.episode.budgets import BudgetHit
from pixelbox.harness.tasks import Task
from pixelbox.harness.traces import (
    TRACE_VERSION,
    RunConfigMismatch,
    RunDirectory,
    TraceFormatError,
    TraceWriter,
    parse_shard,
    read_trace,
    select_shard,
    shard_of,
    summarize,
)
from pixelbox.runtime.execution import ErrorInfo, Execution


def task(task_id: str) -> Task:
    return Task(task_id=task_id, prompt="p", images=(), answer={"value": "42"})


def write_episode(writer: TraceWriter, task_id: str, finish: bool = True) -> None:
    writer.episode_start(task={"task_id": task_id}, config={"mode": "gen"}, model="m", mode="gen", runtime={"b": 1})
    turn = AgentTurn("<code>print(1)</code>", (ToolCall("c1", "google_search", '{"query": "q"}'),), Usage(100, 20, 120))
    writer.turn(round=1, messages={"count": 2}, agent_turn=turn)
    writer.action(round=1, action_id="a1", type="code", name="python", code="print(1)")
    ok = Execution(index=1, status="ok", stdout="1\n", artifacts=[{"index": 1}, {"index": 2}], events=[{"op": "crop"}])
    writer.observation(action_id="a1", execution=ok)
    writer.action(round=1, action_id="a2", type="code", name="python", code="1/0")
    failed = Execution(index=2, status="error", error=ErrorInfo("ZeroDivisionError", "division by zero", "tb"))
    writer.observation(action_id="a2", execution=failed.to_dict())
    writer.budget_hit(BudgetHit("max_rounds", 15, 15))
    if finish:
        writer.episode_end(status="answered", reason="answer given", answer="42", totals={"rounds": 1})


def test_records_are_numbered_timed_and_versioned(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "e.jsonl") as writer:
        write_episode(writer, "t1")
    lines = (tmp_path / "e.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["seq"] for r in records] == list(range(len(records)))
    assert all(r["v"] == TRACE_VERSION and isinstance(r["t"], float) for r in records)
    kinds = [r["kind"] for r in records]
    assert kinds == [
        "episode_start",
        "turn",
        "action",
        "observation",
        "action",
        "observation",
        "budget_hit",
        "episode_end",
    ]
    turn = records[1]
    assert turn["tool_calls"][0] == {"id": "c1", "name": "google_search", "arguments_json": '{"query": "q"}'}
    assert turn["usage"] == {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    assert (
        records[3]["execution"]["stdout"] == "1\n" and records[5]["execution"]["error"]["ename"] == "ZeroDivisionError"
    )
    assert records[6]["reason"].startswith("budget exhausted: max_rounds")


def test_traces_are_never_overwritten(tmp_path: Path) -> None:
    TraceWriter(tmp_path / "e.jsonl").close()
    with pytest.raises(FileExistsError, match="append-only"):
        TraceWriter(tmp_path / "e.jsonl")
    with TraceWriter(tmp_path / "f.jsonl") as writer, pytest.raises(ValueError, match="unknown trace record kind"):
        writer.write("chat")


def test_summary_counts_outcome_usage_and_artifacts(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "e.jsonl") as writer:
        write_episode(writer, "t1")
    summary = summarize(read_trace(tmp_path / "e.jsonl"))
    assert (summary["task_id"], summary["status"], summary["answer"], summary["finished"]) == (
        "t1",
        "answered",
        "42",
        True,
    )
    assert summary["executions"] == {"ok": 1, "error": 1} and summary["actions"] == {"code": 2}
    assert (summary["artifacts"], summary["events"], summary["rounds"]) == (2, 1, 1)
    assert summary["usage"] == {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    assert summary["budget_hit"] == "max_rounds" and summary["totals"] == {"rounds": 1}


def test_a_torn_last_line_is_dropped_and_a_bad_middle_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with TraceWriter(path) as writer:
        write_episode(writer, "t1", finish=False)
    with path.open("ab") as out:
        out.write(b'{"v": 1, "seq": 7, "kind": "episode_e')
    trace = read_trace(path)
    assert trace.torn and not trace.finished and len(trace.records) == 7
    assert summarize(trace)["status"] == "unfinished"
    lines = path.read_bytes().split(b"\n")
    lines[2] = b"garbage"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(TraceFormatError, match=r"e\.jsonl:3: not a JSON record"):
        read_trace(path)


WRITER_CHILD = """
import sys
from pixelbox.harness.traces import TraceWriter
with TraceWriter(sys.argv[1]) as w:
    w.episode_start(task={"task_id": "k"}, config={}, model="m", mode="gen")
    i = 0
    while True:
        i += 1
        w.write("observation", action_id=f"a{i}", stdout="x" * 20000)
"""


def test_a_writer_killed_mid_episode_leaves_a_readable_prefix(tmp_path: Path) -> None:
    path = tmp_path / "episodes" / "k.jsonl"
    child = subprocess.Popen([sys.executable, "-c", WRITER_CHILD, str(path)])
    try:
        while not path.exists() or path.stat().st_size < 400_000:
            assert child.poll() is None, "writer exited early"
            time.sleep(0.01)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    trace = read_trace(path)
    assert not trace.finished and len(trace.records) >= 20
    assert [r["seq"] for r in trace.records] == list(range(len(trace.records)))


def test_run_directory_resumes_unfinished_episodes(tmp_path: Path) -> None:
    run = RunDirectory.open(tmp_path / "run", {"model": "m", "mode": "gen", "concurrency": 4})
    for task_id, finish in (("done", True), ("half", False)):
        with run.start_episode(task_id) as writer:
            write_episode(writer, task_id, finish=finish)
    run.finish("done")
    tasks = [task("done"), task("half"), task("new")]
    assert [t.task_id for t in run.pending(tasks)] == ["half", "new"]
    assert run.partials("half") == [run.episodes / "half.jsonl.partial-1"]
    assert not run.trace_path("half").exists() and run.summary_path("done").is_file()
    with run.start_episode("half") as writer:
        writer.episode_start(task={"task_id": "half"}, config={}, model="m", mode="gen")
    assert [t.task_id for t in run.pending(tasks)] == ["half", "new"]
    assert [p.name for p in run.partials("half")] == ["half.jsonl.partial-1", "half.jsonl.partial-2"]
    assert [s["task_id"] for s in run.summaries()] == ["done"]


def test_pending_rebuilds_a_missing_summary(tmp_path: Path) -> None:
    run = RunDirectory.open(tmp_path, {})
    with run.start_episode("t") as writer:
        write_episode(writer, "t")
    assert run.pending([task("t")]) == []
    assert json.loads(run.summary_path("t").read_text())["answer"] == "42"


def test_resuming_with_another_configuration_is_refused(tmp_path: Path) -> None:
    RunDirectory.open(tmp_path, {"model": "m", "mode": "gen", "concurrency": 4, "limits": (15, 15)})
    RunDirectory.open(tmp_path, {"model": "m", "mode": "gen", "concurrency": 16, "limits": [15, 15]})
    with pytest.raises(RunConfigMismatch, match=r"\(mode differ\)"):
        RunDirectory.open(tmp_path, {"model": "m", "mode": "atm", "concurrency": 4, "limits": [15, 15]})
    assert json.loads((tmp_path / "run.json").read_text())["config"]["concurrency"] == 4


def test_shards_partition_tasks_stably() -> None:
    tasks = [task(f"{i:04d}") for i in range(200)]
    shards = [select_shard(tasks, i, 4) for i in range(4)]
    assert sorted(t.task_id for s in shards for t in s) == [t.task_id for t in tasks]
    assert all(30 < len(s) < 70 for s in shards)
    assert select_shard(list(reversed(tasks)), 1, 4) == list(reversed(shards[1]))
    elsewhere = subprocess.run(
        [sys.executable, "-c", "from pixelbox.harness.traces import shard_of; print(shard_of('0001', 4))"],
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(elsewhere.stdout) == shard_of("0001", 4)
    assert parse_shard("2/4") == (2, 4)
    for bad in ("4/4", "-1/4", "1/0", "a/b", "1"):
        with pytest.raises(ValueError, match="shard"):
            parse_shard(bad)
