"""The recorder inside a real ipykernel started by ``python -m pixelbox.kernel``.

Checks the host/kernel contract end to end without the runtime: the original source travels in
the execute_request metadata, events arrive as one display_data batch on iopub, and the error
reply's traceback quotes the agent's code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client.blocking import BlockingKernelClient
from kernel_process import running_kernel

from pixelbox import __version__
from pixelbox.contract.config import KernelConfig
from pixelbox.contract.wire import RECORD_MSG_TYPE
from pixelbox.kernel import KERNEL_PROTOCOL
from pixelbox.tracer import ORIGINAL_SOURCE_METADATA_KEY, instrument

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingKernelClient]:
    root = tmp_path_factory.mktemp("kernel")
    ipc, workspace = root / "ipc", root / "ws"
    ipc.mkdir()
    workspace.mkdir()
    config = KernelConfig(str(workspace), str(root), __version__, KERNEL_PROTOCOL, trace={"enabled": True})
    with running_kernel(ipc, config, root / "kernel.log") as kc:
        yield kc


def execute(kc: BlockingKernelClient, source: str) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Run one instrumented cell; return the reply content and pixelbox records by kind."""
    content = {
        "code": instrument(source).code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }
    msg = kc.session.msg("execute_request", content, metadata={ORIGINAL_SOURCE_METADATA_KEY: source})
    kc.shell_channel.send(msg)
    records: dict[str, list[Any]] = {}
    while True:
        out = kc.get_iopub_msg(timeout=60)
        if out["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        if out["msg_type"] == RECORD_MSG_TYPE:
            kind, batch = out["content"]["kind"], out["content"]["records"]
            records.setdefault(kind, []).append(batch if kind == "event" else batch[0])
        if out["msg_type"] == "status" and out["content"]["execution_state"] == "idle":
            break
    reply = kc.get_shell_msg(timeout=60)
    return reply["content"], records


def test_events_arrive_as_one_batch(client: BlockingKernelClient) -> None:
    reply, records = execute(
        client,
        "from PIL import Image\nimg = Image.new('RGB', (200, 100))\n"
        "for angle in (90, 180):\n    img = img.rotate(angle, expand=True)\nsmall = img.crop((0, 0, 50, 50))\n",
    )
    assert reply["status"] == "ok"
    assert len(records["event"]) == 1
    batch = records["event"][0]
    assert [(e["op"], e["src"]["line"]) for e in batch] == [("rotate", 4), ("rotate", 4), ("crop", 5)]


def test_error_reply_quotes_the_agent_code(client: BlockingKernelClient) -> None:
    source = "from PIL import Image\nimg = Image.new('RGB', (20, 20))\nimg.resize((5, 5), 'bogus')\n"
    reply, records = execute(client, source)
    assert reply["status"] == "error" and reply["ename"] == "ValueError"
    text = ANSI.sub("", "\n".join(reply["traceback"]))
    assert "img.resize((5, 5), 'bogus')" in text
    assert "__pbx__" not in text and "pixelbox/kernel/recorder" not in text
    assert [(e["op"], e["status"]) for e in records["event"][0]] == [("resize", "error")]


def test_image_libraries_load_with_the_agents_code_not_at_kernel_start(tmp_path: Any) -> None:
    """The recorder imports neither NumPy nor Pillow at start (under gVisor that is ~0.5 s of every
    cold start), yet records their operations from the very cell that first imports them."""
    config = KernelConfig(str(tmp_path), str(tmp_path), __version__, KERNEL_PROTOCOL, trace={"enabled": True})
    (tmp_path / "ipc").mkdir()
    with running_kernel(tmp_path / "ipc", config, tmp_path / "kernel.log") as kc:
        reply, _ = execute(kc, "import sys\nloaded = [m for m in ('numpy', 'PIL', 'cv2') if m in sys.modules]\n")
        assert reply["status"] == "ok"
        reply, _ = execute(kc, "assert not loaded, f'imported at kernel start: {loaded}'\n")
        assert reply["status"] == "ok", reply.get("evalue")

        reply, records = execute(
            kc,
            "from PIL import Image, ImageFilter\nim = Image.linear_gradient('L')\n"
            "soft = im.filter(ImageFilter.Kernel((3, 3), [1] * 9))\nneg = im.point(lambda v: 255 - v)\n",
        )
        assert reply["status"] == "ok", reply.get("evalue")
        assert [(e["op"], e["src"]["line"]) for e in records["event"][0]] == [("blur", 3), ("invert", 4)]

        reply, records = execute(
            kc,
            "import numpy as np\na = np.asarray(im)\npart = a[5:30, 10:50]\nflipped = 255 - part\nmask = part > 128\n",
        )
        assert reply["status"] == "ok", reply.get("evalue")
        ops = [(e["op"], e["src"]["line"]) for e in records["event"][0]]
        assert ops == [("convert", 2), ("crop", 3), ("invert", 4), ("threshold", 5)]
