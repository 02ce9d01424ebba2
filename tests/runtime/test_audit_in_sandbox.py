"""``Sandbox.audit``: names carried across cells, dropped when the kernel loses its state; tool calls
have no cell to audit; background reading (``audit=True``) gives the same audits."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from pixelbox.runtime import Sandbox

FIRST = "import os\nfrom PIL import Image, ImageOps as IO\nimg = Image.open(os.environ['ORIGINAL_IMAGE_PATH'])\n"
SECOND = "m = IO.mirror(img)\nif m.width > 10**6:\n    m = m.rotate(90)\n"


@pytest.mark.parametrize("background", [False, True])
def test_audits_follow_the_episode(tmp_path: Path, background: bool) -> None:
    image = tmp_path / "image_0001.png"
    Image.new("RGB", (64, 48), (10, 20, 30)).save(image)
    io = {"enabled": True, "profile": "agentic-mme"}
    with Sandbox(backend="local", inputs=[image], io=io, timeout=60, audit=background) as sb:
        first, second = sb.execute(FIRST), sb.execute(SECOND)
        tool = sb.call_tool("rotate", {"image_index": 0, "angle": 90})
        sb.restart()
        after = sb.execute(SECOND)
        audits = [sb.audit(r) for r in (first, second, tool, after)]
    assert first.audit is audits[0] and audits[0]["available"]
    assert ("PIL.ImageOps.mirror", "flip") in [(w["api"], w["op"]) for w in audits[1]["written"]]
    assert [(w["op"], w["reason"]) for w in audits[1]["written_not_run"]] == [("rotate", "branch at line 2 not taken")]
    assert not audits[2]["available"] and "no agent code" in audits[2]["reason"]
    # the kernel was replaced: IO is no longer bound, so the cell writes no mirror (and raised at line 1)
    assert after.status == "error" and not [w for w in audits[3]["written"] if w["op"] == "flip"]
