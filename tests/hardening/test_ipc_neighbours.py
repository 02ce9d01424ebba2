"""System V IPC between sandboxes on the local backend, with the operating system as the only wall.

Without the policy a kernel can call ``shmget``/``msgget`` through ctypes. Kernels run under their own
uids, but a segment or queue made with mode 0666 is open to every uid in the same IPC namespace, and
it outlives the process that made it: a channel from one sandbox to the next (one rollout leaving an
answer for another) and a leak on the host. Each local kernel has an IPC namespace of its own (made
with its network namespace), so another sandbox finds nothing under the key, and the segment is gone
with the kernel.
"""

from __future__ import annotations

import os

import pytest

from pixelbox.runtime import Sandbox
from tests.hardening.support import LIMITS, Target, message

HARDENING_BACKENDS = ("local-os",)

SYSV = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
KEY = 0x5EED0451
"""
LEAVE = (
    SYSV
    + """
shm = libc.shmget(KEY, 4096, 0o1000 | 0o666)
address = libc.shmat(shm, None, 0)
ctypes.memmove(address, b'ESCAPED-answer-42', 17)
print('left', shm >= 0)
"""
)
FIND = (
    SYSV
    + """
shm = libc.shmget(KEY, 0, 0)
print('found' if shm >= 0 else 'nothing', ctypes.get_errno())
if shm >= 0:
    print(ctypes.string_at(libc.shmat(shm, None, 0), 17))
"""
)


@pytest.mark.skipif(os.geteuid() != 0, reason="kernels get their own uid and namespaces only when the host is root")
def test_a_shared_memory_segment_does_not_reach_another_sandbox(target: Target) -> None:
    left = target.run(LEAVE)
    assert left.status == "ok" and "left True" in left.stdout, message(left)
    with Sandbox(backend="local", policy=False, **LIMITS) as other:
        found = other.execute(FIND)
    assert found.status == "ok", message(found)
    assert found.stdout.startswith("nothing"), f"another sandbox read the segment: {found.stdout}"
