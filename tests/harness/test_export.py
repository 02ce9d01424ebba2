"""Export to the official Agentic-MME layout, from runs made by the real runner on local sandboxes.

The recordings solve two demo tasks (one of them in two steps) with a web search in between, in
both modes, so the tests can check completeness, the true chronological order of
``tool_use_list.json`` and that the official checkpoint semantics can read what we write.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pixelbox.harness.export import ExportError, export_run
from pixelbox.harness.export.official_vtool import verdicts_for_export
from pixelbox.harness.traces import read_trace
from tests.harness.demo_runs import QUERY, demo_tasks, run_mode, web_cache, write_recordings

TASKS = ["demo-crop-rotate-tag", "demo-crop-sign"]
STEMS = {"demo-crop-rotate-tag": "0005", "demo-crop-sign": "0001"}
COMMON = ["orig.png", "model_answer.txt", "conversation.json", "tool_use_list.json", "run_meta.json"]
FILES = {
    "gen": [*COMMON, "image_index.json", "pixelbox.json", "replay_general_rollout.py", "exec_stdout_turn_0.txt"],
    "atm": [*COMMON, "image_index.json", "pixelbox.json"],
}
RUN_META_KEYS = {
    "gen": ["task_id", "task_file", "mode", "driver", "model", "temperature", "paths", "usage",
            "effective_tool_calls", "total_images", "code_analysis", "search_analysis", "warnings"],
    "atm": ["task_id", "task_file", "mode", "driver", "model", "temperature", "usage", "effective_tool_calls",
            "total_images", "paths", "image_tool_analysis", "search_analysis", "warnings"],
}  # fmt: skip
MODE_DIRS = {"gen": "general", "atm": "atomic"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ROOT/{gen,atm}`` run directories and their export in ``ROOT/export``."""
    root = tmp_path_factory.mktemp("export")
    tasks = demo_tasks(root / "demo", TASKS)
    web = web_cache(root / "web", tasks)
    for mode in ("gen", "atm"):
        recordings = write_recordings(root / "recordings" / mode, mode, tasks, search=True)
        summary = run_mode(root / mode, mode, tasks, recordings=recordings, web=web)  # type: ignore[arg-type]
        assert summary.counts == {"answered": 2}, summary.failed
        export_run(root / mode, root / "export")
    return root


def exported(runs: Path, mode: str, task_id: str = "demo-crop-rotate-tag") -> Path:
    return runs / "export" / "runs" / MODE_DIRS[mode] / "replay-demo" / STEMS[task_id]


def entries(folder: Path) -> list[dict[str, Any]]:
    return json.loads((folder / "tool_use_list.json").read_text())


@pytest.mark.parametrize("mode", ["gen", "atm"])
def test_every_file_of_the_official_layout_is_written(runs: Path, mode: str) -> None:
    for task_id, answer in (("demo-crop-rotate-tag", "BAY 19"), ("demo-crop-sign", "GATE 47")):
        folder = exported(runs, mode, task_id)
        assert all((folder / name).is_file() for name in FILES[mode]), sorted(p.name for p in folder.iterdir())
        assert not (folder / "task.json").exists()
        assert (folder / "model_answer.txt").read_text() == answer
        assert sorted(p.name for p in folder.glob("raw_model_output_turn_*")) == [
            f"raw_model_output_turn_{k}.txt" for k in range(3 if task_id == "demo-crop-sign" else 4)
        ]
        cached = sorted((folder / "search_cache").rglob("*.json"))
        assert [p.relative_to(folder / "search_cache").as_posix() for p in cached] == [
            f"{task_id}/serper_search_1.json"
        ]
        record = json.loads(cached[0].read_text())
        assert record["request"]["q"] == QUERY["query"] and record["response"]["results"]
        meta = json.loads((folder / "run_meta.json").read_text())
        assert list(meta) == RUN_META_KEYS[mode]
        task_file = Path(meta["task_file"])
        assert task_file.parent.name == "json" and task_file.stem == STEMS[task_id]
        assert json.loads(task_file.read_text())["task_id"] == task_id == meta["task_id"]
        assert meta["mode"] == {"gen": "general_rollout", "atm": "atomic"}[mode]
        sidecar = json.loads((folder / "pixelbox.json").read_text())
        assert sidecar["task_id"] == task_id and sidecar["executed"]


@pytest.mark.parametrize("mode", ["gen", "atm"])
def test_tool_images_are_the_artifacts_the_trace_recorded(runs: Path, mode: str) -> None:
    trace = read_trace(runs / mode / "episodes" / "demo-crop-rotate-tag.jsonl")
    recorded = {
        a["name"]: a["sha256"]
        for o in trace.of_kind("observation")
        if isinstance(o.get("execution"), dict)
        for a in o["execution"]["artifacts"]
    }
    folder = exported(runs, mode) / "tool_images"
    copied = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    assert copied == recorded and len(copied) == 2
    with Image.open(exported(runs, mode) / "orig.png") as orig:
        assert orig.size == (1600, 1200)


def test_code_mode_entries_are_the_official_reading(runs: Path) -> None:
    """Searches, then the operations the official reading lists (the resize after a crop is not
    listed), then one entry per executed block; what ran is in the sidecar, in true order."""
    folder = exported(runs, "gen")
    listed = entries(folder)
    assert [e["tool_name"] for e in listed] == [
        "google_search", "crop", "rotate", "run_visual_processing_code", "run_visual_processing_code",
    ]  # fmt: skip
    assert [e["index"] for e in listed] == list(range(5))
    search, crop, rotate, first = listed[0], listed[1], listed[2], listed[3]
    assert list(search) == ["tool_name", "arguments", "output", "turn", "index", "timestamp"]
    assert search["arguments"] == {"query": QUERY["query"]} and "Yellow tags mark" in search["output"]["context"]
    assert list(crop) == ["index", "tool_name", "raw_tool_name", "arguments", "output", "timestamp"]
    assert crop["arguments"] == {"op": "crop", "save": "transformed_image_1.png", "line": 8}
    assert crop["output"]["output_paths"] == [str(folder / "tool_images" / "transformed_image_1.png")]
    assert rotate["arguments"]["save"] == "transformed_image_2.png"
    assert first["raw_tool_name"] == "script_exec" and first["arguments"]["turn"] == 0
    assert Path(first["output"]["script_path"]) == folder / "model_code_turn_0.py"
    meta = json.loads((folder / "run_meta.json").read_text())
    assert meta["effective_tool_calls"] == 3
    assert meta["code_analysis"]["primitive_op_hist"] == {"crop": 1, "rotate": 1}
    assert "zoomed.rotate(180)" in (folder / "model_code_turn_2.py").read_text()
    executed = json.loads((folder / "pixelbox.json").read_text())["executed"]
    assert [e["tool_name"] for e in executed] == [
        "run_visual_processing_code", "crop", "resize", "google_search", "run_visual_processing_code", "rotate",
    ]  # fmt: skip


def test_atomic_mode_has_one_entry_per_call_numbered_as_the_toolbox_numbers(runs: Path) -> None:
    folder = exported(runs, "atm")
    listed = entries(folder)
    assert [e["tool_name"] for e in listed] == ["crop", "google_search", "rotate"]
    crop, rotate = listed[0], listed[2]
    assert crop["arguments"]["bbox_2d"] == [110, 130, 290, 235]
    assert (crop["output"]["new_image_index"], rotate["output"]["new_image_index"]) == (1, 2)
    assert crop["output"]["output_path"] == str(folder / "tool_images" / "transformed_image_1.png")
    raw = (folder / "raw_model_output_turn_0.txt").read_text()
    assert "--- Function Calls ---\nTool: crop" in raw


def test_conversation_has_full_tool_schemas_and_argument_objects(runs: Path) -> None:
    talk = json.loads((exported(runs, "atm") / "conversation.json").read_text())
    roles = [m["role"] for m in talk["messages"]]
    assert roles[:3] == ["system", "user", "assistant"] and roles[-1] == "assistant"
    schemas = json.loads(talk["tools"])
    assert {s["function"]["name"] for s in schemas} >= {"crop", "rotate", "google_search"}
    calls = [json.loads(m["content"]) for m in talk["messages"] if m["role"] == "tool_call"]
    assert calls[0]["arguments"]["bbox_2d"] == [110, 130, 290, 235]
    assert talk["final_answer"] == "BAY 19" and [i["index"] for i in talk["images"]] == [0, 1, 2]
    assert not any("base64" in m["content"] for m in talk["messages"])


@pytest.mark.parametrize("mode", ["gen", "atm"])
def test_official_checkpoint_semantics_read_the_export(runs: Path, mode: str) -> None:
    verdicts = verdicts_for_export(exported(runs, mode))
    names = [entries(exported(runs, mode))[v.hit_index]["tool_name"] for v in verdicts if v.hit_index is not None]
    assert [(v.checkpoint_id, v.passed) for v in verdicts] == [("V1", True), ("V2", True)]
    assert names == ["crop", "rotate"]


def test_a_missing_artifact_fails_naming_the_file(runs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs / "gen", copy)
    (copy / "episodes" / "demo-crop-sign.images" / "transformed_image_1.png").unlink()
    with pytest.raises(ExportError, match=r"artifact 1 \(transformed_image_1.png\) is missing") as caught:
        export_run(copy, tmp_path / "export")
    assert "demo-crop-sign.images/transformed_image_1.png" in str(caught.value)


def test_an_unfinished_episode_is_exported_without_run_meta(runs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs / "atm", copy)
    trace = copy / "episodes" / "demo-crop-sign.jsonl"
    lines = trace.read_text().splitlines(keepends=True)
    trace.write_text("".join(lines[:-1]))
    done = {e.task_id: e for e in export_run(copy, tmp_path / "export")}
    assert not done["demo-crop-sign"].finished and done["demo-crop-rotate-tag"].finished
    folder = done["demo-crop-sign"].directory
    assert not (folder / "run_meta.json").exists() and (folder / "orig.png").is_file()
    assert (folder / "model_answer.txt").read_text() == ""
