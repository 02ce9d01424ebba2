"""The ``io`` section of the kernel config, parsed and validated once at install time.

The host builds the section; a mistake in it is a host bug, so every problem is reported
with the key at fault and what a valid value looks like instead of being guessed around.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pixelbox.contract.config import ProfileError, ProfileSpec

KNOWN_KEYS = frozenset(
    {"enabled", "profile", "inputs", "workspace", "artifact_dir", "limits", "capture_open_figures", "first_index"}
)


class SettingsError(ValueError):
    """The ``io`` section is malformed; the message names the key and the expected shape."""


@dataclass(frozen=True)
class InputImage:
    """One task input: its position, the file name the model is told, and where it is in the kernel."""

    index: int
    name: str
    path: str


@dataclass(frozen=True)
class Limits:
    """Per-execution caps on what one code block may capture."""

    max_artifacts_per_exec: int = 32
    max_pixels_per_image: int = 40_000_000
    max_pixels_per_exec: int = 160_000_000


@dataclass(frozen=True)
class IOSettings:
    """Validated view of the section: see the package docstring for the JSON shape."""

    profile: ProfileSpec
    inputs: tuple[InputImage, ...]
    workspace: str
    artifact_dir: str
    limits: Limits
    capture_open_figures: bool | None
    first_index: int | None


def parse_section(section: Mapping[str, Any]) -> IOSettings:
    """Validate the host's ``io`` section and return typed settings."""
    unknown = sorted(set(section) - KNOWN_KEYS)
    if unknown:
        raise SettingsError(f"io section: unknown keys {unknown}; known keys are {sorted(KNOWN_KEYS)}")
    profile = _profile(section.get("profile"))
    workspace = _absolute_dir(section.get("workspace"), "workspace")
    artifact_dir = _artifact_dir(section.get("artifact_dir"), workspace)
    return IOSettings(
        profile=profile,
        inputs=_inputs(section.get("inputs", [])),
        workspace=workspace,
        artifact_dir=artifact_dir,
        limits=_limits(section.get("limits", {})),
        capture_open_figures=_optional_bool(section.get("capture_open_figures"), "capture_open_figures"),
        first_index=_optional_int(section.get("first_index"), "first_index"),
    )


def _profile(value: Any) -> ProfileSpec:
    """The profile's conventions (absent: the generic profile, :class:`ProfileSpec`'s defaults)."""
    if value is None:
        return ProfileSpec()
    try:
        return ProfileSpec.from_dict(value)
    except (ProfileError, TypeError) as exc:
        raise SettingsError(f"io section: {exc}") from None


def _absolute_dir(value: Any, key: str) -> str:
    if not isinstance(value, str) or not os.path.isabs(value):
        raise SettingsError(f"io section: {key!r} must be an absolute directory path, got {value!r}")
    if not os.path.isdir(value):
        raise SettingsError(f"io section: {key!r} directory {value!r} does not exist; create it first")
    return os.path.normpath(value)


def _artifact_dir(value: Any, workspace: str) -> str:
    if value is None:
        return workspace
    if not isinstance(value, str) or not os.path.isabs(value):
        raise SettingsError(f"io section: 'artifact_dir' must be an absolute path, got {value!r}")
    path = os.path.normpath(value)
    if os.path.commonpath([path, workspace]) != workspace:
        raise SettingsError(
            f"io section: 'artifact_dir' {path!r} must be inside the workspace {workspace!r}, "
            "because the host reads artifacts from the shared workspace"
        )
    os.makedirs(path, exist_ok=True)
    return path


def _inputs(value: Any) -> tuple[InputImage, ...]:
    if not isinstance(value, list):
        raise SettingsError(f"io section: 'inputs' must be a list of {{index, name, path}} objects, got {value!r}")
    images = tuple(_input(item, position) for position, item in enumerate(value))
    indices = [image.index for image in images]
    if indices != list(range(len(images))):
        raise SettingsError(f"io section: input indices must be 0, 1, 2... in order, got {indices}")
    names = [image.name for image in images]
    if len(set(names)) != len(names):
        raise SettingsError(f"io section: input names must be distinct, got {names}")
    return images


def _input(item: Any, position: int) -> InputImage:
    if not isinstance(item, Mapping) or set(item) != {"index", "name", "path"}:
        raise SettingsError(f"io section: inputs[{position}] must have exactly index, name, path; got {item!r}")
    index, name, path = item["index"], item["name"], item["path"]
    if not isinstance(index, int) or isinstance(index, bool):
        raise SettingsError(f"io section: inputs[{position}].index must be an int, got {index!r}")
    if not isinstance(name, str) or not name or "/" in name:
        raise SettingsError(f"io section: inputs[{position}].name must be a bare file name, got {name!r}")
    if not isinstance(path, str) or not os.path.isabs(path):
        raise SettingsError(f"io section: inputs[{position}].path must be an absolute path, got {path!r}")
    return InputImage(index=index, name=name, path=os.path.normpath(path))


def _limits(value: Any) -> Limits:
    if not isinstance(value, Mapping):
        raise SettingsError(f"io section: 'limits' must be an object, got {value!r}")
    defaults = Limits()
    known = set(Limits.__dataclass_fields__)
    unknown = sorted(set(value) - known)
    if unknown:
        raise SettingsError(f"io section: unknown limits {unknown}; known limits are {sorted(known)}")
    chosen = {key: value.get(key, getattr(defaults, key)) for key in known}
    for key, number in chosen.items():
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise SettingsError(f"io section: limits.{key} must be a positive int, got {number!r}")
    return Limits(**chosen)


def _optional_bool(value: Any, key: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise SettingsError(f"io section: {key!r} must be true, false or absent, got {value!r}")


def _optional_int(value: Any, key: str) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise SettingsError(f"io section: {key!r} must be a non-negative int or absent, got {value!r}")
