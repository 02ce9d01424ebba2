"""The kernel container image: its content-hash tag, and the one build that makes it.

The tag is ``pixelbox-kernel:<12 hex>``, the start of a SHA-256 over every file that defines the
image: the recipe in ``pixelbox/images/kernel/`` and the in-kernel package (``pixelbox/__init__.py``,
the whole ``pixelbox/kernel`` tree and the host-kernel contract ``pixelbox/contract``). A changed
recipe or kernel package therefore means a new tag, and an older image is detected (and named) by a
tag mismatch, never by guessing.

The build needs no registry: Python wheels are downloaded from PyPI on the host into a cache and
handed to ``docker build`` (run with no network); so are the Debian packages the image adds to its
base (``debian-packages.txt``, e.g. tesseract), resolved by the host's apt against the base image's
own package list and installed in the build with dpkg. The base is ``python:3.11-slim-bookworm`` where
it can be pulled, else a Debian root filesystem made with debootstrap and ``docker import``-ed
once, cached under its own content-hash tag.

Run ``python -m pixelbox.runtime.image build|status|tag`` (``make image`` builds).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pixelbox
import pixelbox.images
from pixelbox.runtime.docker_engine import docker_client
from pixelbox.runtime.errors import BackendUnavailable, PixelboxError

if TYPE_CHECKING:
    import docker

IMAGE_REPOSITORY = "pixelbox-kernel"
"""Repository name of every kernel image; the tag is the content hash."""

BASE_REPOSITORY = "pixelbox-kernel-base"
"""Repository of the offline (debootstrap) base, tagged by the hash of its script."""

PUBLIC_BASE = "python:3.11-slim-bookworm"
"""The preferred base, used when it is present locally or can be pulled."""

BUILD_COMMAND = "make image"
"""The one shell command (from the repository root) that builds the kernel image."""

LABEL_VERSION = "pixelbox.kernel.version"
LABEL_HASH = "pixelbox.image.hash"
LABEL_BASE = "pixelbox.image.base"

BASE_ENV_VAR = "PIXELBOX_KERNEL_BASE"
"""Overrides the base choice: ``debootstrap`` (skip pulling) or any image reference."""

CACHE_ENV_VAR = "PIXELBOX_CACHE_DIR"

PULL_TIMEOUT_S = 10
"""Longest silence tolerated from a base-image pull before giving up (a blocked registry
answers within a second; a working one streams progress)."""

BOOKWORM_GLIBC_MINOR = 36
"""glibc 2.36 in bookworm: the newest manylinux wheels the image can run."""

_EXCLUDED_PARTS = {"__pycache__"}
_EXCLUDED_SUFFIXES = {".pyc", ".pyo"}


class ImageBuildError(PixelboxError):
    """The kernel image could not be built; the message says which step failed and what to do."""


def recipe_dir() -> Path:
    """The directory holding the image recipe (Dockerfile, requirements, base script)."""
    return Path(pixelbox.images.__file__).resolve().parent / "kernel"


KERNEL_PACKAGES = ("contract", "kernel")
"""The subpackages of ``pixelbox`` that run inside the kernel and so go into the image."""


def _kernel_package_files() -> list[tuple[str, Path]]:
    """``(path inside the image's lib dir, file)`` for the in-kernel package and the contract, sorted."""
    top = Path(pixelbox.__file__).resolve()
    files = [("pixelbox/__init__.py", top)]
    for package in KERNEL_PACKAGES:
        package_dir = top.parent / package
        for path in sorted(package_dir.rglob("*")):
            relative = path.relative_to(package_dir)
            if not path.is_file() or _EXCLUDED_PARTS & set(relative.parts):
                continue
            if path.suffix in _EXCLUDED_SUFFIXES:
                continue
            files.append((f"pixelbox/{package}/{relative.as_posix()}", path))
    return files


def _recipe_files() -> list[tuple[str, Path]]:
    """``(name, file)`` for each recipe file, sorted."""
    return [
        (f"images/kernel/{path.name}", path)
        for path in sorted(recipe_dir().iterdir())
        if path.is_file() and path.suffix not in _EXCLUDED_SUFFIXES
    ]


def _hashed_files() -> list[tuple[str, Path]]:
    return sorted(_recipe_files() + _kernel_package_files())


def image_definition_files() -> list[Path]:
    """Every file whose bytes define the image (recipe and in-kernel package), in hash order."""
    return [path for _, path in _hashed_files()]


def _read(entries: list[tuple[str, Path]]) -> dict[str, bytes]:
    """Each entry's bytes, read once, so a hash and a build context see the same content."""
    return {name: path.read_bytes() for name, path in entries}


def _digest(contents: dict[str, bytes]) -> str:
    """SHA-256 over ``name NUL size NUL bytes`` of each entry in name order: names and bytes count."""
    digest = hashlib.sha256()
    for name in sorted(contents):
        data = contents[name]
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def image_hash() -> str:
    """The full content hash of the image definition (the tag is its first 12 hex digits)."""
    return _digest(_read(_hashed_files()))


def _tag_for(digest: str) -> str:
    return f"{IMAGE_REPOSITORY}:{digest[:12]}"


def kernel_image_tag() -> str:
    """``pixelbox-kernel:<hash12>`` for the current sources; reads files only, never Docker."""
    return _tag_for(image_hash())


def image_exists(client: docker.DockerClient, reference: str) -> bool:
    import docker.errors

    try:
        client.images.get(reference)
    except docker.errors.ImageNotFound:
        return False
    return True


def image_present(client: docker.DockerClient) -> bool:
    """Whether the image for the current sources is in the engine's image store."""
    return image_exists(client, kernel_image_tag())


def stale_images(client: docker.DockerClient) -> list[str]:
    """Tags of ``pixelbox-kernel`` images built from other sources (older or newer), sorted."""
    current = kernel_image_tag()
    tags = {tag for image in client.images.list(name=IMAGE_REPOSITORY) for tag in image.tags}
    return sorted(tag for tag in tags if tag.startswith(f"{IMAGE_REPOSITORY}:") and tag != current)


def engine(timeout: int | None = None) -> docker.DockerClient:
    """The engine client (:func:`~pixelbox.runtime.docker_engine.docker_client`), its failure as a build error."""
    try:
        client: docker.DockerClient = docker_client(timeout)
    except BackendUnavailable as exc:
        raise ImageBuildError(str(exc)) from None
    return client


def cache_dir() -> Path:
    """Where downloaded wheels and the build lock live (``$PIXELBOX_CACHE_DIR`` overrides)."""
    configured = os.environ.get(CACHE_ENV_VAR)
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pixelbox"


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    """Serializes builds on this machine (two test sessions may both find the image missing)."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with (root / "build.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def pip_platform_args() -> list[str]:
    """Ask pip for CPython 3.11 x86_64 wheels any bookworm system can run, whatever the host."""
    args = ["--only-binary=:all:", "--implementation", "cp", "--python-version", "3.11", "--abi", "cp311"]
    for minor in range(BOOKWORM_GLIBC_MINOR, 4, -1):
        args += ["--platform", f"manylinux_2_{minor}_x86_64"]
    for legacy in ("manylinux2014", "manylinux2010", "manylinux1"):
        args += ["--platform", f"{legacy}_x86_64"]
    return args


def _requirement_files() -> list[Path]:
    return [recipe_dir() / "requirements.txt", recipe_dir() / "build-requirements.txt"]


def _cached(kind: str, key: str, fill: Callable[[Path], None], log: Callable[[str], None]) -> Path:
    """``cache_dir()/kind/key``, filled once by ``fill(directory)``; a failed fill leaves nothing behind."""
    target = cache_dir() / kind / key
    if target.is_dir():
        log(f"{kind}: cached in {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=target.parent))
    try:
        fill(partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    partial.rename(target)
    return target


def _ensure_wheels(log: Callable[[str], None]) -> Path:
    """The wheel directory for the pinned requirements, downloading it once per requirements hash."""
    key = _digest(_read([(path.name, path) for path in _requirement_files()]))[:16]
    return _cached("wheels", key, lambda directory: _download_wheels(directory, log), log)


def _download_wheels(directory: Path, log: Callable[[str], None]) -> None:
    log("wheels: downloading the kernel's Python packages from PyPI (once per requirements change)")
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    command += [*pip_platform_args(), "--dest", str(directory)]
    for path in _requirement_files():
        command += ["-r", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ImageBuildError(
            f"pip could not download the kernel's wheels (exit {result.returncode}):\n"
            f"{result.stderr.strip()[-3000:]}\nCheck that PyPI is reachable and that every pin in "
            f"{recipe_dir() / 'requirements.txt'} has a CPython 3.11 manylinux x86_64 wheel."
        )


def _debian_packages() -> list[str]:
    """The pinned ``name=version`` lines of ``debian-packages.txt`` (comments and blanks dropped)."""
    lines = (recipe_dir() / "debian-packages.txt").read_text().splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def base_dpkg_status(client: docker.DockerClient, base: str) -> bytes:
    """The base image's ``/var/lib/dpkg/status`` (read from a created, never started, container)."""
    import io
    import tarfile

    container = client.containers.create(base, command=["true"], network_disabled=True)
    try:
        chunks, _ = container.get_archive("/var/lib/dpkg/status")
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as archive:
            member = archive.extractfile("status")
            assert member is not None
            return member.read()
    finally:
        container.remove(force=True)


def run_apt(command: list[str], cwd: Path, what: str) -> str:
    """Run an apt command on the host; its failure is an :class:`ImageBuildError` saying what to do."""
    if shutil.which(command[0]) is None:
        raise ImageBuildError(f"{what} needs {command[0]} (a Debian host); the kernel image adds Debian packages")
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ImageBuildError(
            f"{what} failed (exit {result.returncode}):\n{result.stderr.strip()[-2000:]}\n"
            "The host must be Debian bookworm with a reachable mirror (run `apt-get update` as root); "
            f"the pins are in {recipe_dir() / 'debian-packages.txt'}."
        )
    return result.stdout


def resolve_debian_packages(status: bytes, packages: list[str]) -> list[str]:
    """``name=version`` of every package apt would install for ``packages`` on a system with ``status``."""
    with tempfile.TemporaryDirectory(prefix="pixelbox-apt-") as work:
        status_file = Path(work) / "status"
        status_file.write_bytes(status)
        options = ["-o", f"Dir::State::status={status_file}", "-o", "Debug::NoLocking=1"]
        command = ["apt-get", "-s", *options, "install", "--no-install-recommends", *packages]
        simulated = run_apt(command, Path(work), "resolving the kernel's Debian packages with apt")
    found = re.findall(r"^Inst (\S+) (?:\[[^\]]*\] )?\((\S+)", simulated, flags=re.MULTILINE)
    return sorted(f"{name.split(':')[0]}={version}" for name, version in found)


def _ensure_debs(client: docker.DockerClient, base: str, log: Callable[[str], None]) -> Path:
    """The .deb files the image adds to ``base``, downloaded once per resolved set of versions."""
    wanted = resolve_debian_packages(base_dpkg_status(client, base), _debian_packages())
    key = hashlib.sha256("\n".join([base, *wanted]).encode()).hexdigest()[:16]

    def download(directory: Path) -> None:
        log(f"debs: downloading {len(wanted)} Debian packages with apt (once per version change)")
        if wanted:
            run_apt(["apt-get", "download", *wanted], directory, "downloading the kernel's Debian packages")

    return _cached("debs", key, download, log)


def _link_or_copy(source: Path, destination: Path) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def _assemble_context(context: Path, snapshot: dict[str, bytes], wheels: Path, debs: Path) -> None:
    """Lay out the build context the Dockerfile expects (see its header) from ``snapshot``."""
    for name, data in snapshot.items():
        relative = name.removeprefix("images/kernel/")
        if relative in ("Dockerfile", "requirements.txt") or name.startswith("pixelbox/"):
            destination = context / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(data)
    (context / "wheels").mkdir()
    for wheel in sorted(wheels.glob("*.whl")):
        _link_or_copy(wheel, context / "wheels" / wheel.name)
    (context / "debs").mkdir()
    for deb in sorted(debs.glob("*.deb")):
        _link_or_copy(deb, context / "debs" / deb.name)


def _base_script() -> Path:
    return recipe_dir() / "base-rootfs.sh"


def _offline_base_tag() -> str:
    return f"{BASE_REPOSITORY}:{_digest(_read([('base-rootfs.sh', _base_script())]))[:12]}"


def _try_pull(reference: str, log: Callable[[str], None]) -> bool:
    """Pull ``reference``, giving up quickly when no registry answers."""
    import docker.errors
    import requests.exceptions

    log(f"base: trying to pull {reference}")
    client = engine(timeout=PULL_TIMEOUT_S)
    repository, _, tag = reference.partition(":")
    try:
        client.images.pull(repository, tag=tag or "latest")
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        log(f"base: cannot pull {reference} ({str(exc).splitlines()[0][:200]})")
        return False
    return True


def _run_logged(command: list[str], log: Callable[[str], None]) -> int:
    """Run ``command``, passing each line it prints to ``log``; return its exit code."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            log(line.rstrip())
    return process.returncode


def _make_offline_base(client: docker.DockerClient, tag: str, log: Callable[[str], None]) -> None:
    """Run the debootstrap script and import its root filesystem as ``tag``."""
    if os.geteuid() != 0:
        raise ImageBuildError(
            "no Python base image can be pulled, and the offline base needs root to run debootstrap: "
            f"run `sudo {BUILD_COMMAND}` (or scripts/setup.sh as root)"
        )
    log(f"base: building {tag} with debootstrap (a few minutes, once)")
    with tempfile.TemporaryDirectory(prefix="pixelbox-base-") as work:
        archive = Path(work) / "rootfs.tar"
        returncode = _run_logged(["bash", str(_base_script()), str(archive)], log)
        if returncode != 0:
            raise ImageBuildError(
                f"{_base_script().name} failed (exit {returncode}); see its output above. "
                "It needs root, debootstrap (apt-get install debootstrap) and a reachable Debian mirror "
                "(set PIXELBOX_DEBIAN_MIRROR to choose one)."
            )
        repository, _, version = tag.partition(":")
        changes = [
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "ENV LANG=C.UTF-8",
            'CMD ["/bin/bash"]',
        ]
        client.api.import_image_from_file(str(archive), repository=repository, tag=version, changes=changes)
    log(f"base: imported {tag}")


def _ensure_base(client: docker.DockerClient, log: Callable[[str], None]) -> str:
    """The base image reference to build on, making or pulling it if needed."""
    choice = os.environ.get(BASE_ENV_VAR, "")
    if choice and choice != "debootstrap":
        if not image_exists(client, choice) and not _try_pull(choice, log):
            raise ImageBuildError(f"{BASE_ENV_VAR}={choice} names an image that is not present and cannot be pulled")
        return choice
    if choice != "debootstrap" and (image_exists(client, PUBLIC_BASE) or _try_pull(PUBLIC_BASE, log)):
        return PUBLIC_BASE
    tag = _offline_base_tag()
    if not image_exists(client, tag):
        _make_offline_base(client, tag, log)
    log(f"base: {tag} (debootstrapped bookworm)")
    return tag


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_BUILD_NOISE = ("--->", "Removing intermediate container")


def _plain(text: str) -> str:
    """Build output without colour codes or trailing whitespace."""
    return _ANSI.sub("", text).rstrip()


def stream_build(
    client: docker.DockerClient,
    context: Path,
    tag: str,
    buildargs: dict[str, str],
    labels: dict[str, str],
    log: Callable[[str], None],
) -> None:
    """Run ``docker build`` of ``context`` as ``tag`` with no network, relaying its output and raising on failure."""
    chunks: Iterator[dict[str, Any]] = client.api.build(
        path=str(context),
        tag=tag,
        buildargs=buildargs,
        labels=labels,
        network_mode="none",
        rm=True,
        forcerm=True,
        pull=False,
        decode=True,
    )
    for chunk in chunks:
        if "error" in chunk:
            raise ImageBuildError(f"docker build failed (its output is above): {_plain(chunk['error'])}")
        text = _plain(chunk.get("stream", ""))
        if text and not text.lstrip().startswith(_BUILD_NOISE):
            log(text)


def build_kernel_image(*, force: bool = False, log: Callable[[str], None] = print) -> str:
    """Build the kernel image for the current sources unless it exists; return its tag.

    Idempotent and safe to call concurrently (builds are serialized by a lock). The sources are
    read once, so the tag always names exactly the bytes that went into the image even if files
    change meanwhile. ``force`` rebuilds even when the tag exists (Docker's layer cache still
    spares the unchanged steps).
    """
    client = engine()
    with _build_lock():
        snapshot = _read(_hashed_files())
        digest = _digest(snapshot)
        tag = _tag_for(digest)
        if not force and image_exists(client, tag):
            log(f"{tag} is up to date")
            return tag
        base = _ensure_base(client, log)
        wheels = _ensure_wheels(log)
        debs = _ensure_debs(client, base, log)
        with tempfile.TemporaryDirectory(prefix="pixelbox-context-") as context:
            _assemble_context(Path(context), snapshot, wheels, debs)
            log(f"building {tag} on {base}")
            labels = {LABEL_VERSION: pixelbox.__version__, LABEL_HASH: digest, LABEL_BASE: base}
            stream_build(client, Path(context), tag, {"BASE": base}, labels, log)
    if not image_exists(client, tag):
        raise ImageBuildError(f"docker build reported success but {tag} is missing; rerun `{BUILD_COMMAND}`")
    log(f"built {tag}")
    return tag


def _status() -> int:
    client = engine()
    tag = kernel_image_tag()
    print(f"image: {tag} ({'present' if image_present(client) else f'missing: run `{BUILD_COMMAND}`'})")
    for stale in stale_images(client):
        print(f"stale: {stale} (built from other sources; `docker rmi {stale}` removes it)")
    return 0 if image_present(client) else 1


def main(argv: list[str] | None = None) -> int:
    """``build [--force]`` builds the image, ``status`` reports it, ``tag`` prints the tag."""
    parser = argparse.ArgumentParser(prog="python -m pixelbox.runtime.image", description=main.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build the kernel image if it is missing")
    build.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    commands.add_parser("status", help="say whether the current image is built and list stale ones")
    commands.add_parser("tag", help="print the tag for the current sources")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            build_kernel_image(force=args.force)
            return 0
        if args.command == "status":
            return _status()
        print(kernel_image_tag())
        return 0
    except ImageBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
