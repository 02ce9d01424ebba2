"""The kernel's IPython application: ipykernel's, minus everything a kernel could plant for its next start.

ipykernel reads configuration files (``ipython_kernel_config.py``, ``ipython_config.py`` in the
profile under ``IPYTHONDIR``, ``jupyter_*_config.py`` under ``~/.jupyter``) and runs the profile's
``startup/*.py`` files before the first cell, with the real builtins: the policy layers are
installed only afterwards. Those directories are in the sandbox's home, which the kernel can
write, so a cell could leave code there that the next kernel of its sandbox (after a crash, a
timeout or a restart) runs outside every guard. The sandbox's kernel reads none of them: its
options all come from the command line (:data:`pixelbox.kernel.fresh.KERNEL_ARGS`).
"""

from __future__ import annotations

from ipykernel.kernelapp import IPKernelApp


class SandboxKernelApp(IPKernelApp):
    """``IPKernelApp`` that loads no configuration file and runs no startup file."""

    def load_config_file(self, *args: object, **kwargs: object) -> None:
        """Read no configuration file: the command line is the whole configuration."""

    def _run_startup_files(self) -> None:
        """Run no startup file (profile ``startup/``, ``PYTHONSTARTUP``)."""
