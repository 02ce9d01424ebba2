"""The base install, as an embedder gets it: ``pip install pixelbox`` from the built wheel, no extras.

A fresh virtualenv gets the wheel of this checkout and its base dependencies only (Jupyter
client, ZMQ, Docker SDK, Pillow). It must run the Docker backend end to end, image capture
included, without any of the kernel's or the harness's packages on the host; the local backend
and the harness commands must say which extra they need instead of failing on an import.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import require_backend
from wheels import build_wheel

HEAVY = ("numpy", "cv2", "scipy", "skimage", "matplotlib", "ipykernel", "RestrictedPython", "openai", "tqdm")

SCRIPT = textwrap.dedent(
    """
    import importlib.util, json, sys
    from pixelbox.runtime import Sandbox, SandboxOptions
    from pixelbox.runtime.errors import BackendUnavailable

    report = {"heavy": [m for m in sys.argv[1].split(",") if importlib.util.find_spec(m)]}
    code = (
        "from PIL import Image\\n"
        "img = Image.new('RGB', (64, 32), 'red')\\n"
        "img.crop((0, 0, 16, 16)).save('zoom.png')\\n"
        "print(img.size)\\n"
    )
    with Sandbox(backend="docker", runtime="runc") as sb:  # image capture is on by default
        r = sb.execute(code)
        report["status"] = r.status
        report["stdout"] = r.stdout
        report["artifacts"] = [(a["width"], a["height"]) for a in r.artifacts]
        report["ops"] = [e["op"] for e in r.events]
    try:
        SandboxOptions(backend="local")
        Sandbox(backend="local").close()
        report["local"] = "started"
    except BackendUnavailable as exc:
        report["local"] = str(exc)
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv holding this checkout's wheel and nothing but its base dependencies."""
    require_backend("runc")
    work = tmp_path_factory.mktemp("base-install")
    wheel = build_wheel(work)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    installed = subprocess.run([*pip, str(wheel)], capture_output=True, text=True, check=False)
    assert installed.returncode == 0, f"pip install of the bare wheel failed:\n{installed.stderr}"
    return venv


def test_base_install_runs_docker_with_image_capture(base_venv: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [str(base_venv / "bin" / "python"), "-c", SCRIPT, ",".join(HEAVY)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["heavy"] == [], f"the base install pulled in {report['heavy']}"
    assert report["status"] == "ok", report
    assert report["stdout"].strip() == "(64, 32)"
    assert report["artifacts"] == [[16, 16]]
    assert "crop" in report["ops"]
    assert "pixelbox[local]" in report["local"]


def test_base_install_cli_names_the_missing_extra(base_venv: Path, tmp_path: Path) -> None:
    pixelbox = str(base_venv / "bin" / "pixelbox")
    helped = subprocess.run([pixelbox, "--help"], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert helped.returncode == 0, helped.stderr
    assert "score" in helped.stdout
    scored = subprocess.run([pixelbox, "score", str(tmp_path)], capture_output=True, text=True, check=False)
    assert scored.returncode == 2, scored.stderr
    assert "pixelbox[harness]" in scored.stderr
    assert "Traceback" not in scored.stderr
