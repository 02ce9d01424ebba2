"""``pixelbox mcp``: serve one sandbox over the Model Context Protocol (the ``mcp`` extra)."""

from __future__ import annotations

import argparse
import sys

from pixelbox.cli.command import Command, add_backend_arguments, add_profile_argument

DEFAULT_PORT = 8765


def configure(parser: argparse.ArgumentParser) -> None:
    """The transport, where HTTP listens, and the sandbox's backend, profile, limits and input images."""
    from pixelbox.runtime.options import DEFAULT_TIMEOUT_S

    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default; for a client that starts the server) or streamable HTTP",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address: loopback only (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT}; 0 picks a free one)"
    )
    add_backend_arguments(parser)
    add_profile_argument(parser, "generic", "image I/O profile: inputs and image capture (default: generic)")
    parser.add_argument("--no-io", action="store_true", help="turn image capture off")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="deadline of each run_code call, seconds"
    )
    parser.add_argument("--memory", default="2g", help="the sandbox's memory limit (default 2g)")
    parser.add_argument("--input", action="append", default=[], metavar="IMAGE", help="an input image (repeatable)")


def run(args: argparse.Namespace) -> int:
    """Start the sandbox and serve it until the client hangs up or the process is stopped."""
    try:
        from pixelbox.plugins.mcp_server import check_loopback, serve
    except ImportError as exc:
        print(f"pixelbox mcp: needs the mcp extra (pip install 'pixelbox[mcp]'): {exc}", file=sys.stderr)
        return 2
    from pixelbox.runtime.sandbox import Sandbox

    if args.transport == "http":
        check_loopback(args.host)
    io = {"enabled": False} if args.no_io else {"enabled": True, "profile": args.profile}
    options = {"backend": args.backend, "runtime": args.runtime, "timeout": args.timeout, "memory": args.memory}
    with Sandbox(inputs=args.input, io=io, **options) as sandbox:
        serve(sandbox, args.transport, args.host, args.port)
    return 0


COMMANDS = (
    Command(
        "mcp",
        "serve a sandbox over the Model Context Protocol (stdio, or streamable HTTP on loopback)",
        configure,
        run,
        description=(
            "Tools: run_code (output and captured images), upload_image, list_artifacts, get_artifact "
            "(image content), get_operations (the executed operations). Needs the mcp extra."
        ),
    ),
)
