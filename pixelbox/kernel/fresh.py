"""A kernel in two phases, so the expensive one can be paid once for many fresh kernels.

Phase one, :func:`preload`, imports what every kernel imports (ipykernel and the in-kernel
layers) and the libraries model code reaches for (NumPy, Pillow, OpenCV, SciPy, Matplotlib). It
reads nothing of any sandbox: no configuration, no connection file, no key, no environment of
a sandbox. Phase two, :func:`serve`, is everything that belongs to one sandbox: the environment,
reseeding every random source (:func:`reseed`), the configuration and connection file in the
IPC directory, the layers, the ready record, serving.

A cold kernel (``python -m pixelbox.kernel``) runs both phases in one process. A fast path runs
phase one once and phase two per sandbox, in a copy of the primed process: the local zygote
(:mod:`pixelbox.kernel.zygote`) forks; a container backend can checkpoint a primed kernel and
restore it per sandbox. Whatever the mechanism, a fresh kernel must call :func:`serve` (or at
least :func:`adopt_environment` and :func:`reseed` before its own phase two), so that two kernels
made from one primed image share no random state and no environment.

What cannot be renewed after the interpreter started, and so is shared by every kernel copied
from one primed process (documented in docs/security.md): the ``str``/``bytes`` hash secret
(``PYTHONHASHSEED`` is read once at interpreter start), and the address-space layout of the
interpreter and of the preloaded libraries (ASLR is drawn at exec, not at fork). Neither holds a
sandbox's data; both are the known trade of every fork server (Android's zygote included).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import socket
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from traitlets.config import Config

KERNEL_ARGS = (
    "--IPKernelApp.no_stdout=False",
    "--InteractiveShell.colors=nocolor",
    "--InteractiveShell.xmode=Plain",
    "--HistoryManager.enabled=False",
    "--IPKernelApp.ignore_cwd=True",
    "--Session.packer=pixelbox.kernel.channel.pack_message",
)
"""ipykernel's options for every kernel (the connection file comes first, per sandbox)."""

PRELOAD = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "IPython.core.interactiveshell",
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "IPython.core.oinspect",
    "IPython.extensions.storemagic",
    "IPython.utils.wildcard",
    "ipykernel.debugger",
    "tornado.gen",
    "tornado.locks",
    "tornado.queues",
    "tornado.platform.asyncio",
    "pdb",
    "faulthandler",
    "IPython.core.logger",
    "pixelbox.kernel.kernelapp",
    "pixelbox.kernel.plugins",
    "pixelbox.kernel.patching",
    "pixelbox.kernel.streams",
    "pixelbox.kernel.callenv",
    "pixelbox.kernel.policy",
    "pixelbox.kernel.imageio",
    "pixelbox.kernel.imageio.cv2_hooks",
    "pixelbox.kernel.imageio.imageio_hooks",
    "pixelbox.kernel.imageio.ipython_hooks",
    "pixelbox.kernel.imageio.mpl_hooks",
    "pixelbox.kernel.imageio.open_hook",
    "pixelbox.kernel.imageio.pil_hooks",
    "pixelbox.kernel.recorder",
    "pixelbox.kernel.atomic",
    "numpy",
    "numpy.random",  # reseed() seeds NumPy's global generator: loaded lazily, with numpy.fft
    "numpy.fft",
    "secrets",
    "PIL.Image",
    "PIL.ImageOps",
    "PIL.ImageEnhance",
    "PIL.ImageFilter",
    "PIL.ImageDraw",
    "PIL.ImageMath",
    "cv2",
    "scipy.ndimage",
    "matplotlib",
    "matplotlib.pyplot",
)
"""Modules a primed process imports once: the kernel's own (every layer's, and what ipykernel and IPython
import while a kernel starts and runs its first cell) and the libraries model code uses."""


def without_debugger() -> None:
    """Keep ipykernel from loading debugpy, so the kernel offers no debugger.

    The host never sends debug requests, a debugger is one more way into the kernel's
    internals, and importing debugpy is about a fifth of kernel start (0.25-0.3 s under
    gVisor). ipykernel treats the failed import as "debugpy not installed".
    """
    sys.modules["debugpy"] = None  # type: ignore[assignment]


def preload(modules: tuple[str, ...] = PRELOAD) -> list[str]:
    """Phase one: import ``modules``; return what could not be imported (a missing library is not fatal)."""
    without_debugger()
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a library absent from this interpreter: its kernels import it themselves
            missing.append(f"{name}: {exc}")
    _register_image_formats()
    with contextlib.suppress(Exception):
        _warm_shell(_remember_options())
    return missing


def _register_image_formats() -> None:
    """Import Pillow's format plugins once, as its first save (or first open of a format outside the
    five it registers at start) would: under gVisor that import is most of a first ``save``'s cost
    (about 0.07 of 0.09 CPU-s), paid by every fresh kernel in its episode rather than once here."""
    image = sys.modules.get("PIL.Image")
    if image is not None:
        with contextlib.suppress(Exception):
            image.preinit()  # first, as in a cold kernel: an open tries the five common formats before the rest
            image.init()


def _remember_options() -> Config:
    """Parse the kernel's options once, so every copy of this process skips traitlets' command-line
    parser (:meth:`~pixelbox.kernel.kernelapp.SandboxKernelApp.remember_options`)."""
    from pixelbox.kernel.kernelapp import SandboxKernelApp

    return SandboxKernelApp.remember_options(KERNEL_ARGS)


def _warm_shell(config: Config) -> None:
    """Build one throwaway kernel shell and drop it, undoing what it did to the process.

    Building the shell of a kernel forked from here then costs half as much, and its first cell
    less (traitlets' and IPython's caches are filled, the input transformers' regular expressions
    compiled, the display formatters' classes set up once). The throwaway shell lives in a
    temporary directory and is gone before any fork: no singleton, no ``__main__``, no builtins,
    no exit hook of it stay, and it starts no thread (the history is off in ``config``).
    """
    import atexit

    from ipykernel.zmqshell import ZMQInteractiveShell

    with _builtins_and_prompts_kept(), tempfile.TemporaryDirectory(prefix="pbx-warm-") as home:
        shell = ZMQInteractiveShell(config=config, ipython_dir=home)
        try:
            shell.transform_cell("1\n")  # the input transformers' regular expressions (nothing runs)
            if shell.display_formatter is not None:
                shell.display_formatter.format(1)  # the formatters, made on first display
        finally:
            atexit.unregister(shell.atexit_operations)
            shell.restore_sys_module_state()  # sys.modules["__main__"], the standard streams, excepthook


@contextlib.contextmanager
def _builtins_and_prompts_kept() -> Iterator[None]:
    """Put the builtins module and ``sys.ps1``-``ps3`` back as they were (an IPython shell sets both)."""
    import builtins

    namespace = vars(builtins)
    saved = dict(namespace)
    prompts = {name: getattr(sys, name) for name in ("ps1", "ps2", "ps3") if hasattr(sys, name)}
    try:
        yield
    finally:
        for name in set(namespace) - set(saved):
            del namespace[name]
        namespace.update(saved)
        for name in ("ps1", "ps2", "ps3"):
            if name in prompts:
                setattr(sys, name, prompts[name])
            elif hasattr(sys, name):
                delattr(sys, name)


def adopt_environment(env: Mapping[str, str]) -> None:
    """Make ``env`` the whole environment (the primed process's own is dropped), and forget the
    paths libraries cached from the old one (temporary directory, Matplotlib's config and cache)."""
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None
    matplotlib = sys.modules.get("matplotlib")
    for name in ("get_configdir", "get_cachedir"):
        clear = getattr(getattr(matplotlib, name, None), "cache_clear", None)
        if clear is not None:
            clear()


def reseed() -> None:
    """Give every random source of the process fresh entropy from the operating system.

    ``random``'s module generator, NumPy's legacy global generator (``np.random.seed()`` with no
    argument draws from the OS), OpenCV's ``theRNG``, and the ``multiprocessing`` authentication
    key (a secret drawn at import, used to authenticate its connections). ``os.urandom``,
    ``secrets``, ``uuid.uuid4`` and ``np.random.default_rng()`` read the OS each time and keep
    no state. ``tempfile``'s name generator is dropped (made anew on next use): it renews itself
    when it sees a new pid, which a fork gives but a restored checkpoint does not (CRIU and runsc
    restore the template's pid, so every restored kernel would draw the template's names).
    """
    random.seed()
    tempfile._name_sequence = None  # type: ignore[attr-defined]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    from pixelbox.kernel.patching import Patcher

    Patcher().when_imported("cv2", _seed_opencv)
    process = sys.modules.get("multiprocessing.process")
    if process is not None:  # imported later, it draws a fresh key itself
        process.current_process().authkey = os.urandom(32)


def _seed_opencv(cv2: ModuleType) -> None:
    """Seed OpenCV's ``theRNG`` from the OS, now or when a cell first imports it.

    OpenCV seeds it with a constant on import, so without this two cold kernels draw the same
    numbers; a forked or restored kernel has it loaded already and is seeded at once.
    """
    if hasattr(cv2, "setRNGSeed"):
        cv2.setRNGSeed(int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF)


def write_ready(ipc_dir: Path, problems: list[str]) -> None:
    """Atomically publish the readiness record the host polls for."""
    from pixelbox import __version__
    from pixelbox.contract.wire import KERNEL_PROTOCOL, READY_FILE

    record = {
        "version": __version__,
        "protocol": KERNEL_PROTOCOL,
        "pid": os.getpid(),
        "uid": os.getuid(),
        "python": sys.version.split()[0],
        "interfaces": sorted(name for _, name in socket.if_nameindex()),
        "problems": problems,
    }
    tmp = ipc_dir / f"{READY_FILE}.tmp"
    tmp.write_text(json.dumps(record))
    tmp.replace(ipc_dir / READY_FILE)


def without_workspace_imports() -> None:
    """Drop the current directory from ``sys.path`` (``''`` of ``python -c``, the start directory of
    ``python -m``): a module a cell writes into the workspace must never be imported as library code,
    which runs with the real builtins (``skimage.py`` before ``import skimage``). Called before the
    kernel moves into its workspace; ipykernel is told not to add it back (``ignore_cwd``)."""
    here = os.getcwd()
    sys.path[:] = [entry for entry in sys.path if entry not in ("", ".", here)]


def serve(ipc_dir: Path, env: Mapping[str, str] | None = None) -> NoReturn:
    """Phase two: become the kernel of the sandbox whose IPC directory is ``ipc_dir``, and serve.

    ``env`` (a forked or restored kernel) replaces the environment first; a cold kernel already
    has its own. Then every random source is reseeded, the configuration and connection file are
    read, the layers installed and the ready record written (:func:`initialize`), as
    :mod:`pixelbox.kernel.__main__` describes.
    """
    initialize(ipc_dir, env).start()
    sys.exit(0)


def initialize(ipc_dir: Path, env: Mapping[str, str] | None = None) -> Any:
    """Phase two up to serving: the kernel application of the sandbox whose IPC directory is ``ipc_dir``,
    initialized, its layers installed and its ready record written (see :func:`serve`)."""
    from pixelbox.contract.config import load_config
    from pixelbox.contract.wire import CONFIG_FILE, CONNECTION_FILE
    from pixelbox.kernel.plugins import install_plugins

    without_workspace_imports()
    if env is not None:
        adopt_environment(env)
    reseed()
    config = load_config(ipc_dir / CONFIG_FILE)
    os.chdir(config.workspace)
    without_debugger()

    from pixelbox.kernel.kernelapp import SandboxKernelApp

    app = SandboxKernelApp.instance()
    app.initialize(["-f", str(ipc_dir / CONNECTION_FILE), *KERNEL_ARGS])
    problems = install_plugins(app.shell, config)
    write_ready(ipc_dir, problems)
    return app
