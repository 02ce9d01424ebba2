"""The interpreter behind VisualToolBench's two code tools: a fresh namespace for every call, prepared ahead.

The official tool ``exec``s each call in new globals that hold ``Image``, ``np``, ``cv2``, ``plt`` and
``PROCESSED_IMAGE_SAVE_PATH``. Here each call runs in the sandbox's traced kernel; after a call the kernel
is restarted (variables gone, files kept) and the predefined names are imported again *in the
background*, while the model reads the result and writes its next turn, so the next call usually finds
its fresh namespace ready (``benchmarks/bench_vtb_calls.py`` measures both costs). ``stateful`` keeps
one kernel instead (prepared once).
"""

from __future__ import annotations

import threading
from typing import Any

from pixelbox.runtime.errors import PixelboxError
from pixelbox.runtime.execution import Execution

SETUP_CELL = (
    "from PIL import Image\nimport numpy as np\nimport cv2\nimport matplotlib\nmatplotlib.use('Agg')\n"
    "import matplotlib.pyplot as plt\nPROCESSED_IMAGE_SAVE_PATH = {save_dir!r}\n"
)


class InterpreterError(PixelboxError):
    """The sandbox could not be prepared for a code call (the episode ends as a runtime error)."""


class Interpreter:
    """Runs code calls in ``sandbox``; the namespace for the next call is prepared as soon as one ends."""

    def __init__(self, sandbox: Any, save_dir: str, timeout: float, *, stateful: bool = False) -> None:
        self.sandbox, self.save_dir, self.timeout, self.stateful = sandbox, save_dir, timeout, stateful
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._begin(restart=False)

    def run(self, code: str) -> Execution:
        """Execute ``code`` in a prepared namespace; raises :class:`InterpreterError` when none could be made."""
        self._wait()
        execution = self.sandbox.execute(code, timeout=self.timeout)
        if not self.stateful:
            self._begin(restart=True)
        return execution

    def close(self) -> None:
        """Wait for a preparation under way (the sandbox is closed after); its failure no longer matters."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _begin(self, *, restart: bool) -> None:
        self._error = None
        self._thread = threading.Thread(target=self._prepare, args=(restart,), name="vtb-interpreter", daemon=True)
        self._thread.start()

    def _prepare(self, restart: bool) -> None:
        try:
            if restart:
                self.sandbox.restart()
            setup = self.sandbox.execute(SETUP_CELL.format(save_dir=self.save_dir), timeout=self.timeout)
            if setup.status != "ok":
                detail = setup.error.evalue if setup.error else setup.status
                raise InterpreterError(f"the sandbox could not be prepared for a code call: {detail}")
        except BaseException as exc:  # handed to the episode's thread at the next call
            self._error = exc

    def _wait(self) -> None:
        self.close()
        if self._error is not None:
            error, self._error = self._error, None
            if isinstance(error, PixelboxError):
                raise error
            raise InterpreterError(f"the sandbox could not be prepared for a code call: {error}") from error
