"""One options object for every sandbox: backend choice, limits, caps and environment."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from pixelbox.runtime.backends import BACKENDS, backend_choices, runtime_choices
from pixelbox.runtime.errors import OptionsError
from pixelbox.runtime.profiles import profile_spec

BackendName = str
"""``auto`` or a registered backend (``pixelbox.runtime.backends.BACKENDS``)."""
ContainerRuntime = str
"""A container runtime some backend accepts (``runc``, ``runsc``)."""
NetworkMode = Literal["none"]

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

DEFAULT_MEMORY = 2 * 1024**3
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_GRACE_S = 2.0
DEFAULT_TEXT_CAP = 32_000


def parse_size(value: int | str, what: str) -> int:
    """Turn ``512m``, ``2g``, ``1.5GiB`` or a byte count into bytes."""
    if isinstance(value, bool):
        raise OptionsError(f"{what} must be a size such as '512m' or a byte count, not {value!r}")
    if isinstance(value, int):
        number = value
    else:
        match = _SIZE.match(str(value))
        if not match:
            raise OptionsError(f"{what}={value!r} is not a size; write it like '512m', '2g' or 1048576")
        number = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if number <= 0:
        raise OptionsError(f"{what} must be positive, got {value!r}")
    return number


@dataclass(frozen=True)
class SandboxOptions:
    """How a sandbox is built and limited.

    Safe by default: no network, no host environment (only ``env`` reaches the kernel),
    a memory, process and CPU cap, and a default deadline for every execution. ``policy``
    (the RestrictedPython layer) defaults to on for ``local`` and off for ``docker``, where
    the container is the wall (``BackendEntry.container``); set it explicitly to force either
    way. ``workspace_size`` caps everything the kernel can write on the host (workspace, home,
    IPC directory) when the host runs as root; ``None`` lifts the cap.
    """

    backend: BackendName = "auto"
    runtime: ContainerRuntime = "runc"
    image: str | None = None
    memory: int | str = DEFAULT_MEMORY
    cpus: float = 1.0
    pids: int = 256
    timeout: float = DEFAULT_TIMEOUT_S
    grace: float = DEFAULT_GRACE_S
    start_timeout: float = 60.0
    stdout_cap: int = DEFAULT_TEXT_CAP
    stderr_cap: int = DEFAULT_TEXT_CAP
    max_outputs: int = 200
    tmpfs_size: int | str = 256 * 1024**2
    max_file_size: int | str = 1024**3
    workspace_size: int | str | None = 1024**3
    max_open_files: int = 1024
    env: Mapping[str, str] = field(default_factory=dict)
    network: NetworkMode = "none"
    policy: bool | None = None
    trace: bool = True
    audit: bool = False
    """Read each traced cell statically in the background after ``execute`` returns, so that
    ``Sandbox.audit`` is ready at once; auditing works without it, reading on demand."""
    io: Mapping[str, Any] = field(default_factory=dict)
    """The image I/O layer: on unless ``{"enabled": False}``; ``profile`` defaults to ``generic``."""
    allow_modules: tuple[str, ...] = ()
    """Modules the policy lets model code import beyond its allow-list (its ``extra_modules``), e.g.
    ``("sympy", "mpmath")`` for a suite whose tools run sympy code; nothing where the policy is off."""
    fast_start: bool = True
    """Start kernels through the backend's fast path (``Backend.start_fresh``: the local backend
    forks them from a zygote) where it has one; False always starts them cold."""
    artifacts_dir: str | None = None
    """A host directory that keeps a copy of every admitted artifact after ``close()`` (None: none kept)."""

    def __post_init__(self) -> None:
        self._check_choices()
        self._check_numbers()
        self._check_env()
        self._check_io()
        object.__setattr__(self, "memory", parse_size(self.memory, "memory"))
        object.__setattr__(self, "tmpfs_size", parse_size(self.tmpfs_size, "tmpfs_size"))
        object.__setattr__(self, "max_file_size", parse_size(self.max_file_size, "max_file_size"))
        if self.workspace_size is not None:
            object.__setattr__(self, "workspace_size", parse_size(self.workspace_size, "workspace_size"))
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "io", dict(self.io))
        object.__setattr__(self, "allow_modules", _module_names(self.allow_modules))
        if self.artifacts_dir is not None:
            object.__setattr__(self, "artifacts_dir", os.fspath(self.artifacts_dir))

    def _check_choices(self) -> None:
        choices: dict[str, tuple[str, ...]] = {
            "backend": backend_choices(),
            "runtime": runtime_choices(),
            "network": ("none",),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise OptionsError(f"{name}={getattr(self, name)!r} is not supported; choose one of {allowed}")
        if self.image is not None and self.backend in BACKENDS and not BACKENDS.get(self.backend).container:
            raise OptionsError(
                f"image={self.image!r} needs a container backend; the {self.backend} backend runs no image"
            )

    def _check_numbers(self) -> None:
        positive = ("cpus", "timeout", "grace", "start_timeout")
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise OptionsError(f"{name} must be a positive number, got {value!r}")
        if not isinstance(self.fast_start, bool):
            raise OptionsError(f"fast_start must be True or False, got {self.fast_start!r}")
        for name in ("pids", "stdout_cap", "stderr_cap", "max_outputs", "max_open_files"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise OptionsError(f"{name} must be a positive integer, got {value!r}")
        if self.pids < 32:
            raise OptionsError(f"pids={self.pids} is too low for a Jupyter kernel (it needs ~20 threads); use >= 32")

    def _check_env(self) -> None:
        for key, value in dict(self.env).items():
            if not isinstance(key, str) or not _ENV_NAME.match(key):
                raise OptionsError(f"env key {key!r} is not a valid environment variable name")
            if not isinstance(value, str):
                raise OptionsError(
                    f"env[{key!r}] must be a string (got {type(value).__name__}); the host "
                    "environment is never inherited, so pass explicit values"
                )
            if key.startswith("PIXELBOX_"):
                raise OptionsError(f"env key {key!r} is reserved for pixelbox itself")

    def _check_io(self) -> None:
        if not isinstance(self.io, Mapping):
            raise OptionsError(
                f"io must be a mapping such as {{'enabled': True, 'profile': 'generic'}}, got {self.io!r}"
            )
        if not isinstance(self.io.get("enabled", True), bool):
            raise OptionsError(f"io['enabled'] must be True or False, got {self.io['enabled']!r}")
        if self.artifacts_dir is not None and not isinstance(self.artifacts_dir, (str, os.PathLike)):
            raise OptionsError(f"artifacts_dir must be a directory path, got {self.artifacts_dir!r}")
        if "profile" in self.io:
            try:
                profile_spec(self.io["profile"])
            except (LookupError, ValueError, TypeError) as exc:
                raise OptionsError(f"io profile: {exc}") from None

    @property
    def io_enabled(self) -> bool:
        """Whether images are captured: unless the ``io`` section says ``enabled: False``."""
        return bool(self.io.get("enabled", True))

    def policy_enabled(self, backend: str) -> bool:
        """Whether the RestrictedPython policy applies on ``backend`` (a registered backend's name): by
        default only where the backend is no container boundary (``BackendEntry.container``)."""
        if self.policy is not None:
            return self.policy
        return backend not in BACKENDS or not BACKENDS.get(backend).container

    def with_(self, **changes: Any) -> SandboxOptions:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly view, used in ``Sandbox.info`` and traces (env values are withheld)."""
        view = {f.name: getattr(self, f.name) for f in fields(self)}
        view["env"] = sorted(self.env)
        view["io"] = dict(self.io)
        view["allow_modules"] = list(self.allow_modules)
        return view


def _module_names(value: Any) -> tuple[str, ...]:
    """``allow_modules`` as a tuple of dotted module names; anything else is an :class:`OptionsError`."""
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(
        isinstance(n, str) and all(part.isidentifier() for part in n.split(".")) for n in names
    ):
        raise OptionsError(f"allow_modules must be dotted module names such as ('sympy',), got {value!r}")
    return tuple(names)
