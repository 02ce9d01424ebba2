"""Import-time patching: watches survive a failed import, and several patchers share one hook."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from pixelbox.kernel.patching import Patcher


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("pbx_watched_")]:
        del sys.modules[name]


def test_a_failed_import_leaves_the_watch_armed(module_dir: Path) -> None:
    (module_dir / "pbx_watched_flaky.py").write_text(
        "import os\nif not os.environ.get('PBX_FLAKY_OK'):\n    raise ImportError('first try fails')\nVALUE = 7\n"
    )
    seen: list[int] = []
    patcher = Patcher()
    patcher.when_imported("pbx_watched_flaky", lambda module: seen.append(module.VALUE))
    with pytest.raises(ImportError, match="first try fails"):
        importlib.import_module("pbx_watched_flaky")
    assert seen == []
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PBX_FLAKY_OK", "1")
        importlib.import_module("pbx_watched_flaky")
    assert seen == [7]
    patcher.restore()


def test_every_load_watches_run_again_on_reload_and_one_shot_ones_do_not(module_dir: Path) -> None:
    (module_dir / "pbx_watched_reloaded.py").write_text("class Image:\n    pass\n")
    classes: list[type] = []
    once: list[ModuleType] = []
    first, second = Patcher(), Patcher()  # two patchers on one module must not recurse
    first.when_imported("pbx_watched_reloaded", lambda module: classes.append(module.Image), every_load=True)
    second.when_imported("pbx_watched_reloaded", once.append)
    module = importlib.import_module("pbx_watched_reloaded")
    importlib.reload(module)
    assert len(classes) == 2 and classes[1] is module.Image and classes[0] is not classes[1]
    assert once == [module]
    first.restore()
    importlib.reload(module)
    assert len(classes) == 2, "a restored patcher stops watching"
    second.restore()
