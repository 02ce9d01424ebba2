"""``pixelbox smoke``, ``image``, ``cleanup`` and ``info``: the sandboxes themselves."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pixelbox.cli.command import Command, add_backend_arguments

SMOKE_CODE = """\
from PIL import Image
img = Image.open("{path}")
w, h = img.size
crop = img.crop((w // 4, h // 4, 3 * w // 4, 3 * h // 4))
crop.save("crop.png")
red = sum(p[0] for p in crop.getdata()) / (crop.width * crop.height)
print("input", img.size, "crop", crop.size, "mean red", round(red, 1))
"""


def _smoke_image(folder: Path) -> Path:
    """A 400x300 test card: red square in the middle on a blue ground."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (400, 300), (20, 40, 200))
    ImageDraw.Draw(image).rectangle((100, 75, 300, 225), fill=(230, 30, 30))
    path = folder / "card.png"
    image.save(path)
    return path


def _smoke_targets() -> list[tuple[str, dict[str, Any], bool]]:
    """``(label, sandbox options, must work)`` for every backend and container runtime."""
    from pixelbox.runtime.backends import BACKENDS

    targets = []
    for entry in BACKENDS.entries():
        for runtime in entry.runtimes or (None,):
            overrides = {"backend": entry.name, **({"runtime": runtime} if runtime else {})}
            targets.append((f"{entry.name} {runtime}" if runtime else entry.name, overrides, entry.fallback))
    return targets


def cmd_smoke(args: argparse.Namespace) -> int:
    """Start a sandbox on each backend, crop a generated image, print what came back."""
    from pixelbox.runtime import PixelboxError, Sandbox

    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        image = _smoke_image(Path(tmp))
        for label, overrides, must_work in _smoke_targets():
            started = time.monotonic()
            try:
                with Sandbox(inputs=[image], **overrides) as sandbox:
                    ready = time.monotonic() - started
                    path = f"{sandbox.paths.inputs}/{image.name}"
                    result = sandbox.execute(SMOKE_CODE.format(path=path))
                    saved = len(sandbox.download("crop.png"))
                    net = sandbox.info.isolation.get("network")
                print(
                    f"[{label}] ready in {ready:.2f}s, status={result.status}, {result.stdout.strip()}, "
                    f"crop.png {saved} bytes, network: {net}"
                )
                if result.status != "ok":
                    failures += 1
                    print(result.error.traceback if result.error else result.notices)
            except PixelboxError as exc:
                print(f"[{label}] unavailable: {exc}")
                failures += must_work or args.require_all
    return 1 if failures else 0


def cmd_image(args: argparse.Namespace) -> int:
    """Build the kernel image (or a derived one with more packages) or report its status."""
    from pixelbox.runtime import image

    derived = args.requirements is not None or bool(args.apt)
    if derived or args.tag is not None:
        return _build_derived(args)
    if args.action == "build":
        tag = image.build_kernel_image(force=args.force)
        print(tag)
        return 0
    from pixelbox.runtime.custom_image import derived_images
    from pixelbox.runtime.docker_engine import docker_client

    client = docker_client()
    tag = image.kernel_image_tag()
    present = image.image_present(client)
    report = {"tag": tag, "present": present, "stale": image.stale_images(client), "derived": derived_images(client)}
    print(json.dumps(report, indent=1))
    return 0 if present else 1


def _build_derived(args: argparse.Namespace) -> int:
    """``image build --requirements FILE [--apt PKG ...] --tag NAME``: a derived kernel image."""
    from pixelbox.runtime.custom_image import build_custom_image
    from pixelbox.runtime.image import ImageBuildError

    if args.action != "build" or args.tag is None or args.force:
        raise ImageBuildError(
            "a derived image is made with `pixelbox image build --requirements FILE [--apt PKG ...] --tag NAME` "
            "(--force applies to the kernel image only)"
        )
    requirements = Path(args.requirements) if args.requirements is not None else None
    print(build_custom_image(args.tag, requirements, args.apt))
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    """Remove containers, kernels and directories left by dead pixelbox processes; with ``--cache``,
    bring the restore cache within its byte budget instead."""
    if args.cache:
        return _prune_cache(args.budget, args.dry_run)
    from pixelbox.runtime.cleanup import remove_orphans

    report = remove_orphans(everything=args.all)
    print(json.dumps(report.__dict__, indent=1))
    return 0


def _prune_cache(size: str | None, dry_run: bool) -> int:
    """``cleanup --cache``: what was pruned and kept, and why; exit 1 if an entry had to be refused.
    Without Docker, the current image's export cannot be told apart: only what nobody can use goes."""
    from pixelbox.runtime.backends import cache_prune, restore
    from pixelbox.runtime.errors import PixelboxError

    try:
        limit = cache_prune.parse_size(size) if size is not None else cache_prune.budget()
    except ValueError as exc:
        print(f"pixelbox cleanup: {exc}", file=sys.stderr)
        return 2
    try:
        keep, present = _current_export()
    except (PixelboxError, OSError) as exc:
        print(f"Docker is not reachable ({exc}): only damaged and orphaned entries are pruned", file=sys.stderr)
        keep, present, limit = set(), None, sys.maxsize
    report = cache_prune.prune(restore.CACHE, limit, keep, lambda: present, dry_run)
    print("\n".join(report.lines()))
    return 1 if report.refused else 0


def _current_export() -> tuple[set[str], set[str]]:
    """The export name of the current kernel image (empty if it is not built), and Docker's tagged images."""
    import docker.errors

    from pixelbox.runtime import image
    from pixelbox.runtime.backends import cache_prune
    from pixelbox.runtime.docker_engine import docker_client

    client = docker_client()
    try:
        current = {client.images.get(image.kernel_image_tag()).id.split(":")[-1][:12]}
    except docker.errors.ImageNotFound:
        current = set()
    return current, cache_prune.docker_images(client)


def cmd_info(args: argparse.Namespace) -> int:
    """Start one sandbox and print the isolation facts in force."""
    from pixelbox.runtime import Sandbox

    with Sandbox(backend=args.backend, runtime=args.runtime) as sandbox:
        print(json.dumps(sandbox.info.to_dict(), indent=1, default=str))
    return 0


def _smoke_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--require-all", action="store_true", help="fail if any backend is unavailable")


def _image_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["build", "status"])
    parser.add_argument("--force", action="store_true", help="rebuild the kernel image even if its tag exists")
    parser.add_argument(
        "--requirements",
        metavar="FILE",
        help="build a derived image with these Python packages (wheels fetched on this host; docs/images.md)",
    )
    parser.add_argument(
        "--apt", metavar="PKG", action="append", default=[], help="a Debian package the derived image adds (repeatable)"
    )
    parser.add_argument("--tag", metavar="NAME", help="the derived image's name, for SandboxOptions(image=NAME)")


def _cleanup_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true", help="also remove resources of live processes")
    parser.add_argument(
        "--cache",
        action="store_true",
        help="instead, prune the restore cache (exports, checkpoints) to its byte budget, least recently used "
        "first; entries in use and the current image's export are kept",
    )
    parser.add_argument(
        "--budget",
        metavar="SIZE",
        help="with --cache: the budget, e.g. 4G (default: $PIXELBOX_RESTORE_CACHE_BUDGET, else 4G)",
    )
    parser.add_argument("--dry-run", action="store_true", help="with --cache: only say what would be pruned")


COMMANDS = (
    Command("smoke", "start a sandbox on each backend and crop a generated image", _smoke_arguments, cmd_smoke),
    Command(
        "image",
        "build the kernel image, or a derived one with more packages, or show its status",
        _image_arguments,
        cmd_image,
        description="Build the kernel image for these sources, show its status, or build a derived image: "
        "the kernel image plus the wheels of --requirements and the Debian packages of --apt, installed "
        "without network (docs/images.md).",
    ),
    Command("cleanup", "remove orphaned containers, kernels and workspaces", _cleanup_arguments, cmd_cleanup),
    Command("info", "print a sandbox's backend and isolation facts", add_backend_arguments, cmd_info),
)
