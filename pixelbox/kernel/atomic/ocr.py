"""OCR inside the kernel: tesseract reads one image's words, recorded as a canonical ``ocr`` event.

The host asks for it like an atomic tool, through the trusted tool cell
(``__pbx__.tool("read_text", {"image_index": N})``, :data:`pixelbox.contract.wire.READ_TEXT`), so the
image is looked up by the same index as every tool, the event has the image as its input (lineage)
and no image out, and the answer is one line per word: ``(x1, y1, x2, y2) word`` in pixels.

tesseract is a program, and cells may not start programs (the policy's audit hook): the tool opens a
:func:`~pixelbox.kernel.policy.audit.trusted_program` window for exactly the tesseract binary while it
runs it. The kernel image carries tesseract (``images/kernel/debian-packages.txt``); the local backend
uses the host's, and says how to install it when it is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from typing import Any

from pixelbox.contract.tools import ToolError

OCR_TIMEOUT_S = 120.0
"""Longest a tesseract run may take (a page of text takes about a second)."""
LANGUAGE = "eng"
MISSING = (
    "OCR needs the tesseract program where the kernel runs, and it is not installed there: the kernel "
    "image has it (rebuild it with `make image`); for the local backend install it on the host "
    "(`apt-get install tesseract-ocr tesseract-ocr-eng`, or scripts/setup.sh)"
)


def read_text(arguments_json: str) -> None:
    """Run OCR on the image the arguments name; prints one ``(x1, y1, x2, y2) word`` line per word."""
    from pixelbox.kernel.atomic.images import find_image, io_layer, load

    index = _image_index(arguments_json)
    layer = io_layer()
    source = find_image(layer, index)
    image = load(layer, source)
    t0 = time.perf_counter()
    words = parse_tsv(run_tesseract(source.path))
    params = {"engine": "tesseract", "lang": LANGUAGE, "words": len(words), "text": " ".join(w for _, w in words)}
    _record(image, params, t0)
    print("\n".join(f"({x1}, {y1}, {x2}, {y2}) {word}" for (x1, y1, x2, y2), word in words) or "no text found")


def _image_index(arguments_json: str) -> int:
    try:
        arguments = json.loads(arguments_json)
    except (TypeError, ValueError):
        arguments = None
    if not isinstance(arguments, dict) or set(arguments) != {"image_index"}:
        raise ToolError('read_text takes {"image_index": N} (0 is the first input image)')
    index = arguments["image_index"]
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ToolError(f"read_text: image_index must be an integer >= 0, got {json.dumps(index)}")
    return index


def run_tesseract(path: str) -> str:
    """tesseract's TSV output for the image file ``path`` (one thread, English)."""
    from pixelbox.kernel.policy.audit import trusted_program

    binary = shutil.which("tesseract")
    if binary is None:
        raise ToolError(MISSING)
    command = [binary, path, "stdout", "-l", LANGUAGE, "tsv"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OMP_THREAD_LIMIT": "1", "LANG": "C.UTF-8"}
    with trusted_program(binary) as trusted:
        process = subprocess.Popen(
            command, executable=binary, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
        trusted.pids.add(process.pid)
        try:
            out, err = process.communicate(timeout=OCR_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise ToolError(f"OCR: tesseract took longer than {OCR_TIMEOUT_S:g} s") from None
    if process.returncode != 0:
        raise ToolError(f"OCR: tesseract failed (exit {process.returncode}): {err.strip()[-300:]}")
    return out


def parse_tsv(tsv: str) -> list[tuple[tuple[int, int, int, int], str]]:
    """The recognised words of tesseract's TSV (level-5 rows with text), each with its pixel box."""
    words = []
    for line in tsv.splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) != 12 or not cells[11].strip():
            continue
        try:
            confidence = float(cells[10])
            x, y, w, h = (int(v) for v in cells[6:10])
        except ValueError:
            continue
        if confidence >= 0:
            words.append(((x, y, x + w, y + h), cells[11].strip()))
    return words


def _record(image: Any, params: dict[str, Any], t0: float) -> None:
    from pixelbox.contract.wire import TOOL_API_PREFIX
    from pixelbox.kernel.recorder import current
    from pixelbox.kernel.recorder.ops.base import Observed

    observed = Observed("ocr", [image], None, params, geometry=None)
    current()._observe(lambda: observed, TOOL_API_PREFIX + "OCR", None, None, t0)
