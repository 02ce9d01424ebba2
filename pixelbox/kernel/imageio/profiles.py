"""Harness conventions: how each benchmark family names outputs and hands inputs to model code.

A profile only decides names, environment variables and preloaded variable names; capture
and path resolution behave the same in every profile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pixelbox.kernel.imageio.settings import IOSettings


@dataclass(frozen=True)
class Profile:
    """Naming and input conventions of one harness family.

    ``stem`` is the numbered artifact name prefix (``transformed_image_`` gives
    ``transformed_image_3.png``); ``None`` means no numbering is imposed and saved images
    keep the file name the code chose. ``first_index`` is the number of the first artifact.
    ``download_stem`` names downloaded images where the harness names them apart
    (Agentic-MME: ``downloaded_image_N.png``, N from the same sequence as every other image).
    """

    name: str
    stem: str | None
    first_index: int
    capture_open_figures: bool
    preload: bool
    download_stem: str | None = None

    def numbered_name(self, index: int, ext: str) -> str:
        """The name artifact ``index`` gets under a numbering profile."""
        return f"{self.stem}{index}{ext}"

    def unnamed_name(self, index: int, kind: str) -> str:
        """The name of image ``index`` captured without a name of its own: shown, displayed or
        downloaded (``kind`` as in the artifact record)."""
        if kind == "download" and self.download_stem is not None:
            return f"{self.download_stem}{index}.png"
        return self.numbered_name(index, ".png") if self.stem else f"output_{index}.png"


PROFILES: dict[str, Profile] = {
    "agentic-mme": Profile(
        "agentic-mme",
        "transformed_image_",
        1,
        capture_open_figures=False,
        preload=False,
        download_stem="downloaded_image_",
    ),
    "agentvista": Profile("agentvista", "tool_image_", 1, capture_open_figures=True, preload=True),
    "visualtoolbench": Profile("visualtoolbench", "transformed_image_", 0, capture_open_figures=False, preload=False),
    "generic": Profile("generic", None, 1, capture_open_figures=True, preload=False),
}


def environment(profile: Profile, settings: IOSettings) -> dict[str, str]:
    """Environment variables the profile promises to model code.

    Every profile gets the generic ones (``INPUT_IMAGE_PATH``, ``INPUT_IMAGE_PATHS`` joined
    with ``os.pathsep``, ``OUTPUT_DIR``); Agentic-MME adds its own names, with
    ``ORIGINAL_IMAGE_PATH_K`` (K from 1) for every input of a multi-image task.
    """
    paths = [image.path for image in settings.inputs]
    env = {"OUTPUT_DIR": settings.artifact_dir, "INPUT_IMAGE_PATHS": os.pathsep.join(paths)}
    if paths:
        env["INPUT_IMAGE_PATH"] = paths[0]
    if profile.name == "agentic-mme":
        env["PROCESSED_IMAGE_SAVE_PATH"] = settings.artifact_dir
        if paths:
            env["ORIGINAL_IMAGE_PATH"] = paths[0]
            env["LOCAL_INPUT_IMAGE_PATH"] = paths[0]
        if len(paths) > 1:
            env.update({f"ORIGINAL_IMAGE_PATH_{k}": path for k, path in enumerate(paths, start=1)})
    return env


def input_variable_names(profile: Profile, count: int) -> list[list[str]]:
    """For each input, the user-namespace variables that hold it as a PIL image (AgentVista)."""
    if not profile.preload:
        return [[] for _ in range(count)]
    names = [[f"original_image_{k}"] if count > 1 else [] for k in range(1, count + 1)]
    if names:
        names[0].insert(0, "original_image")
    return names


def artifact_variable_name(profile: Profile, index: int) -> str | None:
    """The variable that holds artifact ``index`` after the cell that made it (AgentVista)."""
    return f"tool_image_{index}" if profile.preload else None
