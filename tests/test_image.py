"""The kernel image: its content-hash tag, and the container contract the runtime relies on.

The tag tests import ``pixelbox.runtime.image`` from a scratch copy of the sources, edit that copy
and watch the tag. The container tests (marker ``docker``) build the image if it is missing, then
run it with no network, a read-only root and a tmpfs at /tmp, as the docker backend does, under
runc and under gVisor's runsc. Without an engine they skip, unless Docker is required (CI).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import docker_required

import pixelbox
from pixelbox.runtime.image import (
    BUILD_COMMAND,
    IMAGE_REPOSITORY,
    LABEL_HASH,
    LABEL_VERSION,
    build_kernel_image,
    image_definition_files,
    image_hash,
    image_present,
    kernel_image_tag,
    recipe_dir,
    stale_images,
)

ROOT = Path(__file__).resolve().parents[1]
CONTRACT_PACKAGES = {
    "ipykernel": "ipykernel",
    "jupyter_client": "jupyter_client",
    "pyzmq": "zmq",
    "numpy": "numpy",
    "pillow": "PIL",
    "opencv-python-headless": "cv2",
    "scipy": "scipy",
    "scikit-image": "skimage",
    "matplotlib": "matplotlib",
    "imageio": "imageio",
    "RestrictedPython": "RestrictedPython",
    "sympy": "sympy",
    "mpmath": "mpmath",
}


# ---- the tag -----------------------------------------------------------------------------------


def test_tag_is_repository_and_twelve_hex_of_the_hash() -> None:
    tag = kernel_image_tag()
    assert re.fullmatch(rf"{IMAGE_REPOSITORY}:[0-9a-f]{{12}}", tag)
    assert image_hash().startswith(tag.split(":")[1])


def test_definition_files_are_the_recipe_and_the_in_kernel_package() -> None:
    files = image_definition_files()
    kernel_dir = Path(pixelbox.__file__).resolve().parent / "kernel"
    assert recipe_dir() / "Dockerfile" in files
    assert recipe_dir() / "requirements.txt" in files
    assert Path(pixelbox.__file__).resolve() in files
    assert kernel_dir / "__main__.py" in files
    assert kernel_dir.parent / "contract" / "wire.py" in files
    assert all("__pycache__" not in path.parts for path in files)
    assert not [path for path in files if path.parent == kernel_dir.parent and path.name != "__init__.py"]


@pytest.fixture
def scratch_sources(tmp_path: Path) -> Path:
    """An importable copy of the package (pixelbox, runtime, images) laid out as installed."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "pixelbox", tmp_path / "pixelbox", ignore=ignore)
    for directory in ("runtime", "images"):
        shutil.copytree(ROOT / directory, tmp_path / "pixelbox" / directory, ignore=ignore)
    return tmp_path


def _tag_of(sources: Path) -> str:
    code = "import pixelbox.runtime.image as m; print(m.kernel_image_tag())"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=sources,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(sources), "PATH": "/usr/bin:/bin"},
    )
    return result.stdout.strip()


def test_tag_follows_the_content_of_the_kernel_package(scratch_sources: Path) -> None:
    original = _tag_of(scratch_sources)
    assert original == kernel_image_tag()
    channel = scratch_sources / "pixelbox" / "kernel" / "channel.py"
    channel.write_text(channel.read_text() + "\n# edited\n")
    assert _tag_of(scratch_sources) != original


def test_tag_follows_the_host_kernel_contract(scratch_sources: Path) -> None:
    original = _tag_of(scratch_sources)
    wire = scratch_sources / "pixelbox" / "contract" / "wire.py"
    wire.write_text(wire.read_text() + "\n# edited\n")
    assert _tag_of(scratch_sources) != original


def test_tag_follows_new_files_in_kernel_subpackages(scratch_sources: Path) -> None:
    original = _tag_of(scratch_sources)
    (scratch_sources / "pixelbox" / "kernel" / "newpart").mkdir()
    (scratch_sources / "pixelbox" / "kernel" / "newpart" / "__init__.py").write_text("X = 1\n")
    assert _tag_of(scratch_sources) != original


def test_tag_follows_the_recipe(scratch_sources: Path) -> None:
    original = _tag_of(scratch_sources)
    requirements = scratch_sources / "pixelbox" / "images" / "kernel" / "requirements.txt"
    requirements.write_text(requirements.read_text() + "six==1.17.0\n")
    assert _tag_of(scratch_sources) != original


def test_tag_ignores_bytecode_and_host_only_code(scratch_sources: Path) -> None:
    original = _tag_of(scratch_sources)
    cache = scratch_sources / "pixelbox" / "kernel" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "channel.cpython-311.pyc").write_bytes(b"\0" * 16)
    (scratch_sources / "pixelbox" / "runtime" / "host_only.py").write_text("Y = 2\n")
    assert _tag_of(scratch_sources) == original


# ---- the container contract --------------------------------------------------------------------


@pytest.fixture(scope="module")
def docker_client() -> Any:
    """A client for the local engine; skips (or fails where Docker is required) without one."""
    import docker
    import docker.errors

    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except docker.errors.DockerException as exc:
        if docker_required():
            pytest.fail(f"Docker is required here but unreachable ({exc}); run `make setup`")
        pytest.skip(f"no Docker engine ({exc})")
    return client


@pytest.fixture(scope="module")
def kernel_image(docker_client: Any) -> str:
    """The tag of the kernel image for the current sources, built here if it is missing."""
    return build_kernel_image(log=lambda line: None)


def _run(client: Any, image: str, command: list[str], runtime: str = "runc") -> str:
    """Run ``command`` in a locked-down container (as the docker backend starts kernels); its stdout."""
    container = client.containers.run(
        image,
        command,
        detach=True,
        network_mode="none",
        read_only=True,
        runtime=runtime,
        tmpfs={"/tmp": "size=64m"},
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        labels={"pixelbox.test": "image"},
    )
    try:
        status = container.wait(timeout=120)
        stdout = container.logs(stdout=True, stderr=False).decode()
        stderr = container.logs(stdout=False, stderr=True).decode()
    finally:
        container.remove(force=True)
    assert status["StatusCode"] == 0, f"{command} exited {status['StatusCode']}:\n{stdout}\n{stderr}"
    assert stderr == "", f"unexpected stderr from {command}:\n{stderr}"
    return stdout


PROBE = """
import importlib, importlib.metadata as md, json, os, sys
names = json.loads(sys.argv[1])
modules = {dist: importlib.import_module(module).__name__ for dist, module in names.items()}
import numpy as np, cv2, matplotlib.pyplot as plt, pixelbox.kernel
from PIL import Image
pixels = cv2.GaussianBlur(np.arange(64 * 64, dtype=np.uint8).reshape(64, 64), (5, 5), 0)
Image.fromarray(pixels).save("/tmp/probe.png")
plt.imshow(pixels)
plt.savefig("/tmp/probe-plot.png")
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "python": list(sys.version_info[:2]),
    "executable": sys.executable, "backend": plt.get_backend(),
    "pixelbox": pixelbox.kernel.__version__, "pixelbox_file": pixelbox.kernel.__file__,
    "versions": {dist: md.version(dist) for dist in names},
    "written": sorted(f for f in os.listdir("/tmp") if f.startswith("probe")),
}))
"""


@pytest.fixture(scope="module", params=["runc", "runsc"])
def probe(request: pytest.FixtureRequest, docker_client: Any, kernel_image: str) -> Iterator[dict[str, Any]]:
    """What the probe script reports from inside the image under each runtime."""
    runtime = request.param
    if runtime == "runsc" and "runsc" not in docker_client.info().get("Runtimes", {}):
        message = "the runsc runtime is not registered with Docker; run `make setup`"
        pytest.fail(message) if docker_required() else pytest.skip(message)
    output = _run(docker_client, kernel_image, ["python", "-c", PROBE, json.dumps(CONTRACT_PACKAGES)], runtime)
    yield json.loads(output)


def _pins() -> dict[str, str]:
    lines = (recipe_dir() / "requirements.txt").read_text().splitlines()
    pairs = (line.split("==") for line in lines if "==" in line and not line.startswith("#"))
    return {name.lower(): version for name, version in pairs}


@pytest.mark.docker
def test_kernel_runs_as_the_unprivileged_sandbox_user(probe: dict[str, Any]) -> None:
    assert (probe["uid"], probe["gid"]) == (1000, 1000)


@pytest.mark.docker
def test_python_is_the_image_venv_on_path(probe: dict[str, Any]) -> None:
    assert probe["python"] == [3, 11]
    assert probe["executable"] == "/opt/venv/bin/python"


@pytest.mark.docker
def test_contract_libraries_import_at_the_pinned_versions(probe: dict[str, Any]) -> None:
    pins = _pins()
    assert {dist: probe["versions"][dist] for dist in CONTRACT_PACKAGES} == {
        dist: pins[dist.lower()] for dist in CONTRACT_PACKAGES
    }
    assert probe["written"] == ["probe-plot.png", "probe.png"]


@pytest.mark.docker
def test_matplotlib_uses_agg(probe: dict[str, Any]) -> None:
    assert probe["backend"].lower() == "agg"


@pytest.mark.docker
def test_in_kernel_pixelbox_matches_the_host(probe: dict[str, Any]) -> None:
    assert probe["pixelbox"] == pixelbox.__version__
    assert probe["pixelbox_file"] == "/opt/pixelbox/lib/pixelbox/kernel/__init__.py"


@pytest.mark.docker
def test_image_is_tagged_and_labelled_with_the_source_hash(docker_client: Any, kernel_image: str) -> None:
    assert kernel_image == kernel_image_tag()
    assert image_present(docker_client)
    labels = docker_client.images.get(kernel_image).labels
    assert labels[LABEL_HASH] == image_hash()
    assert labels[LABEL_VERSION] == pixelbox.__version__


@pytest.mark.docker
def test_mount_points_exist_and_workspace_belongs_to_the_sandbox(docker_client: Any, kernel_image: str) -> None:
    listing = _run(docker_client, kernel_image, ["stat", "-c", "%n %u", "/workspace", "/inputs", "/pixelbox/ipc"])
    assert listing.split("\n")[:3] == ["/workspace 1000", "/inputs 0", "/pixelbox/ipc 1000"]


@pytest.mark.docker
def test_building_again_is_a_no_op(docker_client: Any, kernel_image: str) -> None:
    before = docker_client.images.get(kernel_image).id
    lines: list[str] = []
    assert build_kernel_image(log=lines.append) == kernel_image
    assert docker_client.images.get(kernel_image).id == before
    assert lines == [f"{kernel_image} is up to date"]


@pytest.mark.docker
def test_images_from_other_sources_are_reported_stale(docker_client: Any, kernel_image: str) -> None:
    old = f"{IMAGE_REPOSITORY}:000000000000"
    docker_client.images.get(kernel_image).tag(IMAGE_REPOSITORY, "000000000000")
    try:
        stale = stale_images(docker_client)
    finally:
        docker_client.images.remove(old)
    assert old in stale
    assert kernel_image not in stale
    assert old not in stale_images(docker_client)


def test_build_command_is_a_make_target() -> None:
    target = BUILD_COMMAND.removeprefix("make ").strip()
    assert re.search(rf"^{re.escape(target)}:", (ROOT / "Makefile").read_text(), re.MULTILINE)


@pytest.mark.docker
def test_tesseract_with_english_is_in_the_image_at_the_pinned_version(docker_client: Any, kernel_image: str) -> None:
    pins = dict(line.split("=", 1) for line in _debian_pins())
    versions = _run(docker_client, kernel_image, ["dpkg-query", "-W", "-f", "${Package}=${Version}\\n", *pins])
    assert dict(line.split("=", 1) for line in versions.split()) == pins
    languages = _run(docker_client, kernel_image, ["tesseract", "--list-langs"]).split()
    assert "eng" in languages


def _debian_pins() -> list[str]:
    lines = (recipe_dir() / "debian-packages.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_debian_packages_resolve_against_a_base_that_lacks_them() -> None:
    from pixelbox.runtime.image import resolve_debian_packages

    if shutil.which("apt-get") is None:
        pytest.skip("resolving Debian packages needs apt (a Debian host)")
    wanted = resolve_debian_packages(b"", _debian_pins())
    names = {item.split("=", 1)[0] for item in wanted}
    assert set(_debian_pins()) <= set(wanted)  # the pins themselves, at their versions
    assert {"libtesseract5", "liblept5", "tesseract-ocr-osd"} <= names  # and what they depend on
