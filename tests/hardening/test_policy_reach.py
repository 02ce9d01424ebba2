"""Policy escapes through what a name reaches rather than the name itself (local, policy on).

Round two of the attack cells: NumPy's ``NpzFile`` unpickling with ``allow_pickle`` switched on
after ``np.load`` (whose own flag is checked), ``operator.methodcaller('format', obj)`` and
``attrgetter`` walking attributes through a format string, and a Matplotlib draw callback run
by the image I/O layer after the cell (when the audit hook used to be off already). Each must be
refused by the rule named, run nothing, and leave the kernel working. See docs/policy.md.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from tests.hardening.support import BUSY_S, ESCAPED, Target, assert_contained, attempt, message

HARDENING_BACKENDS = ("local",)
HARDENING_OPTIONS = {"io": {"enabled": True, "profile": "generic"}}


class _Payload:
    """Unpickles as a call of the real ``exec``: what an attacker's object array holds."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (exec, (f"print({ESCAPED!r})",))


@pytest.fixture
def evil_npz(target: Target) -> str:
    """An .npz in the workspace whose object array runs ``exec`` when unpickled."""
    buffer = io.BytesIO()
    np.savez(buffer, a=np.array([_Payload()], dtype=object))
    return target.sb.upload(buffer.getvalue(), "evil.npz")


PICKLE_ROUTES = {
    "npzfile_flag_switched_on": "z = np.load(path)\nz.allow_pickle = True\nz['a']",
    "npzfile_built_directly": "z = np.lib.npyio.NpzFile(open(path, 'rb'), allow_pickle=True)\nz['a']",
}


@pytest.mark.parametrize("route", list(PICKLE_ROUTES))
def test_unpickling_through_npzfile_is_refused(target: Target, evil_npz: str, route: str) -> None:
    body = f"import numpy as np\npath = {evil_npz!r}\n{PICKLE_ROUTES[route]}"
    result = target.run(attempt(body))
    assert_contained(result, r"no-pickle")
    assert ESCAPED not in result.stdout, message(result)


FORMAT_WALKS = {
    "methodcaller_format": "import operator\nprint(operator.methodcaller('format', 1)('{0.__class__}'))",
    "methodcaller_format_map": (
        "import operator\nprint(operator.methodcaller('format_map', {'x': 1})('{x.__class__.__mro__}'))"
    ),
    "attrgetter_format": "import operator\nprint(operator.attrgetter('format')('{0.__class__}')(1))",
    "methodcaller_on_str_class": "import operator\nprint(operator.methodcaller('format', '{0.__class__}', 1)(str))",
}


@pytest.mark.parametrize("walk", list(FORMAT_WALKS))
def test_format_attribute_walks_through_operator_are_refused(target: Target, walk: str) -> None:
    result = target.run(attempt(FORMAT_WALKS[walk]))
    assert_contained(result, r"BLOCKED .*no-underscore-attr")
    assert "<class" not in result.stdout and "(<" not in result.stdout, message(result)


def test_methodcaller_still_works_and_is_traced(target: Target) -> None:
    result = target.run(
        "import operator\nfrom PIL import Image\nimg = Image.new('RGB', (40, 30))\n"
        "part = operator.methodcaller('crop', (0, 0, 10, 10))(img)\n"
        "print(operator.attrgetter('size')(part), operator.methodcaller('format', 7)('{0}'))"
    )
    assert result.status == "ok" and result.stdout == "(10, 10) 7\n", message(result)
    assert [e["op"] for e in result.events] == ["crop"], message(result)


def test_draw_callback_after_the_cell_runs_under_the_audit_hook(target: Target) -> None:
    code = """
    import matplotlib.pyplot as plt, pathlib
    fig = plt.figure()
    def spy(event):
        try:
            pathlib.Path('/proc/self/status').read_text()
            print('ESCAPED')
        except Exception as exc:
            print('BLOCKED', repr(exc))
    fig.canvas.mpl_connect('draw_event', spy)
    plt.plot([1, 2, 3])
    """
    result = target.run(code, timeout=BUSY_S)
    assert_contained(result, r"BLOCKED .*denied-path")
    assert result.artifacts, "the open figure is still captured: " + message(result)


UUID_REACHES = {
    "module_sys": ("import uuid\nuuid.sys.modules", r"denied-module"),
    "module_platform": ("import uuid\nuuid.platform.popen", r"denied-module"),
    "module_os_system": ("import uuid\nuuid.os.system('echo ESCAPED')", r"denied-os-function"),
    "command_helper_by_getattr": (
        "import uuid\ngetattr(uuid, '_get_command_stdout')('sh', '-c', 'echo ESCAPED')",
        r"no-underscore-attr",
    ),
    "native_module_by_getattr": ("import uuid\ngetattr(uuid, '_uuid')", r"no-underscore-attr"),
    "getnode_globals": ("import uuid\nuuid.getnode.__globals__['subprocess']", r"no-underscore-attr"),
    "module_write": ("import uuid\nsetattr(uuid, 'getnode', print)", r"no-module-write"),
}


@pytest.mark.parametrize("reach", list(UUID_REACHES))
def test_uuid_does_not_lead_to_processes_or_the_interpreter(target: Target, reach: str) -> None:
    """``uuid`` is allowed, but its module values, private helpers and the program-running
    ``getnode`` fallbacks stay refused (the fallback itself: tests/test_policy.py)."""
    body, rule = UUID_REACHES[reach]
    result = target.run(attempt(body))
    assert_contained(result, rule)


def test_uuid_functions_models_call_work(target: Target) -> None:
    result = target.run(
        "import uuid\nfrom uuid import uuid4\nnode = uuid.getnode()\nnamed = uuid.uuid3(uuid.NAMESPACE_DNS, 'a')\n"
        "print(len(str(uuid4())), uuid.uuid1().version, 0 <= node < 2 ** 48, named.version)"
    )
    assert result.status == "ok" and result.stdout == "36 1 True 3\n", message(result)
