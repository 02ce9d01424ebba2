"""Derived kernel images: ``pixelbox image build --requirements FILE --apt PKG --tag NAME``.

One derived image is built through the command line, as a user builds it, with a small pure-Python
package from the configured package index (tabulate) and a Debian package the kernel image lacks (fonts-liberation2);
sandboxes on runc and on runsc import the one and load a font of the other, through
``SandboxOptions.image``. A derived image built on another kernel image is refused with the command
that rebuilds it. Bad input (a missing requirements file, unknown packages, a bad tag) fails before
anything is built, with a message naming it. The images made here are removed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import require_backend

from pixelbox.cli import main
from pixelbox.runtime import BackendUnavailable, ImageMissing, OptionsError, Sandbox
from pixelbox.runtime.custom_image import LABEL_KERNEL, LABEL_PACKAGES, LABEL_REBUILD, build_custom_image
from pixelbox.runtime.image import ImageBuildError, kernel_image_tag

TAG = f"pixelbox-test-derived:{os.getpid()}"
PACKAGE = "tabulate"
APT = "fonts-liberation2"
PROBE = """\
import os
import tabulate
from PIL import ImageFont
font = ImageFont.truetype("/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf", 20)
print(tabulate.tabulate([[1, 2]], headers=["a", "b"], tablefmt="plain").split()[0], font.getname()[0], os.getuid())
"""

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def engine() -> Any:
    """The Docker client (skips, or fails where Docker is required, without an engine and image)."""
    require_backend("runc")
    import docker

    return docker.from_env(timeout=300)


@pytest.fixture(scope="module")
def derived(engine: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The derived image, built with the CLI; removed after the module."""
    folder = tmp_path_factory.mktemp("derived")
    requirements = folder / "extra.txt"
    requirements.write_text(f"# what the model needs\n{PACKAGE}\n")
    try:
        assert main(["image", "build", "--requirements", str(requirements), "--apt", APT, "--tag", TAG]) == 0
        yield TAG
    finally:
        _remove(engine, TAG)


def _remove(engine: Any, tag: str) -> None:
    import docker.errors

    with contextlib.suppress(docker.errors.ImageNotFound):
        engine.images.remove(tag, force=True)


@pytest.mark.parametrize("runtime", ["runc", pytest.param("runsc", marks=pytest.mark.runsc)])
def test_sandbox_imports_the_added_package_and_reads_the_debian_one(derived: str, runtime: str) -> None:
    with Sandbox(image=derived, timeout=60, **require_backend(runtime)) as sb:
        result = sb.execute(PROBE)
    assert result.status == "ok", result.error.traceback if result.error else result
    assert result.stdout == "a Liberation Sans 1000\n"


def test_with_the_policy_on_the_added_module_must_be_allowed(derived: str) -> None:
    options = {"image": derived, "policy": True, **require_backend("runc")}
    with Sandbox(allow_modules=("tabulate",), **options) as sb:
        allowed = sb.execute("import tabulate\nprint(tabulate.tabulate([[1]], tablefmt='plain'))")
    with Sandbox(**options) as sb:
        refused = sb.execute("import tabulate")
    assert allowed.status == "ok" and allowed.stdout == "1\n", allowed
    assert refused.error is not None and "denied-module" in refused.error.evalue, refused


def test_derived_image_is_the_kernel_image_plus_one_labelled_layer(engine: Any, derived: str) -> None:
    image = engine.images.get(derived)
    base = engine.images.get(kernel_image_tag())
    assert image.labels[LABEL_KERNEL] == kernel_image_tag()
    rebuild = image.labels[LABEL_REBUILD]
    assert rebuild.startswith("pixelbox image build --requirements /") and rebuild.endswith(
        f"/extra.txt --apt {APT} --tag {derived}"
    )
    assert PACKAGE in image.labels[LABEL_PACKAGES] and APT in image.labels[LABEL_PACKAGES]
    layers, base_layers = image.attrs["RootFS"]["Layers"], base.attrs["RootFS"]["Layers"]
    assert layers[: len(base_layers)] == base_layers and len(layers) == len(base_layers) + 1
    added = image.attrs["Size"] - base.attrs["Size"]
    assert 0 < added < 20 * 1024**2, f"the derived layer should hold only the new files, not {added} bytes"
    assert image.attrs["Config"]["User"] == "1000:1000"


def test_derived_image_of_another_kernel_is_refused_with_the_rebuild_command(engine: Any, derived: str) -> None:
    stale = f"pixelbox-test-stale:{os.getpid()}"
    container = engine.containers.create(derived, command=["true"])
    try:
        repository, tag = stale.split(":")
        changes = [f"LABEL {LABEL_KERNEL}=pixelbox-kernel:000000000000"]
        engine.api.commit(container.id, repository=repository, tag=tag, changes=changes)
    finally:
        container.remove(force=True)
    try:
        with pytest.raises(ImageMissing, match=r"extends pixelbox-kernel:0{12}.*rebuild it with `pixelbox image"):
            Sandbox(backend="docker", image=stale)
    finally:
        _remove(engine, stale)


def test_status_lists_the_derived_image(derived: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["image", "status"]) == 0
    entry = next(e for e in json.loads(capsys.readouterr().out)["derived"] if derived in e["tags"])
    assert entry["current"] is True and entry["extends"] == kernel_image_tag()
    assert entry["adds"] == {"requirements": [PACKAGE], "apt": [APT]}


def test_auto_with_a_missing_image_does_not_fall_back_to_local(engine: Any) -> None:
    with pytest.raises(BackendUnavailable, match="no backend is available: docker: the image pixelbox-test-absent"):
        Sandbox(image="pixelbox-test-absent:1")


def test_missing_requirements_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.txt"
    assert main(["image", "build", "--requirements", str(missing), "--tag", "x:1"]) == 2
    assert f"requirements file {str(missing)!r} does not exist" in capsys.readouterr().err


def test_unknown_python_package_is_named(tmp_path: Path) -> None:
    requirements = tmp_path / "extra.txt"
    requirements.write_text("pixelbox-no-such-package-zzz\n")
    with pytest.raises(ImageBuildError, match="wheel of 'pixelbox-no-such-package-zzz' in the configured package"):
        build_custom_image("x:1", requirements, log=lambda line: None)


def test_unknown_debian_package_is_named(engine: Any) -> None:
    with pytest.raises(ImageBuildError, match="Debian has no package 'pixelbox-no-such-package-zzz'"):
        build_custom_image("x:1", apt=["pixelbox-no-such-package-zzz"], log=lambda line: None)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--apt", APT], "--requirements FILE [--apt PKG ...] --tag NAME"),
        (["--apt", APT, "--tag", "Bad Tag"], "is not a Docker image name"),
        (["--apt", APT, "--tag", "pixelbox-kernel:mine"], "the base kernel's repository"),
        (["--apt", "no/such", "--tag", "x:1"], "is not a Debian package name"),
        (["--tag", "x:1"], "needs --requirements FILE, --apt PKG or both"),
    ],
)
def test_bad_arguments_are_explained(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["image", "build", *argv]) == 2
    assert message in capsys.readouterr().err


def test_requirements_file_takes_requirement_lines_only(tmp_path: Path) -> None:
    requirements = tmp_path / "extra.txt"
    requirements.write_text("--index-url http://example.invalid/simple\ntabulate\n")
    with pytest.raises(ImageBuildError, match="only requirement lines are supported"):
        build_custom_image("x:1", requirements, log=lambda line: None)


def test_an_image_needs_a_container_backend() -> None:
    with pytest.raises(OptionsError, match="needs a container backend"):
        Sandbox(backend="local", image=TAG)
