"""The operation table resolves against the installed libraries; the schema is validated and documented."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from pixelbox.contract.events import ALL_OPS, EVENT_FIELDS
from pixelbox.contract.wire import mime_for
from pixelbox.kernel.recorder import Recorder, ShellHooks
from pixelbox.kernel.recorder.ops import OpTable, api_table, resolve
from pixelbox.tracer.events import Event, EventFormatError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "events.md"
OPTIONAL_MODULES = (
    "scipy.ndimage",
    "skimage.filters",
    "skimage.feature",
    "skimage.exposure",
    "skimage.color",
    "skimage.transform",
    "skimage.restoration",
    "skimage.util",
    "skimage.io",
    "matplotlib.pyplot",
    "PIL.ImageOps",
    "PIL.ImageEnhance",
    "PIL.ImageFilter",
    "PIL.ImageChops",
    "PIL.ImageDraw",
    "cv2",
)


@pytest.fixture(scope="module")
def table() -> OpTable:
    for name in OPTIONAL_MODULES:
        importlib.import_module(name)
    table = OpTable()
    table.refresh()
    return table


def test_every_entry_names_a_canonical_op() -> None:
    assert set(api_table().values()) <= set(ALL_OPS) | {"alias"}


def test_every_entry_resolves_and_is_found_by_lookup(table: OpTable) -> None:
    unresolved = [path for path in table.specs if path not in table.resolved]
    assert unresolved == []
    for path, obj in table.resolved.items():
        found = table.lookup(obj)
        assert found is not None and found[0].api == path, path


def test_unknown_callables_pass_through(table: OpTable) -> None:
    assert table.lookup(print) is None
    assert table.lookup(lambda x: x) is None
    assert table.lookup(resolve) is None


def test_from_dict_rejects_bad_records_with_a_clear_message() -> None:
    good: dict[str, Any] = {
        "v": 1,
        "seq": 0,
        "exec": 0,
        "op": "crop",
        "status": "ok",
        "api": "PIL.Image.Image.crop",
        "src": {"line": 3, "col": 4},
        "inputs": ["input:0"],
        "output": "img:1",
        "params": {"box_px": [0, 0, 2, 2]},
        "artifact": None,
        "error": None,
        "t_ms": 0.1,
    }
    assert Event.from_dict(good).to_dict() == good
    with pytest.raises(EventFormatError, match="missing field"):
        Event.from_dict({k: v for k, v in good.items() if k != "op"})
    with pytest.raises(EventFormatError, match="unknown op 'zoom'"):
        Event.from_dict({**good, "op": "zoom"})
    with pytest.raises(EventFormatError, match="rebuild the image"):
        Event.from_dict({**good, "v": 99})


def test_docs_describe_every_field_and_op() -> None:
    text = DOCS.read_text()
    for name in (*EVENT_FIELDS, *ALL_OPS):
        assert f"`{name}`" in text, name


def test_default_publisher_uses_the_pixelbox_channel() -> None:
    shell = InteractiveShell.instance()
    hooks = ShellHooks(shell, Recorder())
    hooks.recorder.begin()
    hooks.recorder.events.append({"op": "crop"})
    with capture_output() as captured:
        hooks.post_run_cell(None)
    assert {mime_for("event"): [{"op": "crop"}]} in [output.data for output in captured.outputs]
