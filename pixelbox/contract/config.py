"""The kernel configuration the host writes to ``config.json`` before starting a kernel, and the
image I/O profile conventions it carries.

A profile (:class:`ProfileSpec`) travels in the ``io`` section as data, so the kernel applies any
profile without knowing its name: a new profile is a host-side registry entry
(``pixelbox.runtime.profiles``), never an image rebuild.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass
class KernelConfig:
    """What the in-kernel layers need to know; each layer reads only its own section.

    ``policy``, ``io`` and ``trace`` are plain dicts so that the host and each layer can
    evolve their options without touching this module; a layer whose section has
    ``"enabled": false`` (or is absent) is not installed.
    """

    workspace: str
    inputs_dir: str
    version: str
    protocol: int
    policy: dict[str, Any] = field(default_factory=dict)
    io: dict[str, Any] = field(default_factory=dict)
    trace: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """Serialize for ``config.json``."""
        return json.dumps(self.__dict__, indent=1, sort_keys=True)


def load_config(path: Path) -> KernelConfig:
    """Read ``config.json``; unknown keys are ignored so older kernels fail soft."""
    raw = json.loads(path.read_text())
    known = {k: raw[k] for k in KernelConfig.__dataclass_fields__ if k in raw}
    return KernelConfig(**known)


class ProfileError(ValueError):
    """A profile's conventions are malformed; the message names the field and a valid shape."""


@dataclass(frozen=True)
class ProfileSpec:
    """How one harness family names images and hands inputs to model code (the ``io.profile`` value).

    Naming: ``stem`` is the numbered artifact name prefix (``transformed_image_`` gives
    ``transformed_image_3.png``); ``None`` means no numbering is imposed and saved images keep
    the name the code chose. ``first_index`` numbers the first artifact. ``download_stem`` names
    downloaded images where the harness names them apart (``downloaded_image_N.png``, N from the
    same sequence). ``capture_open_figures``: figures still open after a cell become artifacts.

    Inputs: every profile sets ``INPUT_IMAGE_PATH``, ``INPUT_IMAGE_PATHS`` and ``OUTPUT_DIR``.
    ``env_output_dir`` names more variables holding the artifact directory; ``env_first_input``
    more variables holding input 0's path; ``env_each_input`` (a pattern with ``{k}``, k from 1)
    one variable per input when there are several; ``env_latest_image`` a variable updated after
    each cell to the newest image. ``preload_first`` / ``preload_each`` (``{k}`` from 1, when
    there are several inputs) are user-namespace variables holding the inputs as PIL images;
    ``artifact_variable`` (``{index}``) binds each new artifact as a PIL image after its cell.
    ``preload_each_skips_first``: ``preload_each`` names inputs 1, 2, ... with ``k`` the input's
    index (input 0 has only ``preload_first``), as AgentVista names ``original_image_1`` its second
    image. ``preload_aliases`` are more names for input 0 (AgentVista's ``image``).
    ``rebind_each_cell``: before every cell the preloaded and artifact variables are set again to
    fresh copies of their images, as a harness that reloads them before each call does.
    """

    name: str = "generic"
    stem: str | None = None
    first_index: int = 1
    capture_open_figures: bool = True
    download_stem: str | None = None
    env_output_dir: tuple[str, ...] = ()
    env_first_input: tuple[str, ...] = ()
    env_each_input: str | None = None
    env_latest_image: str | None = None
    preload_first: str | None = None
    preload_each: str | None = None
    artifact_variable: str | None = None
    preload_each_skips_first: bool = False
    preload_aliases: tuple[str, ...] = ()
    rebind_each_cell: bool = False

    def __post_init__(self) -> None:
        for item in fields(self):
            _check_field(item.name, getattr(self, item.name))

    @property
    def preload(self) -> bool:
        """Whether inputs are preloaded as PIL variables."""
        return self.preload_first is not None or self.preload_each is not None or bool(self.preload_aliases)

    def numbered_name(self, index: int, ext: str) -> str:
        """The name artifact ``index`` gets under a numbering profile."""
        return f"{self.stem}{index}{ext}"

    def unnamed_name(self, index: int, kind: str) -> str:
        """The name of image ``index`` captured without a name of its own: shown, displayed or
        downloaded (``kind`` as in the artifact record)."""
        if kind == "download" and self.download_stem is not None:
            return f"{self.download_stem}{index}.png"
        return self.numbered_name(index, ".png") if self.stem else f"output_{index}.png"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the host sends as ``io.profile``."""
        return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()}

    @classmethod
    def from_dict(cls, raw: Any) -> ProfileSpec:
        """Validate the ``io.profile`` value; :class:`ProfileError` names what is wrong."""
        if not isinstance(raw, Mapping):
            raise ProfileError(
                f"profile {raw!r} is not a profile object; the host sends the profile's conventions "
                f"(keys {', '.join(f.name for f in fields(cls))}), not its name"
            )
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ProfileError(f"profile has unknown keys {unknown}; known keys are {sorted(known)}")
        values: dict[str, Any] = {key: tuple(v) if isinstance(v, list) else v for key, v in raw.items()}
        return cls(**values)


_TEXT_OR_NONE = ("stem", "download_stem", "env_each_input", "env_latest_image", "preload_first", "preload_each")
_FLAGS = ("capture_open_figures", "preload_each_skips_first", "rebind_each_cell")
_PATTERNS = {"env_each_input": "{k}", "preload_each": "{k}", "artifact_variable": "{index}"}


def _check_field(name: str, value: Any) -> None:
    if name == "name" and not (isinstance(value, str) and value):
        raise ProfileError(f"profile name must be a non-empty string, got {value!r}")
    if name in (*_TEXT_OR_NONE, "artifact_variable") and not (value is None or (isinstance(value, str) and value)):
        raise ProfileError(f"profile {name} must be a non-empty string or null, got {value!r}")
    if name in _PATTERNS and value is not None and _PATTERNS[name] not in value:
        raise ProfileError(f"profile {name} must contain {_PATTERNS[name]}, got {value!r}")
    if name == "first_index" and not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        raise ProfileError(f"profile first_index must be a non-negative int, got {value!r}")
    if name in _FLAGS and not isinstance(value, bool):
        raise ProfileError(f"profile {name} must be true or false, got {value!r}")
    if name == "preload_aliases" and not (isinstance(value, tuple) and all(_identifier(v) for v in value)):
        raise ProfileError(f"profile preload_aliases must be a list of Python identifiers, got {value!r}")
    if name in ("env_output_dir", "env_first_input") and not (
        isinstance(value, tuple) and all(isinstance(v, str) and v for v in value)
    ):
        raise ProfileError(f"profile {name} must be a list of variable names, got {value!r}")


def _identifier(value: Any) -> bool:
    return isinstance(value, str) and value.isidentifier()
