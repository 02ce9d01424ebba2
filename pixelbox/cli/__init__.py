"""The ``pixelbox`` command line: demo, image management, cleanup, sandbox facts."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pixelbox.cli import trace as trace_command

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


def _smoke_targets() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("local", {"backend": "local"}),
        ("docker runc", {"backend": "docker", "runtime": "runc"}),
        ("docker runsc", {"backend": "docker", "runtime": "runsc"}),
    ]


def cmd_smoke(args: argparse.Namespace) -> int:
    """Start a sandbox on each backend, crop a generated image, print what came back."""
    from pixelbox.runtime import PixelboxError, Sandbox

    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        image = _smoke_image(Path(tmp))
        for label, overrides in _smoke_targets():
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
                failures += label == "local" or args.require_all
    return 1 if failures else 0


def cmd_image(args: argparse.Namespace) -> int:
    """Build the kernel image or report its status."""
    from pixelbox.runtime import image

    if args.action == "build":
        tag = image.build_kernel_image(force=args.force)
        print(tag)
        return 0
    from pixelbox.runtime.backends.docker import docker_client

    client = docker_client()
    tag = image.kernel_image_tag()
    present = image.image_present(client)
    print(json.dumps({"tag": tag, "present": present, "stale": image.stale_images(client)}, indent=1))
    return 0 if present else 1


def cmd_cleanup(args: argparse.Namespace) -> int:
    """Remove containers, kernels and directories left by dead pixelbox processes."""
    from pixelbox.runtime.cleanup import remove_orphans

    report = remove_orphans(everything=args.all)
    print(json.dumps(report.__dict__, indent=1))
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    """Start one sandbox and print the isolation facts in force."""
    from pixelbox.runtime import Sandbox

    with Sandbox(backend=args.backend, runtime=args.runtime) as sandbox:
        print(json.dumps(sandbox.info.to_dict(), indent=1, default=str))
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    """Run cells in one sandbox and print status, stdout, events and artifacts of each."""
    return trace_command.run(args)


def cmd_run(args: argparse.Namespace) -> int:
    """Run an agent over tasks in code or atomic mode (see ``pixelbox.cli.run``)."""
    from pixelbox.cli import run as cli_run

    return cli_run.run(args)


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare scored runs side by side (see ``pixelbox.cli.compare``)."""
    from pixelbox.cli import compare as cli_compare

    return cli_compare.run(args)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = argparse.ArgumentParser(prog="pixelbox", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    commands: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
        "smoke": (cmd_smoke, "start a sandbox on each backend and crop a generated image"),
        "image": (cmd_image, "build the kernel image or show its status"),
        "cleanup": (cmd_cleanup, "remove orphaned containers, kernels and workspaces"),
        "info": (cmd_info, "print a sandbox's backend and isolation facts"),
        "trace": (cmd_trace, "run cells in one sandbox and print the operations that executed"),
        "run": (cmd_run, "run an agent over tasks in code (gen) or atomic (atm) mode, resumably"),
        "compare": (cmd_compare, "compare scored runs side by side: aggregates, charts, per-task grid, intervals"),
    }
    parsers = {name: sub.add_parser(name, help=text) for name, (_, text) in commands.items()}
    for name, (func, _) in commands.items():
        parsers[name].set_defaults(func=func)
    parsers["smoke"].add_argument("--require-all", action="store_true", help="fail if any backend is unavailable")
    parsers["image"].add_argument("action", choices=["build", "status"])
    parsers["image"].add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    parsers["cleanup"].add_argument("--all", action="store_true", help="also remove resources of live processes")
    parsers["info"].add_argument("--backend", default="auto", choices=["auto", "docker", "local"])
    parsers["info"].add_argument("--runtime", default="runc", choices=["runc", "runsc"])
    trace_command.add_arguments(parsers["trace"])
    _add_run_arguments(parsers["run"])
    _add_compare_arguments(parsers["compare"])
    _add_harness_commands(sub)
    return parser


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    from pixelbox.cli import run as cli_run

    cli_run.add_arguments(parser)


def _add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    from pixelbox.cli import compare as cli_compare

    cli_compare.add_arguments(parser)


def _add_harness_commands(sub: Any) -> None:
    """``demo``, ``score``, ``report`` and ``export`` (see ``pixelbox.cli.scoring``)."""
    from pixelbox.cli import scoring as cli_score

    cli_score.register(sub)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pixelbox`` script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        from pixelbox.runtime.errors import PixelboxError

        if isinstance(exc, PixelboxError):
            print(f"pixelbox: {exc}", file=sys.stderr)
            return 2
        raise
