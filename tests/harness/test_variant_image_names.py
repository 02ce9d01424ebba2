"""The DeepEyes/Thyme runners' image names: every image saved in turn K is ``image_{K+1}.png``.

Our reading of ``general/run_general_script_deepeyes.py`` / ``_thyme.py``: before running turn K's code
the runner redirects every ``Image.Image.save`` (DeepEyes: and ``cv2.imwrite``) to
``PROCESSED_IMAGE_SAVE_PATH/image_{K+1}.png`` whatever the path given, so several saves in one turn
overwrite one file (the last stays) and a turn without code leaves a gap; other writes keep their paths.
Here: the kernel's per-cell save name on every backend (local, docker runc, runsc), then whole episodes from a loopback
OpenAI-compatible server in those formats, exported and scored with the official semantics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pixelbox.harness.export import export_run
from pixelbox.harness.traces import read_trace
from pixelbox.runtime import Sandbox
from tests.harness.demo_runs import QUERY, demo_tasks, web_cache
from tests.harness.variant_runs import play

TWO_SAVES = """from PIL import Image
img = Image.open("image_0.png")
img.crop((0, 0, 30, 20)).save("first.png")
img.crop((0, 0, 50, 40)).save("/mnt/data/second.png")
print("saved twice")
"""


def test_the_kernel_names_a_cells_saves_as_the_host_asks_and_the_last_one_stays(
    tmp_path: Path, backend: dict[str, Any]
) -> None:
    source = tmp_path / "in.png"
    Image.new("RGB", (120, 90), (200, 30, 30)).save(source)
    io = {"enabled": True, "profile": "deepeyes"}
    turn = {"name": "image_1.png", "apis": ["PIL.Image.Image.save"]}
    with Sandbox(inputs=[source], io=io, timeout=60, **backend) as sandbox:
        sandbox.upload(source, "image_0.png")
        first = sandbox.execute(TWO_SAVES, save_as=turn)
        later = sandbox.execute(
            "import cv2, numpy as np\nfrom PIL import Image\nprint(Image.open('image_1.png').size)\n"
            "cv2.imwrite('kept_name.png', np.zeros((5, 6, 3), np.uint8))",
            save_as={"name": "image_3.png", "apis": ["PIL.Image.Image.save"]},
        )
    assert first.status == "ok" and first.stdout == "saved twice\n", first.error
    [artifact] = first.artifacts
    assert (artifact["name"], artifact["width"], artifact["height"]) == ("image_1.png", 50, 40), "the last save stays"
    assert not first.notices, "the replaced save is dropped quietly, not reported as tampering"
    moved = [(n["asked"], n["why"]) for n in first.normalizations]
    assert moved == [("first.png", "save_as"), ("/mnt/data/second.png", "save_as")]
    assert later.stdout == "(50, 40)\n", "a later read of the turn's name sees the last save"
    assert [a["name"] for a in later.artifacts] == ["kept_name.png"], "cv2.imwrite is not Thyme's save call"


CROPS = """<code>
from PIL import Image
img = Image.open("image_0.png")
w, h = img.size
img.crop((0, 0, w // 2, h // 2)).save("image_1.png")
img.crop((int(w * 0.75), int(h * 0.75), w, h)).save("image_2.png")
print("two crops")
</code>"""
SEARCH = json.dumps([{"tool_name": "google_search", "arguments": {"query": QUERY["query"]}}])
ENLARGE = """<code>
import cv2
from PIL import Image
sign = Image.open("image_1.png")
big = cv2.resize(cv2.imread("image_1.png"), None, fx=2, fy=2)
cv2.imwrite("image_2.png", big)
print(sign.size, big.shape[1], big.shape[0])
</code>"""
REPLIES = [
    f"<think>Zoom in on two places.</think>\n{CROPS}",
    f"<think>What do the tags mean?</think>\n<tool_log>{SEARCH}</tool_log>",
    f"<think>Enlarge the sign.</think>\n{ENLARGE}",
    "<think>The sign reads GATE 47.</think>\n<answer>GATE 47</answer>",
]


@pytest.mark.parametrize("variant", ["deepeyes", "thyme"])
def test_a_variant_episode_names_images_by_turn_in_the_trace_the_prompt_and_the_export(
    tmp_path: Path, variant: str
) -> None:
    tasks = demo_tasks(tmp_path / "demo", ["demo-crop-sign"])
    bodies = play(tasks, REPLIES, variant, tmp_path / "run", web_cache(tmp_path / "web", tasks))
    trace = read_trace(tmp_path / "run" / "episodes" / "demo-crop-sign.jsonl")
    codes = [a for a in trace.of_kind("action") if a["type"] == "code"]
    assert [c["save_as"]["name"] for c in codes] == ["image_1.png", "image_3.png"], "turns 0 and 2"
    runs = [o["execution"] for o in trace.of_kind("observation") if isinstance(o.get("execution"), dict)]
    with Image.open(tasks[0].images[0]) as source:
        w, h = source.size
    quarter = (w - int(w * 0.75), h - int(h * 0.75))
    [crop] = runs[0]["artifacts"]
    assert (crop["name"], crop["width"], crop["height"]) == ("image_1.png", *quarter), "the second crop stays"
    assert runs[1]["stdout"] == f"{quarter} {2 * quarter[0]} {2 * quarter[1]}\n", runs[1]
    third = [a["name"] for a in runs[1]["artifacts"]]
    seen = ["image_1.png", "image_3.png"] if variant == "deepeyes" else ["image_1.png"]
    assert third == (["image_3.png"] if variant == "deepeyes" else ["image_2.png"]), (
        "DeepEyes redirects cv2.imwrite to the turn's file; Thyme does not, so the code's own name stays"
    )
    told = json.dumps(bodies[1]["messages"][-1]) + json.dumps(bodies[3]["messages"][-1])
    assert "New images: image 1 (image_1.png" in told and ("(image_3.png" in told) == (variant == "deepeyes")
    assert "(image_2.png" not in told, (
        "the replaced save and Thyme's cv2 file are not shown: the runner never sees them"
    )
    assert "saved 'image_2.png' as image_1.png" in told, "the model is told where its save went"

    [exported] = export_run(tmp_path / "run", tmp_path / "export")
    assert sorted(p.name for p in (exported.directory / "tool_images").iterdir()) == seen
    with Image.open(exported.directory / "tool_images" / "image_1.png") as saved:
        assert saved.size == quarter
    index = json.loads((exported.directory / "image_index.json").read_text())
    assert [Path(e["path"]).name for e in index[1:]] == seen


@pytest.mark.parametrize("variant", ["deepeyes", "thyme"])
def test_a_turn_with_tool_log_and_code_runs_only_its_tool_calls(tmp_path: Path, variant: str) -> None:
    """As the runner variants: <tool_log> first, and the turn's <code> does not run."""
    tasks = demo_tasks(tmp_path / "demo", ["demo-crop-sign"])
    both = f"<think>Search and crop.</think>\n<tool_log>{SEARCH}</tool_log>\n<code>\nprint('not run')\n</code>"
    play(tasks, [both, REPLIES[-1]], variant, tmp_path / "run", web_cache(tmp_path / "web", tasks))
    trace = read_trace(tmp_path / "run" / "episodes" / "demo-crop-sign.jsonl")
    assert [(a["type"], a["name"]) for a in trace.of_kind("action")] == [("tool", "google_search")]
