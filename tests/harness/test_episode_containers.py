"""Both modes on the container backends (docker runc and runsc): same traces as on the local backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pixelbox.harness.agents import ReplayAgent
from pixelbox.harness.runner import run_tasks
from pixelbox.runtime import SandboxOptions
from tests.harness.episodes import executions, make_task, trace_of

CODE_TURNS = [
    "<code>\n```python\nimport os\nfrom PIL import Image\nimg = Image.open(os.environ['ORIGINAL_IMAGE_PATH'])\n"
    "img.crop((240, 60, 360, 140)).save('/mnt/data/box.png')\nprint(img.size)\n```\n</code>",
    "<code>print(img.getpixel((300, 100)))</code>",
    "<answer>red</answer>",
]
ATOMIC_TURNS = [
    {"tool_calls": [{"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [600, 200, 900, 467]}}]},
    {"tool_calls": [{"name": "rotate", "arguments": {"image_index": 5, "angle": 90}}]},
    {"tool_calls": [{"name": "grayscale", "arguments": {"image_index": 1}}]},
    "<answer>red</answer>",
]


def run_mode(tmp_path: Path, mode: str, turns: list[Any], backend: dict[str, Any]) -> Any:
    summary = run_tasks(
        [make_task(tmp_path / "data")],
        agent_factory=lambda task: ReplayAgent.from_turns(turns),
        mode=mode,  # type: ignore[arg-type]
        out_dir=tmp_path / "run",
        sandbox_options=SandboxOptions(**backend),
        progress=False,
    )
    assert summary.counts == {"answered": 1}, summary.episodes
    return trace_of(tmp_path / "run", "t1")


def test_code_mode_in_containers(tmp_path: Path, docker_backend: dict[str, Any]) -> None:
    trace = run_mode(tmp_path, "gen", CODE_TURNS, docker_backend)
    start = trace.of_kind("episode_start")[0]
    assert start["runtime"]["backend"] == "docker" and start["runtime"]["runtime"] == docker_backend["runtime"]
    first, second = executions(trace)
    assert first["status"] == "ok" and "(400, 300)" in first["stdout"]
    assert first["artifacts"][0]["name"] == "transformed_image_1.png" and first["normalizations"]
    assert any(e["op"] == "crop" and e["params"]["box_px"] == [240, 60, 360, 140] for e in first["events"])
    assert second["stdout"].strip() == "(230, 20, 20)"
    image = trace.of_kind("observation")[0]["images"][0]
    assert (tmp_path / "run" / image["stored"]).is_file()


def test_atomic_mode_in_containers(tmp_path: Path, docker_backend: dict[str, Any]) -> None:
    trace = run_mode(tmp_path, "atm", ATOMIC_TURNS, docker_backend)
    crop, bad, gray = executions(trace)
    assert crop["status"] == "ok" and crop["artifacts"][0]["capture"] == "tool"
    assert any(e["op"] == "crop" and e["api"] == "pixelbox.tools.crop" for e in crop["events"])
    assert bad["status"] == "error" and bad["error"]["ename"] == "ToolError"
    assert "image_index 5 does not exist" in bad["error"]["evalue"]
    assert gray["status"] == "ok" and gray["artifacts"][0]["index"] == 2
    assert any(e["op"] == "grayscale" and e["inputs"] == ["artifact:1"] for e in gray["events"])
