"""Applying an image I/O profile in the kernel: the environment variables and preloaded variables
its conventions promise to model code.

The conventions arrive in the config as data (:class:`pixelbox.contract.config.ProfileSpec`); the
kernel knows no profile by name. A profile only decides names, environment variables and
preloaded variable names; capture and path resolution behave the same in every profile.
"""

from __future__ import annotations

import os

from pixelbox.contract.config import ProfileSpec
from pixelbox.kernel.imageio.settings import IOSettings

Profile = ProfileSpec
"""The conventions of one harness family, as the host sent them."""


def environment(profile: Profile, settings: IOSettings) -> dict[str, str]:
    """Environment variables the profile promises to model code.

    Every profile gets the generic ones (``INPUT_IMAGE_PATH``, ``INPUT_IMAGE_PATHS`` joined
    with ``os.pathsep``, ``OUTPUT_DIR``); the profile adds its own names for the artifact
    directory and the first input, and one variable per input when there are several.
    """
    paths = [image.path for image in settings.inputs]
    env = {"OUTPUT_DIR": settings.artifact_dir, "INPUT_IMAGE_PATHS": os.pathsep.join(paths)}
    if paths:
        env["INPUT_IMAGE_PATH"] = paths[0]
    env.update(dict.fromkeys(profile.env_output_dir, settings.artifact_dir))
    if paths:
        env.update(dict.fromkeys(profile.env_first_input, paths[0]))
    if len(paths) > 1 and profile.env_each_input is not None:
        env.update({profile.env_each_input.format(k=k): path for k, path in enumerate(paths, start=1)})
    return env


def input_variable_names(profile: Profile, count: int) -> list[list[str]]:
    """For each input, the user-namespace variables that hold it as a PIL image."""
    each = profile.preload_each
    if profile.preload_each_skips_first:
        names = [[each.format(k=k)] if each is not None and k > 0 else [] for k in range(count)]
    else:
        names = [[each.format(k=k)] if each is not None and count > 1 else [] for k in range(1, count + 1)]
    if names and profile.preload_first is not None:
        names[0].insert(0, profile.preload_first)
    if names:
        names[0].extend(profile.preload_aliases)
    return names


def artifact_variable_name(profile: Profile, index: int) -> str | None:
    """The variable that holds artifact ``index`` after the cell that made it, if the profile binds one."""
    return None if profile.artifact_variable is None else profile.artifact_variable.format(index=index)
