"""The distribution installs exactly one import name, ``pixelbox``, with every subpackage inside.

``runtime/``, ``tracer/``, ``harness/`` and ``images/`` are mapped onto ``pixelbox.*`` by
pyproject's package-dir; a wrong mapping would install them as top-level names that clash with
other projects, and a subpackage missing from the explicit package list would vanish from the
wheel while still working in the editable checkout. The wheel is built from a copy of the sources
so concurrent test runs never share build directories.
"""

from __future__ import annotations

import zipfile

import pytest
from wheels import ROOT, SOURCE_DIRS, build_wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The files of a wheel freshly built from the current sources, by name."""
    built = build_wheel(tmp_path_factory.mktemp("packaging"))
    with zipfile.ZipFile(built) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_only_pixelbox_is_a_top_level_name(wheel: dict[str, bytes]) -> None:
    top_level = {name.split("/")[0] for name in wheel if ".dist-info/" not in name}
    assert top_level == {"pixelbox"}


def test_top_level_metadata_names_only_pixelbox(wheel: dict[str, bytes]) -> None:
    records = [content for name, content in wheel.items() if name.endswith(".dist-info/top_level.txt")]
    assert [record.decode().split() for record in records] == [["pixelbox"]]


@pytest.mark.parametrize("package", ["runtime", "tracer", "harness", "kernel", "images"])
def test_subpackage_is_inside_pixelbox(wheel: dict[str, bytes], package: str) -> None:
    assert f"pixelbox/{package}/__init__.py" in wheel


def test_every_source_package_is_in_the_wheel(wheel: dict[str, bytes]) -> None:
    """A package directory missing from pyproject's explicit package list would be dropped here."""
    missing = []
    for directory, installed_as in SOURCE_DIRS.items():
        for init in sorted((ROOT / directory).rglob("__init__.py")):
            relative = init.relative_to(ROOT / directory).as_posix()
            if f"{installed_as}/{relative}" not in wheel:
                missing.append(f"{directory}/{relative}")
    assert not missing, f"packages not in the wheel (add them to [tool.setuptools] packages): {missing}"


def test_kernel_image_recipe_ships_in_the_wheel(wheel: dict[str, bytes]) -> None:
    """An installed pixelbox can build (and tag) its kernel image: every recipe file is inside."""
    recipe = sorted(p.name for p in (ROOT / "images" / "kernel").iterdir() if p.is_file())
    assert "Dockerfile" in recipe
    missing = [name for name in recipe if f"pixelbox/images/kernel/{name}" not in wheel]
    assert not missing, f"recipe files missing from the wheel: {missing}"
