"""Host trust: what a kernel writes must stay inside what the host accounts for and captures.

- ``/dev/shm`` on the local backend: the host's is world-writable host memory outside the
  workspace cap, and files there outlive the kernel. Each local kernel gets a private, capped
  tmpfs there (its own mount namespace), gone with the kernel; a container's is capped the same way.
- ``cv2.imwritemulti`` writes an image file like ``cv2.imwrite`` does, so it is captured as a
  numbered artifact like every other image write.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.hardening.support import LIMITS, Target, assert_contained, attempt, message

HARDENING_BACKENDS = ("local", "local-os", "runc", "runsc")
HARDENING_OPTIONS = {"io": {"enabled": True, "profile": "generic"}}
SHM_NAME = f"pbx-hardening-shm-{os.getpid()}"


def test_dev_shm_is_private_capped_and_gone_with_the_kernel(target: Target) -> None:
    cap = int(str(LIMITS["tmpfs_size"]).rstrip("m")) * 1024**2
    wrote = target.run(attempt(f"open('/dev/shm/{SHM_NAME}', 'wb').write(b'x' * 1000)"))
    if "ESCAPED" not in wrote.stdout:  # the policy may refuse the path outright: contained
        assert_contained(wrote, r"BLOCKED")
        return
    assert not Path(f"/dev/shm/{SHM_NAME}").exists(), "the kernel's /dev/shm is the host's"
    big = target.run(attempt(f"open('/dev/shm/{SHM_NAME}-big', 'wb').write(b'x' * {cap + 1024**2})"), timeout=60)
    assert_contained(big, r"BLOCKED .*(No space left|OSError|MemoryError)")
    target.run(f"import os\nos.remove('/dev/shm/{SHM_NAME}-big')")
    target.sb.restart()
    gone = target.run(f"import os\nprint(os.path.exists('/dev/shm/{SHM_NAME}'))")
    assert gone.stdout == "False\n", message(gone)


def test_cv2_imwritemulti_is_captured(target: Target) -> None:
    result = target.run(
        "import cv2, numpy as np\n"
        "pages = [np.zeros((12, 16, 3), np.uint8), np.full((12, 16, 3), 200, np.uint8)]\n"
        "print(cv2.imwritemulti('pages.tiff', pages))"
    )
    assert result.status == "ok" and result.stdout.strip() in ("True", "1"), message(result)
    assert len(result.artifacts) == 1, message(result)
    artifact = result.artifacts[0]
    assert artifact["format"] == "TIFF" and (artifact["width"], artifact["height"]) == (16, 12), artifact
    assert artifact["api"] == "cv2.imwritemulti", artifact
