"""The image I/O conformance corpus on every backend, through ``Sandbox.execute``.

Same styles and expectations as the in-process suite (``test_imageio_styles.py``), but each
cell is traced, sent over the Jupyter protocol to a real kernel (local, docker runc, docker
runsc) and its artifacts pass the host's own checks before they appear in the result.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from imageio_shell import task_image
from imageio_styles import MULTI_IMAGE_STYLES, STYLES, Style, actual_artifacts, actual_normalizations

from pixelbox.runtime import Execution, Sandbox


def _inputs(tmp_path: Path, style: Style) -> list[Path]:
    paths = []
    for seed, (name, width, height) in enumerate(style.inputs):
        path = tmp_path / name
        task_image(width, height, seed).save(path)
        paths.append(path)
    return paths


def run_style(tmp_path: Path, style: Style, backend: dict[str, Any]) -> tuple[list[Execution], Sandbox]:
    """Run every cell of ``style`` in a fresh sandbox; returns the results (sandbox closed)."""
    io = {"enabled": True, "profile": style.profile, **style.section}
    with Sandbox(inputs=_inputs(tmp_path, style), io=io, timeout=60, **backend) as sandbox:
        before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sandbox.layout.inputs.iterdir()}
        results = [sandbox.execute(cell) for cell in style.cells]
        for result in results:
            for artifact in result.artifacts:
                data = Path(artifact["host_path"]).read_bytes()
                assert hashlib.sha256(data).hexdigest() == artifact["sha256"]
        after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sandbox.layout.inputs.iterdir()}
    assert after == before, "an input image was modified"
    return results, sandbox


@pytest.mark.parametrize("style", STYLES + MULTI_IMAGE_STYLES, ids=lambda s: s.name)
def test_style_on_every_backend(tmp_path: Path, style: Style, backend: dict[str, Any]) -> None:
    results, _ = run_style(tmp_path, style, backend)
    artifacts = [record for result in results for record in result.artifacts]
    normalizations = [record for result in results for record in result.normalizations]
    errors = [result.error.ename for result in results if result.error is not None]

    assert actual_artifacts(artifacts) == list(style.artifacts)
    assert actual_normalizations(normalizations) == list(style.normalizations)
    assert errors == ([style.error] if style.error else []), [r.error for r in results]
    assert all(not result.notices for result in results), [result.notices for result in results]
    for result in results:
        assert all(a["exec_index"] == result.index for a in result.artifacts)
        assert {"image/png", "image/jpeg"}.isdisjoint(m for o in result.outputs for m in o.data)


@pytest.mark.parametrize("fast_start", [False, True], ids=["cold", "fast"])
def test_layer_loads_image_libraries_with_the_agents_code(
    tmp_path: Path, backend: dict[str, Any], fast_start: bool
) -> None:
    """With the I/O layer on, as the harness runs it, a cold kernel starts without NumPy, Pillow or
    OpenCV (about half a second of every cold start under gVisor), and the very cell that
    first imports each library has its saves and shows captured. A kernel from a fast path (the
    local zygote, a restored checkpoint) has them loaded before its layers install, which patch them at once: the same
    captures."""
    task_image(64, 48, 0).save(tmp_path / "photo.png")
    io = {"enabled": True, "profile": "agentic-mme"}
    loaded = "import sys\nprint(sorted(m for m in ('numpy', 'PIL', 'cv2') if m in sys.modules))\n"
    options = {**backend, "fast_start": fast_start}
    with Sandbox(inputs=[tmp_path / "photo.png"], io=io, policy=False, timeout=60, **options) as sandbox:
        preloaded = sandbox.start_path == "fast"
        start = sandbox.execute(loaded)
        pil = sandbox.execute(
            loaded + "from PIL import Image\nim = Image.open('photo.png').rotate(90, expand=True)\nim.save('t.png')\nim"
        )
        opencv = sandbox.execute(
            loaded + "import cv2\nimg = cv2.imread('photo.png')\ncv2.imwrite('edges.png', cv2.Canny(img, 50, 150))\n"
            "cv2.imshow('window', img)\ncv2.waitKey(0)"
        )
    everything = "['PIL', 'cv2', 'numpy']\n"
    assert start.stdout == pil.stdout == (everything if preloaded else "[]\n"), (start, pil)
    assert opencv.stdout == (everything if preloaded else "['PIL']\n"), opencv
    assert opencv.error is None and pil.error is None, (opencv.error, pil.error)
    assert [(a["capture"], a["width"], a["height"]) for a in pil.artifacts] == [
        ("saved", 48, 64),
        ("last_expression", 48, 64),
    ]
    assert [(a["capture"], a["width"], a["height"]) for a in opencv.artifacts] == [("saved", 64, 48), ("shown", 64, 48)]
    assert [a["name"] for a in pil.artifacts + opencv.artifacts] == [f"transformed_image_{n}.png" for n in range(1, 5)]


CUSTOM_PROFILE = {
    "name": "never-registered",
    "stem": "figure_",
    "first_index": 5,
    "capture_open_figures": False,
    "env_output_dir": ["MY_OUTPUTS"],
    "env_first_input": ["MY_PHOTO"],
    "preload_first": "photo",
}


def test_a_profile_the_image_has_never_seen_is_applied_from_the_config(tmp_path: Path, backend: dict[str, Any]) -> None:
    """A profile is data in the kernel config: one registered nowhere, that no image was built with,
    gets its variables, its preloaded input and its artifact names in any sandbox."""
    task_image(64, 48, 0).save(tmp_path / "photo.png")
    io = {"enabled": True, "profile": CUSTOM_PROFILE}
    code = (
        "import os\nprint(os.environ['MY_PHOTO'].endswith('photo.png'), photo.size)\n"
        "photo.rotate(90, expand=True).save(os.path.join(os.environ['MY_OUTPUTS'], 'turned.png'))\n"
    )
    with Sandbox(inputs=[tmp_path / "photo.png"], io=io, timeout=60, **backend) as sandbox:
        result = sandbox.execute(code)
    assert result.status == "ok", result
    assert result.stdout == "True (64, 48)\n"
    assert [(a["index"], a["name"], a["width"], a["height"]) for a in result.artifacts] == [(5, "figure_5.png", 48, 64)]
