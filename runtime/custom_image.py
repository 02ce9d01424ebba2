"""Derived kernel images: the pixelbox kernel image plus Python wheels and Debian packages.

``pixelbox image build --requirements FILE [--apt PKG ...] --tag NAME`` (:func:`build_custom_image`)
makes an image that ``SandboxOptions(image=NAME)`` runs, without any image registry and with no
network inside the build:

1. the wheels of ``FILE`` are downloaded on the host with pip from the configured package index,
   for the kernel's CPython 3.11 on manylinux x86_64, constrained to the kernel's own pins
   (``images/kernel/requirements.txt``) so the packages the runtime needs never change version;
2. the kernel image for the current sources is built if it is missing (:mod:`.image`);
3. the Debian packages are resolved by the host's apt against the kernel image's own ``dpkg``
   status (as the kernel image's own Debian packages are) and downloaded, so exactly what the
   image lacks comes down;
4. ``docker build`` runs with ``network_mode=none``: a first stage installs the packages (``dpkg -i``,
   then pip from its wheel, as in the kernel image) and keeps only the files that changed; the
   image is the kernel image plus that one layer, still uid 1000, labelled with the kernel image
   it extends and how to rebuild it.

``docs/images.md`` states what any kernel image must contain; the Docker backend refuses a derived
image built on another version of the in-kernel package, naming the command that rebuilds it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pixelbox.runtime import image as kernel_image
from pixelbox.runtime.image import IMAGE_REPOSITORY, ImageBuildError

if TYPE_CHECKING:
    import docker

LABEL_KERNEL = "pixelbox.image.kernel"
"""The kernel image a derived image extends (``pixelbox-kernel:<hash12>``)."""
LABEL_REBUILD = "pixelbox.image.rebuild"
"""The command line that rebuilds a derived image (shown when it is stale)."""
LABEL_PACKAGES = "pixelbox.image.packages"
"""JSON: the requirement lines and Debian packages a derived image adds."""

_COMPONENT = r"[a-z0-9]+(?:[._-][a-z0-9]+)*"
_TAG = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?$")
_APT_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+(?:=[A-Za-z0-9.+~:-]+)?$")
_NO_DISTRIBUTION = re.compile(r"No matching distribution found for (\S+)")
_APT_MISSING = re.compile(r"Unable to locate package (\S+)|Package '?(\S+?)'? has no installation candidate")

DOCKERFILE = """\
# A derived pixelbox kernel image, assembled by pixelbox.runtime.custom_image (see its docstring).
ARG BASE
FROM ${BASE} AS build
USER 0
COPY . /tmp/build/
RUN set -eu; touch /tmp/build/stamp; mkdir /delta; \\
    if ls /tmp/build/debs/*.deb >/dev/null 2>&1; then dpkg -i /tmp/build/debs/*.deb; fi; \\
    if [ -s /tmp/build/requirements.txt ]; then \\
        set -- /tmp/build/wheels/pip-*.whl; \\
        python "$1/pip" install --no-index --no-cache-dir --disable-pip-version-check \\
            --find-links /tmp/build/wheels -c /tmp/build/constraints.txt -r /tmp/build/requirements.txt; \\
        python -m compileall -q /opt/venv/lib/python3.11/site-packages; \\
    fi; \\
    find / -xdev \\( -path /tmp -o -path /delta -o -path /proc -o -path /sys -o -path /dev \\
        -o -path /root/.cache -o -path /etc/hosts -o -path /etc/hostname -o -path /etc/resolv.conf \\
        -o -path /var/cache/debconf \\) -prune -o -cnewer /tmp/build/stamp -print0 \\
      | tar --null --no-recursion -T - -cf - | tar -C /delta -xpf -

FROM ${BASE}
COPY --from=build /delta/ /
USER 1000:1000
"""
"""Both stages start from the kernel image; only the files the installs changed reach the result."""


def _check_tag(tag: str) -> None:
    if not _TAG.match(tag):
        raise ImageBuildError(f"--tag {tag!r} is not a Docker image name; write it like 'mykernel:1' or 'team/kernel'")
    if tag.split(":", 1)[0] == IMAGE_REPOSITORY:
        raise ImageBuildError(f"{IMAGE_REPOSITORY} is the base kernel's repository; tag a derived image another name")


def _read_requirements(path: Path | None) -> list[str]:
    """The requirement lines of ``path`` (comments and blanks dropped), checked for what pip cannot take offline."""
    if path is None:
        return []
    if not path.is_file():
        raise ImageBuildError(f"requirements file {str(path)!r} does not exist (or is not a file)")
    lines = []
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            raise ImageBuildError(
                f"{path}: {line!r}: only requirement lines are supported (no -r, -e, -c or index options); "
                "the package index is pip's configured one"
            )
        lines.append(line)
    if not lines:
        raise ImageBuildError(f"requirements file {str(path)!r} names no package")
    return lines


def _check_apt_names(packages: Sequence[str]) -> None:
    for name in packages:
        if not _APT_NAME.match(name):
            what = f"--apt {name!r} is not a Debian package name"
            raise ImageBuildError(f"{what} (such as fonts-liberation2 or jq=1.6-2.1)")


def _download_wheels(lines: list[str], dest: Path, log: Callable[[str], None]) -> None:
    """pip-download the wheels of ``lines`` (and pip's own) into ``dest`` under the kernel's pins."""
    recipe = kernel_image.recipe_dir()
    (dest / "requirements.txt").write_text("\n".join(lines) + "\n")
    shutil.copyfile(recipe / "requirements.txt", dest / "constraints.txt")
    log(f"wheels: downloading {', '.join(lines)} for CPython 3.11 (pip's configured index)")
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    command += [*kernel_image.pip_platform_args(), "--dest", str(dest / "wheels")]
    command += ["-c", str(dest / "constraints.txt"), "-r", str(dest / "requirements.txt")]
    command += ["-r", str(recipe / "build-requirements.txt")]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return
    missing = _NO_DISTRIBUTION.search(result.stderr)
    if missing:
        raise ImageBuildError(
            f"no CPython 3.11 manylinux x86_64 wheel of {missing.group(1)!r} in the configured package index: "
            "an unknown package, a version that does not exist, a package published only as source, or one "
            f"that conflicts with the kernel's pinned packages ({recipe / 'requirements.txt'})"
        )
    detail = result.stderr.strip()[-2000:]
    raise ImageBuildError(f"pip could not download the wheels (exit {result.returncode}):\n{detail}")


def _download_debs(
    client: docker.DockerClient, base: str, packages: Sequence[str], dest: Path, log: Callable[[str], None]
) -> None:
    """apt-get the ``.deb`` files ``packages`` need on top of ``base`` into ``dest/debs``."""
    log(f"debs: resolving {', '.join(packages)} against {base}'s installed packages")
    status = kernel_image.base_dpkg_status(client, base)
    try:
        wanted = kernel_image.resolve_debian_packages(status, list(packages))
    except ImageBuildError as exc:
        missing = _APT_MISSING.search(str(exc))
        if missing is None:
            raise
        raise ImageBuildError(
            f"Debian has no package {missing.group(1) or missing.group(2)!r} for this host's sources "
            f"(apt-get: {missing.group(0)}); check the name with `apt-cache search`, and run `apt-get update` "
            "if the package lists are old"
        ) from None
    (dest / "debs").mkdir()
    if wanted:
        kernel_image.run_apt(["apt-get", "download", *wanted], dest / "debs", "downloading the Debian packages")
    log(f"debs: {', '.join(wanted) or 'all present in the kernel image already'}")


def _rebuild_command(requirements: Path | None, apt: Sequence[str], tag: str) -> str:
    parts = ["pixelbox", "image", "build"]
    if requirements is not None:
        parts += ["--requirements", str(requirements.resolve())]
    for name in apt:
        parts += ["--apt", name]
    return " ".join([*parts, "--tag", tag])


def build_custom_image(
    tag: str,
    requirements: Path | None = None,
    apt: Sequence[str] = (),
    *,
    log: Callable[[str], None] = print,
) -> str:
    """Build ``tag``: the current kernel image plus ``requirements``' wheels and the ``apt`` packages.

    Bad input (a missing or empty requirements file, an unknown package) fails before anything
    is built, with an :class:`~pixelbox.runtime.image.ImageBuildError` naming it. Returns ``tag``.
    """
    _check_tag(tag)
    _check_apt_names(apt)
    lines = _read_requirements(requirements)
    if not lines and not apt:
        raise ImageBuildError("a derived image needs --requirements FILE, --apt PKG or both")
    with tempfile.TemporaryDirectory(prefix="pixelbox-custom-") as work:
        context = Path(work)
        (context / "wheels").mkdir()
        if lines:
            _download_wheels(lines, context, log)
        else:
            (context / "requirements.txt").write_text("")
        base = kernel_image.build_kernel_image(log=log)
        client = kernel_image.engine()
        if apt:
            _download_debs(client, base, apt, context, log)
        (context / "Dockerfile").write_text(DOCKERFILE)
        labels = {
            LABEL_KERNEL: base,
            LABEL_REBUILD: _rebuild_command(requirements, apt, tag),
            LABEL_PACKAGES: json.dumps({"requirements": lines, "apt": list(apt)}),
        }
        log(f"building {tag} on {base} (no network)")
        kernel_image.stream_build(client, context, tag, {"BASE": base}, labels, log)
    if not kernel_image.image_exists(client, tag):
        raise ImageBuildError(f"docker build reported success but {tag} is missing")
    log(f"built {tag}")
    return tag


def stale_custom_image(labels: dict[str, str] | None) -> str | None:
    """Why a derived image (by its labels) cannot run with these sources, or None if it can."""
    labels = labels or {}
    built_on = labels.get(LABEL_KERNEL)
    if not built_on:
        return None
    current = kernel_image.kernel_image_tag()
    if built_on == current:
        return None
    rebuild = labels.get(LABEL_REBUILD, "pixelbox image build ... --tag NAME")
    return f"it extends {built_on}, but this pixelbox's kernel image is {current}; rebuild it with `{rebuild}`"


def derived_images(client: docker.DockerClient) -> list[dict[str, object]]:
    """Every derived image in the engine: its tags, what it adds, and whether these sources can run it."""
    found = []
    for image in client.images.list(filters={"label": LABEL_KERNEL}):
        labels = image.labels or {}
        problem = stale_custom_image(labels)
        found.append(
            {
                "tags": sorted(image.tags),
                "extends": labels.get(LABEL_KERNEL),
                "adds": json.loads(labels.get(LABEL_PACKAGES, "{}")),
                "current": problem is None,
                "rebuild": labels.get(LABEL_REBUILD),
            }
        )
    return sorted(found, key=lambda entry: str(entry["tags"]))
