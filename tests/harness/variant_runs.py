"""DeepEyes- and Thyme-format runs of two demo tasks that exercise the official runners' readings.

Served by a loopback OpenAI-compatible server, played by the real runner on local sandboxes. The
replies put two ``<code>`` blocks in one turn (only the first runs), fence the code inside the tags,
save twice in one turn under other names (the turn's ``image_{K+1}.png`` keeps the last save), and
leave a turn without code (a search), so the next turn's image skips a number.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pixelbox.harness.agents import OpenAIAgent, OpenAIConfig
from pixelbox.harness.agents.variants import TextToolAgent
from pixelbox.harness.runner import WebConfig, run_tasks
from pixelbox.harness.tasks import Task
from pixelbox.runtime.options import SandboxOptions
from tests.harness.demo_runs import QUERY, demo_tasks, web_cache
from tests.harness.servers import ChatCompletionsServer, completion

SEARCH = json.dumps([{"tool_name": "google_search", "arguments": {"query": QUERY["query"]}}])
SIGN = """<code>
```python
from PIL import Image
img = Image.open("image_0.png")
w, h = img.size
img.crop((0, 0, w // 4, h // 4)).save("image_1.png")
sign = img.crop((int(w * 0.7875), int(h * 0.7833), int(w * 0.94375), int(h * 0.8867)))
zoomed = sign.resize((sign.width * 3, sign.height * 3), Image.LANCZOS)
zoomed.save("zoomed_sign.png")
print("saved", zoomed.size)
```
</code>
<code>print("a second block never runs")</code>"""
TAG = """<code>
from PIL import Image
img = Image.open("image_0.png")
w, h = img.size
tag = img.crop((int(w * 0.1125), int(h * 0.1333), int(w * 0.2875), int(h * 0.2333)))
tag.resize((tag.width * 3, tag.height * 3), Image.LANCZOS).save("image_1.png")
</code>"""
ROTATE = """<code>
from PIL import Image
close_up = Image.open("image_1.png")
close_up.rotate(180).save("image_2.png")
print("rotated", close_up.size)
</code>"""
REPLIES = {
    "demo-crop-sign": [
        f"<think>The sign is tiny: crop the corner, enlarge it.</think>\n{SIGN}",
        f"<think>Check what gate signs look like.</think>\n<tool_log>{SEARCH}</tool_log>",
        "<think>The enlarged crop reads GATE 47.</think>\n<answer>GATE 47</answer>",
    ],
    "demo-crop-rotate-tag": [
        f"<think>Zoom into the tag first.</think>\n{TAG}",
        f"<think>What do the tags mean?</think>\n<tool_log>{SEARCH}</tool_log>",
        f"<think>The close-up is upside down.</think>\n{ROTATE}\n<code>print('ignored')</code>",
        "<think>It reads BAY 19.</think>\n<answer>BAY 19</answer>",
    ],
}
TASKS = tuple(REPLIES)


def play(tasks: Sequence[Task], replies: Sequence[str], variant: str, out: Path, web: WebConfig) -> list[Any]:
    """Play ``tasks`` as ``variant`` in code mode into ``out``, the model's turns served from ``replies``;
    every episode must be answered. Returns the request bodies the server received."""
    with ChatCompletionsServer([completion(r) for r in replies]) as server:
        config = OpenAIConfig(model="served", base_url=server.base_url, api_key="sk-test")
        summary = run_tasks(
            tasks,
            agent_factory=lambda task: TextToolAgent(OpenAIAgent(config), variant),
            mode="gen",
            out_dir=out,
            sandbox_options=SandboxOptions(backend="local"),
            web=web,
            profile="deepeyes",
            progress=False,
        )
        bodies = server.bodies()
    assert summary.counts == {"answered": len(tasks)}, summary.failed
    return bodies


def variant_run(root: Path, variant: str) -> Path:
    """Play :data:`TASKS` as ``variant`` (``deepeyes`` or ``thyme``) in code mode into ``root/run``."""
    tasks = demo_tasks(root / "demo", list(TASKS))
    web = web_cache(root / "web", tasks)
    for task in tasks:
        play([task], REPLIES[task.task_id], variant, root / "run", web)
    return root / "run"
