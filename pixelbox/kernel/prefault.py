"""Writing ahead, in the zygote's spare, the memory pages a forked kernel writes while it starts.

A kernel forked from the zygote shares the zygote's pages until it writes one (copy on write):
about 5000 of them from its request to its first result (reference counts all over the heap),
3-4.5 us each on this VM, 15-20 ms of its start. The spare (:mod:`pixelbox.kernel.zygote`) is
forked ahead of its request, so it can take those faults while it waits: ``MADV_POPULATE_WRITE``
over the pages a kernel will write makes them its own (same contents, nothing else changes), and
the kernel that serves the request then writes them without a fault. Which pages: those a
*rehearsal* wrote, a child the zygote forks once, which starts a kernel for a throwaway sandbox of
its own (in the zygote's private directory: nothing of any sandbox) and runs a first cell, then
reports the pages it copied (``/proc/self/pagemap``: present and exclusively its own, inside the
zygote's writable mappings) and exits. The rehearsal shares nothing with a spare but addresses,
which every fork of the zygote shares anyway.

The pages are written after the spare joined its control group, so they count against the
sandbox that gets it, as the faults would have.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import struct
import traceback
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
MADV_POPULATE_WRITE = 23
"""madvise advice (Linux 5.14): fault the range in writable, as writing each page would."""
PRESENT, EXCLUSIVE = 1 << 63, 1 << 56
"""pagemap entry bits: the page is in memory; it is mapped by this process alone (copied, or new)."""
MAX_RANGES = 20_000
"""Cap on the ranges one rehearsal reports (a sane kernel writes about 2000 runs of pages)."""

REHEARSAL_NAME = b"pbx-rehearsal"
"""The rehearsal's process name (``/proc/<pid>/comm``): its command line is the zygote's, as a spare's."""
PR_SET_NAME = 15
PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(None, use_errno=True)
_madvise = _libc.madvise
_madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

Ranges = list[tuple[int, int]]
"""``(start address, length in bytes)`` runs of whole pages."""


def writable_private_maps() -> Ranges:
    """This process's private writable mappings (heap, anonymous memory, libraries' data)."""
    maps = []
    with open("/proc/self/maps") as handle:
        for line in handle:
            fields = line.split()
            perms, name = fields[1], fields[5] if len(fields) > 5 else ""
            if perms.startswith("rw") and perms[3] == "p" and (name == "[heap]" or not name.startswith("[")):
                low, high = (int(part, 16) for part in fields[0].split("-"))
                maps.append((low, high - low))
    return maps


def written_pages(maps: Ranges) -> Ranges:
    """The runs of pages inside ``maps`` this process has made its own since it was forked."""
    runs: Ranges = []
    with open("/proc/self/pagemap", "rb") as pagemap:
        for start, length in maps:
            pagemap.seek(start // PAGE * 8)
            data = pagemap.read(length // PAGE * 8)
            for index, (entry,) in enumerate(struct.iter_unpack("<Q", data)):
                if entry & PRESENT and entry & EXCLUSIVE:
                    address = start + index * PAGE
                    if runs and runs[-1][0] + runs[-1][1] == address:
                        runs[-1] = (runs[-1][0], runs[-1][1] + PAGE)
                    else:
                        runs.append((address, PAGE))
    return runs[:MAX_RANGES]


def populate(ranges: Ranges) -> None:
    """Write-fault every page of ``ranges`` in (a range no longer mapped writable is skipped)."""
    for start, length in ranges:
        _madvise(start, length, MADV_POPULATE_WRITE)


def rehearse(workdir: Path) -> Ranges:
    """In a child just forked from the zygote: start a kernel for a throwaway sandbox in ``workdir``,
    run a first cell, and return the pages of the zygote's mappings that took."""
    from pixelbox.kernel.fresh import initialize

    maps = writable_private_maps()  # the zygote's, as every spare has them
    ipc = _throwaway_sandbox(workdir)
    app = initialize(ipc, _environment(workdir))
    app.shell.run_cell("1", store_history=True)
    return written_pages(maps)


def _throwaway_sandbox(root: Path) -> Path:
    """A sandbox's files as the host writes them (connection file, configuration of a default local
    sandbox: policy, image I/O, trace), for nobody: a random key, nothing else of anyone."""
    from pixelbox import __version__
    from pixelbox.contract.config import KernelConfig, ProfileSpec
    from pixelbox.contract.wire import CONFIG_FILE, CONNECTION_FILE, KERNEL_PROTOCOL

    for name in ("ipc", "work", "inputs", "home"):
        (root / name).mkdir(mode=0o700)
    names = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
    ports = {name: i + 1 for i, name in enumerate(names)}
    connection = dict(ports, transport="ipc", ip=str(root / "ipc" / "k"), signature_scheme="hmac-sha256")
    (root / "ipc" / CONNECTION_FILE).write_text(json.dumps(dict(connection, key=secrets.token_hex(32))))
    work = str(root / "work")
    io = {"enabled": True, "profile": ProfileSpec().to_dict(), "workspace": work, "inputs": []}
    config = KernelConfig(work, str(root / "inputs"), __version__, KERNEL_PROTOCOL, {"enabled": True}, io)
    config.trace = {"enabled": True}
    (root / "ipc" / CONFIG_FILE).write_text(config.to_json())
    return root / "ipc"


def _environment(root: Path) -> dict[str, str]:
    home = str(root / "home")
    env = {name: value for name, value in os.environ.items() if name in ("PATH", "LANG", "MPLBACKEND")}
    return dict(env, HOME=home, IPYTHONDIR=f"{home}/.ipython", MPLCONFIGDIR=f"{home}/.mpl", TMPDIR=home)


class Rehearsal:
    """The zygote's side: fork the rehearsal, collect what it reports, remove its directory."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.ranges: Ranges = []
        self.buffer = b""
        self.reaped = False
        """Set by the zygote once it reaped the rehearsal: its pid may then belong to any process."""
        workdir.mkdir(mode=0o700)  # there until the report is read (then removed)
        read, write = os.pipe()
        zygote = os.getpid()
        try:
            self.pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            workdir.rmdir()
            raise
        if self.pid == 0:  # the rehearsal: never returns
            os.close(read)
            _report(write, workdir, zygote)
        os.close(write)
        self.fd = read

    def read(self) -> bool:
        """Take what the pipe holds; True once the rehearsal is done (its ranges are then in ``ranges``)."""
        chunk = os.read(self.fd, 1 << 16)
        if chunk:
            self.buffer += chunk
            return False
        os.close(self.fd)
        with contextlib.suppress(ValueError, TypeError):
            self.ranges = [(int(start), int(length)) for start, length in json.loads(self.buffer)]
        shutil.rmtree(self.workdir, ignore_errors=True)
        return True


def _report(pipe: int, workdir: Path, zygote: int) -> None:
    """The rehearsal's life: die with the ``zygote`` (it runs as root in a session of its own, so nothing
    else would stop it), drop the zygote's descriptors (its stderr log and the pipe excepted),
    rehearse, write the ranges as JSON on the pipe, exit."""
    code = 1
    try:
        os.setsid()
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != zygote:  # it died before the line above took effect
            return
        _libc.prctl(PR_SET_NAME, REHEARSAL_NAME, 0, 0, 0)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.closerange(3, pipe)
        os.closerange(pipe + 1, 1 << 16)
        data = json.dumps(rehearse(workdir)).encode()
        with os.fdopen(pipe, "wb") as out:
            out.write(data)
        code = 0
    except BaseException:  # no ranges: spares just fault as they go; say why in the zygote's log
        with contextlib.suppress(Exception):
            os.write(2, traceback.format_exc().encode(errors="replace"))
    finally:
        os._exit(code)
