"""An in-process IPython shell with the image I/O layer installed, for tests.

It uses a real ``InteractiveShell`` (the same hooks ipykernel drives) and the layer's real
publishing path: records go through ``pixelbox.kernel.channel.publish`` into IPython's
display publisher, which this harness wraps to collect them per cell.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from IPython.core.interactiveshell import InteractiveShell
from PIL import Image
from traitlets.config import Config

from pixelbox.contract.wire import kind_of
from pixelbox.kernel import imageio
from pixelbox.runtime.profiles import profile_spec


def task_image(width: int, height: int, seed: int) -> Image.Image:
    """A deterministic RGB test image with structure (gradients plus noise), not a flat colour."""
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:height, 0:width]
    base = np.stack([xs * 255 // max(width - 1, 1), ys * 255 // max(height - 1, 1), (xs + ys) % 256], axis=-1)
    noise = rng.integers(0, 40, size=(height, width, 3))
    return Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8), "RGB")


@dataclass
class CellRun:
    """What one cell produced: records by kind, other rich outputs, and the error if any."""

    artifacts: list[dict[str, Any]] = field(default_factory=list)
    normalizations: list[dict[str, Any]] = field(default_factory=list)
    notices: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: BaseException | None = None
    execution_count: int | None = None


class LayerShell:
    """A shell whose cwd is a fresh workspace and whose inputs sit in a read-only directory."""

    def __init__(self, root: Path, profile: str, inputs: list[tuple[str, Image.Image]], **section: Any) -> None:
        self.workspace = root / "workspace"
        self.inputs_dir = root / "inputs"
        self.workspace.mkdir(parents=True)
        self.inputs_dir.mkdir(parents=True)
        entries = []
        for index, (name, image) in enumerate(inputs):
            path = self.inputs_dir / name
            image.save(path)
            path.chmod(0o444)
            entries.append({"index": index, "name": name, "path": str(path)})
        self.inputs_dir.chmod(0o555)
        self.section = {
            "enabled": True,
            "profile": profile_spec(profile).to_dict(),
            "workspace": str(self.workspace),
            "inputs": entries,
            **section,
        }
        self.shell = _shell()
        self._run: CellRun | None = None
        self._publish = self.shell.display_pub.publish

    def start(self) -> None:
        """Reset the namespace, enter the workspace and install the layer."""
        self.shell.reset(new_session=False)
        self._cwd = os.getcwd()
        os.chdir(self.workspace)
        self.shell.display_pub.publish = self._collect
        self.layer = imageio.install(self.shell, self.section)

    def stop(self) -> None:
        """Uninstall the layer and restore the shell and cwd."""
        imageio.uninstall()
        self.shell.display_pub.publish = self._publish
        os.chdir(self._cwd)
        self.inputs_dir.chmod(0o755)

    def run(self, code: str) -> CellRun:
        """Run one cell the way ipykernel does (stored in history, not silent)."""
        self._run = run = CellRun()
        result = self.shell.run_cell(code, store_history=True)
        run.error = result.error_in_exec or result.error_before_exec
        run.execution_count = result.execution_count
        self._run = None
        return run

    def _collect(self, data: dict[str, Any], metadata: Any = None, **kwargs: Any) -> None:
        run = self._run
        kinds = {kind_of(mime): payload for mime, payload in data.items() if kind_of(mime)}
        if run is None:
            return
        for kind, payload in kinds.items():
            {"artifact": run.artifacts, "normalization": run.normalizations, "notice": run.notices}[str(kind)].append(
                payload
            )
        if not kinds:
            run.outputs.append(data)


@contextmanager
def layer_shell(
    root: Path, profile: str, inputs: list[tuple[str, Image.Image]], **section: Any
) -> Iterator[LayerShell]:
    """A started :class:`LayerShell`, stopped afterwards even if the test fails."""
    harness = LayerShell(root, profile, inputs, **section)
    harness.start()
    try:
        yield harness
    finally:
        harness.stop()


def _shell() -> InteractiveShell:
    if not InteractiveShell.initialized():
        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        config.InteractiveShell.colors = "nocolor"
        config.InteractiveShell.xmode = "Plain"
        return InteractiveShell.instance(config=config)
    return InteractiveShell.instance()
