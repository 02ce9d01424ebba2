"""The in-kernel atomic tool dispatcher, in a real kernel started by ``python -m pixelbox.kernel``.

The cell ``__pbx__.tool(NAME, ARGUMENTS_JSON)`` is exactly what ``Sandbox.call_tool`` sends; here
it goes straight over the Jupyter protocol, with the image I/O layer (Agentic-MME profile) and the
recorder installed as in a sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking import BlockingKernelClient
from kernel_process import running_kernel
from PIL import Image

from pixelbox import __version__
from pixelbox.contract.config import KernelConfig
from pixelbox.contract.tools import TOOL_SPECS, ToolError, check_arguments, function_schema, parse_call
from pixelbox.contract.wire import RECORD_MSG_TYPE
from pixelbox.kernel import KERNEL_PROTOCOL
from pixelbox.runtime.profiles import PROFILES
from pixelbox.tracer import ORIGINAL_SOURCE_METADATA_KEY, instrument
from pixelbox.tracer.events import parse_events, same_operation
from tests.tracer.conftest import make_test_image


class Kernel:
    """A client for one kernel, and the workspace it writes artifacts into."""

    def __init__(self, client: BlockingKernelClient, workspace: Path) -> None:
        self.client = client
        self.workspace = workspace

    def run(self, code: str, *, traced: bool = False) -> tuple[dict[str, Any], dict[str, list[Any]], str]:
        """One cell; returns the reply, the pixelbox records by kind (event batches flattened) and stdout."""
        content = {
            "code": instrument(code).code if traced else code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        metadata = {ORIGINAL_SOURCE_METADATA_KEY: code} if traced else {}
        msg = self.client.session.msg("execute_request", content, metadata=metadata)
        self.client.shell_channel.send(msg)
        records: dict[str, list[Any]] = {}
        stdout = ""
        while True:
            out = self.client.get_iopub_msg(timeout=60)
            if out["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
                continue
            if out["msg_type"] == "stream" and out["content"]["name"] == "stdout":
                stdout += out["content"]["text"]
            if out["msg_type"] == RECORD_MSG_TYPE:
                records.setdefault(out["content"]["kind"], []).extend(out["content"]["records"])
            if out["msg_type"] == "status" and out["content"]["execution_state"] == "idle":
                break
        reply = self.client.get_shell_msg(timeout=60)
        return reply["content"], records, stdout

    def tool(self, name: str, arguments: Any) -> tuple[dict[str, Any], dict[str, list[Any]], str]:
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return self.run(f"__pbx__.tool({name!r}, {text!r})")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    root = tmp_path_factory.mktemp("atomic")
    ipc, workspace, inputs = root / "ipc", root / "ws", root / "inputs"
    for directory in (ipc, workspace, inputs):
        directory.mkdir()
    image = make_test_image(inputs / "image_0001.png")
    io = {
        "enabled": True,
        "profile": PROFILES.get("agentic-mme").spec.to_dict(),
        "workspace": str(workspace),
        "inputs": [{"index": 0, "name": image.name, "path": str(image)}],
    }
    config = KernelConfig(str(workspace), str(inputs), __version__, KERNEL_PROTOCOL, io=io, trace={"enabled": True})
    with running_kernel(ipc, config, root / "kernel.log") as client:
        yield Kernel(client, workspace)


def test_crop_adds_the_next_image_and_records_a_canonical_event(kernel: Kernel) -> None:
    reply, records, stdout = kernel.tool("crop", {"image_index": 0, "bbox_2d": [600, 125, 900, 375], "label": "sign"})
    assert reply["status"] == "ok", reply
    [artifact] = records["artifact"]
    assert artifact["capture"] == "tool" and artifact["api"] == "pixelbox.tools.crop"
    assert artifact["name"] == f"transformed_image_{artifact['index']}.png"
    assert (artifact["width"], artifact["height"]) == (300, 200)
    with Image.open(kernel.workspace / artifact["name"]) as made:
        assert made.getpixel((10, 10)) == (250, 30, 30)
    events = records["event"]
    crop = next(e for e in events if e["op"] == "crop")
    assert crop["api"] == "pixelbox.tools.crop" and crop["src"] is None
    assert crop["inputs"] == ["input:0"] and crop["params"]["box_px"] == [600, 100, 900, 300]
    capture = next(e for e in events if e["op"] == "io")
    assert capture["inputs"] == [crop["output"]] and capture["artifact"]["index"] == artifact["index"]
    assert f"image 0 -> image {artifact['index']} ({artifact['name']}, 300x200)" in stdout and "[sign]" in stdout


def test_tools_chain_on_images_made_by_earlier_calls(kernel: Kernel) -> None:
    _, first, _ = kernel.tool("rotate", {"image_index": 0, "angle": 90})
    made = first["artifact"][0]
    assert (made["width"], made["height"]) == (800, 1000)
    reply, second, _ = kernel.tool("flip", {"image_index": made["index"], "direction": "vertical"})
    assert reply["status"] == "ok"
    flip = next(e for e in second["event"] if e["op"] == "flip")
    assert flip["inputs"] == [f"artifact:{made['index']}"]
    assert second["artifact"][0]["index"] == made["index"] + 1


def test_every_tool_runs_with_its_defaults(kernel: Kernel) -> None:
    required = {"crop": {"bbox_2d": [0, 0, 500, 500]}, "rotate": {"angle": 30}, "resize": {"scale": 0.5}}
    for name in TOOL_SPECS:
        reply, records, _ = kernel.tool(name, {"image_index": 0, **required.get(name, {})})
        assert reply["status"] == "ok", (name, reply)
        assert len(records["artifact"]) == 1, name
        ops = {e["op"] for e in records["event"]}
        expected = "resize" if name == "resize" else name
        assert expected in ops or name == "enhance", (name, ops)


def test_atomic_crop_and_code_crop_give_the_same_event(kernel: Kernel) -> None:
    _, atomic, _ = kernel.tool("crop", {"image_index": 0, "bbox_2d": [100, 250, 500, 625]})
    code = "import os\nfrom PIL import Image\nimg = Image.open(os.environ['ORIGINAL_IMAGE_PATH'])\n"
    code += "part = img.crop((100, 200, 500, 500))\npart.save('part.png')\n"
    reply, coded, _ = kernel.run(code, traced=True)
    assert reply["status"] == "ok"
    [a] = [e for e in parse_events(atomic["event"]) if e.op == "crop"]
    [c] = [e for e in parse_events(coded["event"]) if e.op == "crop"]
    assert a.api == "pixelbox.tools.crop" and c.api == "PIL.Image.Image.crop"
    assert same_operation(a, c), (a.params, c.params)


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("magnify", {"image_index": 0}, "unknown atomic tool 'magnify'; the image tools are: crop, rotate"),
        ("crop", "{image_index: 0", "not valid JSON"),
        ("crop", "[0, 1]", "must be a JSON object"),
        ("crop", {"image_index": 99, "bbox_2d": [0, 0, 10, 10]}, "image_index 99 does not exist; the images are: 0"),
        ("crop", {"image_index": -1, "bbox_2d": [0, 0, 10, 10]}, "image_index must be at least 0"),
        ("crop", {"image_index": "0", "bbox_2d": [0, 0, 10, 10]}, "image_index must be an integer"),
        ("crop", {"image_index": 0}, "crop needs bbox_2d"),
        ("crop", {"image_index": 0, "bbox_2d": [0, 0, 10]}, r"must be \[x1, y1, x2, y2\]"),
        ("crop", {"image_index": 0, "bbox_2d": [0, 0, 1200, 10]}, "leaves the 0-1000 range"),
        ("crop", {"image_index": 0, "bbox_2d": [500, 0, 100, 10]}, "an empty box"),
        ("crop", {"image_index": 0, "bbox_2d": [0, 0, 10, 10], "zoom_scale": 9}, "between 0.5 and 5"),
        ("rotate", {"image_index": 0, "angle": "ninety"}, "angle must be a number"),
        ("rotate", {"image_index": 0, "angle": 90, "expand": "yes"}, "expand must be true or false"),
        ("flip", {"image_index": 0, "direction": "diagonal"}, "horizontal, vertical, both"),
        ("resize", {"image_index": 0}, "needs at least one of width, height, scale"),
        ("threshold", {"image_index": 0, "value": 300}, "between 0 and 255"),
        ("denoise", {"image_index": 0, "strength": 0}, "between 1 and 30"),
        ("blur", {"image_index": 0, "radius": 1.5}, "whole number"),
        ("grayscale", {"image_index": 0, "strength": 3}, "grayscale has no parameter"),
    ],
)
def test_bad_calls_raise_tool_errors_and_the_kernel_goes_on(
    kernel: Kernel, name: str, arguments: Any, message: str
) -> None:
    reply, records, _ = kernel.tool(name, arguments)
    assert reply["status"] == "error" and reply["ename"] == "ToolError"
    assert __import__("re").search(message, reply["evalue"]), reply["evalue"]
    assert "artifact" not in records
    ok, _, _ = kernel.run("print(1 + 1)")
    assert ok["status"] == "ok"


def test_downloaded_images_join_the_image_list(kernel: Kernel) -> None:
    staged = kernel.workspace / ".incoming.png"
    Image.new("RGB", (40, 30), (1, 2, 3)).save(staged)
    reply, records, stdout = kernel.tool("add_image", {"path": str(staged), "url": "https://example.org/a.png"})
    assert reply["status"] == "ok", reply
    [artifact] = records["artifact"]
    assert artifact["capture"] == "download" and (artifact["width"], artifact["height"]) == (40, 30)
    assert artifact["name"] == f"downloaded_image_{artifact['index']}.png"  # the Agentic-MME name for downloads
    assert not staged.exists() and "from https://example.org/a.png" in stdout
    again, more, _ = kernel.tool("grayscale", {"image_index": artifact["index"]})
    assert again["status"] == "ok" and more["artifact"][0]["index"] == artifact["index"] + 1
    assert more["artifact"][0]["name"] == f"transformed_image_{artifact['index'] + 1}.png"


def test_schemas_match_what_the_kernel_accepts() -> None:
    for name, spec in TOOL_SPECS.items():
        schema = function_schema(spec)["function"]
        assert schema["name"] == name and "image_index" in schema["parameters"]["required"]
        assert set(schema["parameters"]["properties"]) == {p.name for p in spec.all_params()}
    call = parse_call("crop", '{"image_index": 2, "bbox_2d": [1, 2, 3, 4], "zoom_scale": 2}')
    assert (call.image_index, call.kwargs) == (2, {"bbox_2d": [1, 2, 3, 4], "zoom_scale": 2})
    assert check_arguments(TOOL_SPECS["flip"], {"image_index": 1.0}).kwargs == {"direction": "horizontal"}
    with pytest.raises(ToolError, match="either width/height or scale"):
        parse_call("resize", '{"image_index": 0, "width": 5, "scale": 2}')


@pytest.mark.parametrize(
    ("box", "corrected"),
    [
        ([0.1, 0.1, 0.5, 0.5], [100, 100, 500, 500]),
        ([0.0, 0.25, 1.0, 0.75], [0, 250, 1000, 750]),
        ([0, 0, 1, 0.5], [0, 0, 1000, 500]),
    ],
)
def test_a_box_of_0_1_fractions_is_refused_with_the_corrected_call(
    kernel: Kernel, box: list[float], corrected: list[int]
) -> None:
    reply, records, _ = kernel.tool("crop", {"image_index": 0, "bbox_2d": box, "zoom_scale": 2})
    assert reply["status"] == "error" and reply["ename"] == "ToolError"
    assert "looks like 0-1 fractions" in reply["evalue"] and "coordinates are 0-1000 normalized" in reply["evalue"]
    fixed_call = {"image_index": 0, "bbox_2d": corrected, "zoom_scale": 2}
    assert f"call crop with {json.dumps(fixed_call)}" in reply["evalue"], reply["evalue"]
    assert "artifact" not in records
    fixed, made, _ = kernel.tool("crop", fixed_call)
    assert fixed["status"] == "ok" and len(made["artifact"]) == 1


def test_integer_boxes_inside_the_unit_square_stay_legal(kernel: Kernel) -> None:
    reply, records, _ = kernel.tool("crop", {"image_index": 0, "bbox_2d": [0, 0, 1, 1]})
    assert reply["status"] == "ok", reply
    [artifact] = records["artifact"]
    assert artifact["width"] <= 2 and artifact["height"] <= 2
    call = parse_call("crop", '{"image_index": 0, "bbox_2d": [0.5, 0.5, 2, 2]}')  # not all within [0, 1]
    assert call.kwargs["bbox_2d"] == [0.5, 0.5, 2, 2]
