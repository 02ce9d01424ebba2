"""Code a cell plants in places the kernel writes, hoping library code (not the cell) runs it.

Library code runs with the real builtins and outside the policy's guards, so a Python file that
some import, or the next kernel's start, picks up from the workspace or the sandbox's home is an
escape: a module shadowing a library that is imported later, a ``pixelbox`` package that ``python -m
pixelbox.kernel`` would import on the next cold start, IPython startup and configuration files under
``IPYTHONDIR`` and ``~/.jupyter``. Every case plants its file, makes the import or the restart happen,
and checks the planted code never ran (it would leave a marker file) and the sandbox still works.
"""

from __future__ import annotations

import pytest

from tests.hardening.support import BUSY_S, ESCAPED, Target, assert_usable, message

HARDENING_BACKENDS = ("local", "local-cold", "local-os", "runc", "runsc")

MARKER = "planted-ran.txt"
"""What planted code writes into the workspace (by absolute path) when it runs."""

PLANT = """
import os, pathlib
work = os.getcwd()
def plant(path, name):
    target = pathlib.Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    marker = repr(os.path.join(work, name))
    target.write_text('open(' + marker + ', "w").write("ESCAPED")\\nPLANTED = "ESCAPED"\\n')
"""


def planted_ran(target: Target) -> str:
    """The markers planted code left in the workspace (empty when none ran)."""
    result = target.run(f"import os\nprint(sorted(n for n in os.listdir('.') if n.startswith({MARKER[:8]!r})))")
    assert result.status == "ok", message(result)
    return result.stdout


def test_module_shadowing_a_library_is_not_imported(target: Target) -> None:
    """``skimage.py`` in the workspace, then ``import skimage`` (not imported at start): the real one."""
    planted = target.run(PLANT + f"plant('skimage.py', {MARKER!r})")
    assert planted.status == "ok", message(planted)
    result = target.run("import skimage\nprint(getattr(skimage, 'PLANTED', 'real'))", timeout=BUSY_S)
    assert ESCAPED not in result.stdout and "[]" in planted_ran(target), message(result)
    assert result.status == "ok" and result.stdout == "real\n", message(result)


@pytest.mark.parametrize(
    "where",
    [
        "pixelbox/__init__.py",
        "{ipython}/profile_default/startup/00-planted.py",
        "{ipython}/profile_default/ipython_kernel_config.py",
        "{ipython}/profile_default/ipython_config.py",
        "{home}/.jupyter/jupyter_config.py",
        "{home}/.ipython/profile_default/startup/00-planted.py",
    ],
)
def test_file_planted_for_the_next_kernel_does_not_run(target: Target, where: str) -> None:
    """A restart (a crash, a timeout) starts a new kernel; nothing the old one wrote may run in it."""
    path = f"os.path.expanduser({where.format(ipython='~/.ipython', home='~')!r})"
    if "{ipython}" in where:
        path = (
            f"os.path.join(os.environ.get('IPYTHONDIR', os.path.expanduser('~/.ipython')), {where.split('/', 1)[1]!r})"
        )
    planted = target.run(PLANT + f"plant({path}, {MARKER!r})")
    assert planted.status == "ok", message(planted)
    target.sb.restart()
    assert "[]" in planted_ran(target), "a file planted by the previous kernel ran at the next kernel's start"
    assert_usable(target)
    cleanup = target.run(f"import os, pathlib\npathlib.Path({path}).unlink(missing_ok=True)")
    assert cleanup.status == "ok", message(cleanup)
