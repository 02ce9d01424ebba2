"""The installed I/O layer: one object that owns the store, the resolver and every patch.

Library hooks (``pil_hooks``, ``cv2_hooks``...) stay thin: they find the path and the image
in a call and hand them to :meth:`IOLayer.capture` or :meth:`IOLayer.resolve_read`. A
re-entrancy guard makes every call that happens *inside* a capture or a resolved read
(matplotlib saving through PIL, skimage through imageio, our own header reads) run unpatched.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TypeVar

from pixelbox.contract.wire import SAVE_AS_METADATA_KEY
from pixelbox.kernel import channel
from pixelbox.kernel.imageio import recorder_link
from pixelbox.kernel.imageio.paths import IMAGE_EXTENSIONS, extension, extension_for_format, path_text
from pixelbox.kernel.imageio.profiles import artifact_variable_name, environment, input_variable_names
from pixelbox.kernel.imageio.resolver import ReadResolver, Resolution
from pixelbox.kernel.imageio.settings import IOSettings
from pixelbox.kernel.imageio.source import CellSite, cell_site
from pixelbox.kernel.imageio.store import ArtifactStore, Publish, SaveAs
from pixelbox.kernel.patching import Patcher

T = TypeVar("T")
CellEndCallback = Callable[[CellSite], None]

_GUARD = threading.local()
"""Per-thread depth of layer work, shared by every layer so nested library calls never re-capture."""


class IOLayer:
    """Everything the ``io`` section installed into one shell, removable with :meth:`uninstall`."""

    def __init__(self, shell: Any, settings: IOSettings, publish: Publish = channel.publish) -> None:
        self.shell = shell
        self.settings = settings
        self.profile = settings.profile
        self.publish = publish
        self.store = ArtifactStore(settings, self.profile, publish)
        self.resolver = ReadResolver(settings.inputs, self.store)
        self.patcher = Patcher()
        self.capture_open_figures = (
            self.profile.capture_open_figures
            if settings.capture_open_figures is None
            else settings.capture_open_figures
        )
        self.cell_end_callbacks: list[CellEndCallback] = []
        self.active = True
        self._saved_env: dict[str, str | None] = {}
        self._bound: dict[str, tuple[str, list[str]]] = {}
        """Lineage key -> (image file, its variables), opened again before each cell when the profile rebinds."""

    # -- re-entrancy -------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while the layer is working or removed: patched calls then behave as the originals.

        A removed layer still counts as busy because libraries may keep references to patched
        functions they imported while it was installed (scikit-image binds imageio's).
        """
        return not self.active or bool(getattr(_GUARD, "depth", 0))

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Mark the current thread busy for the duration of the block."""
        _GUARD.depth = getattr(_GUARD, "depth", 0) + 1
        try:
            yield
        finally:
            _GUARD.depth -= 1

    # -- used by the library hooks ----------------------------------------------------------

    def site(self) -> CellSite:
        """Execution number and line of the model code running now."""
        return cell_site(self.shell)

    def save_target(self, target: Any, fmt: str | None = None) -> tuple[str, str] | None:
        """``(path, extension)`` when a write to ``target`` should be captured, else None.

        File objects and buffers pass through, as do non-raster names (``.pdf``, ``.svg``,
        ``.mp4``); a name without extension becomes an image in ``fmt`` or PNG.
        """
        if self.busy:
            return None
        text = path_text(target)
        if text is None:
            return None
        fmt_ext = extension_for_format(fmt)
        if fmt and fmt_ext is None:
            return None
        ext = extension(text)
        if ext in IMAGE_EXTENSIONS:
            return text, ext
        if ext:
            return None
        return text, fmt_ext or ".png"

    def capture(
        self,
        *,
        asked: str | None,
        kind: str,
        api: str,
        ext: str,
        write: Callable[[str], T],
        obj: Any,
        pixels: int | None = None,
        site: CellSite | None = None,
        digest: Callable[[], str | None] | None = None,
    ) -> tuple[T, dict[str, Any]]:
        """Capture one written or shown image (see :meth:`ArtifactStore.capture`) and link lineage."""
        where = site if site is not None else self.site()
        with self.guard():
            result, record = self.store.capture(
                asked=asked, kind=kind, api=api, ext=ext, write=write, site=where, pixels=pixels, digest=digest
            )
            self._lineage(recorder_link.link_artifact, obj, record)
        return result, record

    def read_target(self, target: Any) -> str | None:
        """The path text of a read that should go through :meth:`resolve_read`, else None."""
        return None if self.busy else path_text(target)

    def resolve_read(self, asked: str, api: str) -> Resolution:
        """Resolve a read path, announcing any normalization; raises when nothing fits."""
        with self.guard():
            resolution = self.resolver.resolve(asked)
            if resolution.why is not None:
                self.store.note_read(
                    api=api,
                    asked=asked,
                    used=resolution.path,
                    why=resolution.why,
                    message=resolution.message(asked),
                    site=self.site(),
                )
        return resolution

    def loaded(self, obj: Any, resolution: Resolution) -> Any:
        """Tell the recorder which known image ``obj`` was read from; returns ``obj``."""
        key = resolution.root_key
        if key is not None and obj is not None:
            with self.guard():
                self._lineage(recorder_link.register_root, obj, key)
        return obj

    def notice(self, message: str) -> None:
        """Tell the host something went wrong in the layer without failing the model's code."""
        self.publish("notice", {"source": "imageio", "message": message})

    def on_import(self, module_name: str, patch: Callable[[ModuleType], None], *, every_load: bool = False) -> None:
        """Run ``patch(module)`` when the model's code imports ``module_name`` (now if loaded).

        The patch runs inside the model's ``import`` statement, so a patch that fails must
        not fail that import: the library then works uncaptured and the host is told.
        """

        def guarded(module: ModuleType) -> None:
            try:
                patch(module)
            except Exception as exc:
                self.notice(f"images from {module_name} will not be captured: {type(exc).__name__}: {exc}")

        self.patcher.when_imported(module_name, guarded, every_load=every_load)

    # -- lifecycle --------------------------------------------------------------------------

    def remember_env(self, key: str) -> None:
        """Record ``key``'s current value so :meth:`uninstall` can put it back."""
        self._saved_env.setdefault(key, os.environ.get(key))

    def set_environment(self) -> None:
        """Export the profile's environment variables, remembering previous values."""
        for key, value in environment(self.profile, self.settings).items():
            self.remember_env(key)
            os.environ[key] = value

    def preload_inputs(self) -> None:
        """List input paths in ``input_image_paths``; preload PIL images when the profile promises that."""
        self.shell.user_ns["input_image_paths"] = [image.path for image in self.settings.inputs]
        names = input_variable_names(self.profile, len(self.settings.inputs))
        if not any(names):
            return
        from PIL import Image

        with self.guard():
            for image, variables in zip(self.settings.inputs, names, strict=True):
                with Image.open(image.path) as opened:
                    opened.load()
                    loaded = opened.copy()
                for variable in variables:
                    self.shell.user_ns[variable] = loaded
                self._lineage(recorder_link.register_root, loaded, f"input:{image.index}")
                self._keep_file(f"input:{image.index}", image.path, variables)

    def pre_run_cell(self, info: Any) -> None:
        """Reset the per-execution caps before each cell."""
        counted = bool(getattr(info, "store_history", False)) and not getattr(info, "silent", False)
        count = getattr(self.shell, "execution_count", None)
        hint = count - 1 if isinstance(count, int) and counted else count
        save_as = SaveAs.from_metadata(channel.parent_metadata(self.shell).get(SAVE_AS_METADATA_KEY))
        self.store.start_execution(hint, save_as)
        self._rebind()

    def post_run_cell(self, result: Any) -> None:
        """End-of-cell work: open figures, the latest-image variable, artifacts bound as variables."""
        number = getattr(result, "execution_count", None)
        site = CellSite(number if isinstance(number, int) else self.store.exec.exec_hint, None)
        for callback in self.cell_end_callbacks:
            try:
                callback(site)
            except Exception as exc:
                self.notice(f"end-of-cell image capture failed: {type(exc).__name__}: {exc}")
        created = self.store.exec.created
        latest = self.profile.env_latest_image
        if created and latest is not None:
            self.remember_env(latest)
            os.environ[latest] = created[-1]["path"]
        self._bind_artifact_variables(created)

    def uninstall(self) -> None:
        """Remove patches and event handlers and restore the environment (tests, restarts)."""
        self.active = False
        self.patcher.restore()
        for event, handler in (("pre_run_cell", self.pre_run_cell), ("post_run_cell", self.post_run_cell)):
            if handler in self.shell.events.callbacks[event]:
                self.shell.events.unregister(event, handler)
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()

    def _bind_artifact_variables(self, created: list[dict[str, Any]]) -> None:
        for record in created:
            variable = artifact_variable_name(self.profile, record["index"])
            if variable is None:
                return
            from PIL import Image

            with self.guard(), Image.open(record["path"]) as opened:
                opened.load()
                image = opened.copy()
            self.shell.user_ns[variable] = image
            self._lineage(recorder_link.register_root, image, f"artifact:{record['index']}")
            self._keep_file(f"artifact:{record['index']}", str(record["path"]), [variable])

    def _keep_file(self, key: str, path: str, variables: list[str]) -> None:
        if self.profile.rebind_each_cell and variables:
            self._bound[key] = (path, list(variables))

    def _rebind(self) -> None:
        """Set the preloaded and artifact variables again, each to its image file opened anew (lazily, so an
        episode with many images costs no memory until a cell uses them), for profiles that rebind."""
        if not self._bound:
            return
        from PIL import Image

        try:
            with self.guard():
                for key, (path, variables) in self._bound.items():
                    fresh = Image.open(path)
                    for variable in variables:
                        self.shell.user_ns[variable] = fresh
                    self._lineage(recorder_link.register_root, fresh, key)
        except Exception as exc:
            self.notice(f"image variables could not be set again: {type(exc).__name__}: {exc}")

    def _lineage(self, link: Callable[[Any, Any], None], obj: Any, value: Any) -> None:
        try:
            link(obj, value)
        except Exception as exc:
            self.notice(f"the recorder could not link an image: {type(exc).__name__}: {exc}")
