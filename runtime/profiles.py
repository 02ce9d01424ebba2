"""Image I/O profiles by name: the conventions each benchmark family's model code expects.

A :class:`Profile` carries two things. Its :class:`~pixelbox.contract.config.ProfileSpec` is what
the kernel applies (artifact names, environment variables, preloaded PIL variables); the sandbox
sends it in the kernel config, so a new profile needs no image rebuild. Its :class:`PromptFacts`
are what prompts tell the model about those conventions. ``SandboxOptions.io["profile"]``, every
``--profile`` choice and the profile table of ``docs/imageio.md`` are read from :data:`PROFILES`;
a new profile is one ``PROFILES.add`` below (or in the module of the suite that needs it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pixelbox.contract.config import ProfileError, ProfileSpec
from pixelbox.registry import Registry


@dataclass(frozen=True)
class PromptFacts:
    """How a prompt states the profile's conventions (the ``$input_env``, ``$output_env`` and
    ``$output_name`` placeholders of ``pixelbox.harness.episode.prompts``)."""

    input_env: str
    output_env: str
    output_name: str

    def values(self) -> dict[str, str]:
        """The placeholders' values."""
        return {"input_env": self.input_env, "output_env": self.output_env, "output_name": self.output_name}


@dataclass(frozen=True)
class Profile:
    """One named profile: the conventions the kernel applies and what prompts say about them."""

    spec: ProfileSpec
    facts: PromptFacts

    @property
    def name(self) -> str:
        """The profile's name (``--profile``, ``io={"profile": NAME}``)."""
        return self.spec.name


PROFILES: Registry[Profile] = Registry("image I/O profile")
DEFAULT_PROFILE = "generic"
"""The profile of a sandbox whose ``io`` names none (the kernel's own default conventions)."""


def register(profile: Profile) -> Profile:
    """Add ``profile`` under its name."""
    return PROFILES.add(profile.name, profile)


register(
    Profile(
        ProfileSpec(
            "agentic-mme",
            stem="transformed_image_",
            first_index=1,
            capture_open_figures=False,
            download_stem="downloaded_image_",
            env_output_dir=("PROCESSED_IMAGE_SAVE_PATH",),
            env_first_input=("ORIGINAL_IMAGE_PATH", "LOCAL_INPUT_IMAGE_PATH"),
            env_each_input="ORIGINAL_IMAGE_PATH_{k}",
            env_latest_image="LOCAL_INPUT_IMAGE_PATH",
        ),
        PromptFacts(
            "Image 0 is at the path in the environment variable ORIGINAL_IMAGE_PATH (ORIGINAL_IMAGE_PATH_1, _2, "
            "... when there are several); LOCAL_INPUT_IMAGE_PATH is the latest image.",
            "the directory in the environment variable PROCESSED_IMAGE_SAVE_PATH",
            "image N is saved as transformed_image_N.png",
        ),
    )
)
register(
    Profile(
        ProfileSpec(
            "agentvista",
            stem="tool_image_",
            first_index=1,
            capture_open_figures=True,
            preload_first="original_image",
            preload_each="original_image_{k}",
            artifact_variable="tool_image_{index}",
            preload_each_skips_first=True,
            preload_aliases=("image",),
            rebind_each_cell=True,
        ),
        PromptFacts(
            "They are preloaded as PIL images: original_image (also `image`; the second and later images are "
            "original_image_1, original_image_2, ...); images you produce become tool_image_N.",
            "the working directory (or just show them with plt.show())",
            "image N becomes tool_image_N",
        ),
    )
)
register(
    Profile(
        ProfileSpec(
            "deepeyes",
            stem=None,  # the DeepEyes/Thyme agents name each turn's saves image_{K+1}.png per cell (save_as)
            first_index=1,
            capture_open_figures=False,
            env_output_dir=("PROCESSED_IMAGE_SAVE_PATH",),
            env_first_input=("ORIGINAL_IMAGE_PATH",),
        ),
        PromptFacts(
            "Image 0 is image_0.png in the working directory (also at the path in ORIGINAL_IMAGE_PATH).",
            "the working directory",
            "what turn N saves is image_N.png (other files keep their names)",
        ),
    )
)
register(
    Profile(
        ProfileSpec("visualtoolbench", stem="transformed_image_", first_index=0, capture_open_figures=False),
        PromptFacts(
            "Their paths are in the environment variable INPUT_IMAGE_PATHS (os.pathsep-separated).",
            "the directory in the environment variable OUTPUT_DIR",
            "image N is saved as transformed_image_N.png",
        ),
    )
)
register(
    Profile(
        ProfileSpec(DEFAULT_PROFILE, stem=None, first_index=1, capture_open_figures=True),
        PromptFacts(
            "Their paths are in the list input_image_paths and in INPUT_IMAGE_PATH (the first).",
            "the working directory (the environment variable OUTPUT_DIR)",
            "the file keeps the name you give it",
        ),
    )
)


def profile_spec(value: str | Mapping[str, Any] | ProfileSpec) -> ProfileSpec:
    """The conventions ``io["profile"]`` stands for: a registered name, a :class:`ProfileSpec`, or
    its dict form (a custom profile, unregistered). Raises ``UnknownEntry`` or ``ProfileError``."""
    if isinstance(value, ProfileSpec):
        return value
    if isinstance(value, Mapping):
        return ProfileSpec.from_dict(value)
    return PROFILES.get(value).spec


def describe(spec: ProfileSpec) -> dict[str, str]:
    """A profile's conventions in words: artifact names, inputs, open figures (``docs/imageio.md``)."""
    first = f"N from {spec.first_index}"
    names = (
        f"`{spec.stem}N.ext`, {first}"
        if spec.stem
        else "the name the code chose; `stem_N.ext` if it is taken; `output_N.png` for shown images"
    )
    if spec.download_stem:
        names += f"; downloads `{spec.download_stem}N.png`"
    inputs = [f"`{name}` (= artifact dir)" for name in spec.env_output_dir]
    inputs += [f"`{name}` (image 0)" for name in spec.env_first_input if name != spec.env_latest_image]
    if spec.env_each_input:
        inputs.append(f"`{spec.env_each_input.format(k='K')}` (K from 1, multi-image)")
    if spec.env_latest_image:
        inputs.append(f"`{spec.env_latest_image}` (latest image, updated after each cell)")
    if spec.preload_first:
        each = ""
        if spec.preload_each:
            which = "input K, K from 1" if spec.preload_each_skips_first else "K from 1, when there are several"
            each = f" (+ `{spec.preload_each.format(k='K')}`, {which})"
        aliases = "".join(f", also `{alias}`" for alias in spec.preload_aliases)
        inputs.append(f"PIL variables `{spec.preload_first}`{aliases}{each}")
    if spec.rebind_each_cell:
        inputs.append("set again before every cell")
    if spec.artifact_variable:
        inputs.append(f"each artifact becomes `{spec.artifact_variable.format(index='N')}` after its cell")
    return {
        "names": names,
        "inputs": ", ".join(inputs) or "the generic variables only",
        "figures": "captured" if spec.capture_open_figures else "closed, not captured",
    }


__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "Profile",
    "ProfileError",
    "PromptFacts",
    "describe",
    "profile_spec",
    "register",
]
