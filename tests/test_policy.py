"""The restricted policy layer, exercised in-process on a real IPython shell.

Each escape attempt must fail as ``PolicyViolation`` with the expected rule (and nothing of a
rejected cell may run); each ordinary image-processing snippet must run unchanged and give
the value plain Python gives.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from pixelbox.kernel.policy import PolicySettings, PolicyViolation, install
from pixelbox.kernel.policy.modules import ModuleRules
from pixelbox.kernel.policy.transform import check_source


class Recorder:
    """Stands in for the tracer's recorder bound as ``__pbx__``."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def call(self, value: Any) -> Any:
        self.calls.append(value)
        return value


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InteractiveShell]:
    """A fresh shell under the policy, working in a private workspace."""
    workspace = tmp_path_factory.mktemp("workspace")
    old_cwd = os.getcwd()
    os.chdir(workspace)
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    install(sh, {"enabled": True})
    sh.user_ns["__pbx__"] = Recorder()
    sh.run_cell("import matplotlib\nmatplotlib.use('Agg')")
    try:
        yield sh
    finally:
        InteractiveShell.clear_instance()
        os.chdir(old_cwd)


def run_ok(shell: InteractiveShell, code: str) -> Any:
    """Run ``code``; it must succeed; return its Out[] value."""
    result = shell.run_cell(code, store_history=True)
    error = result.error_before_exec or result.error_in_exec
    assert error is None, f"{type(error).__name__}: {error}"
    return result.result


def run_refused(shell: InteractiveShell, code: str) -> PolicyViolation:
    """Run ``code``; it must fail with a PolicyViolation; return it."""
    result = shell.run_cell(code, store_history=True)
    error = result.error_before_exec or result.error_in_exec
    assert isinstance(error, PolicyViolation), f"expected PolicyViolation, got {type(error).__name__}: {error}"
    assert type(error).__name__ == "PolicyViolation"
    return error


# ---------------------------------------------------------------- escapes, rejected before running

STATIC_ESCAPES = [
    ("().__class__.__mro__[1].__subclasses__()", "no-underscore-attr"),
    ("def f():\n    pass\ng = f.__globals__", "no-underscore-attr"),
    ("type.__subclasses__(object)", "no-underscore-attr"),
    ("object.__reduce__", "no-underscore-attr"),
    ("gen = (i for i in range(3))\nframe = gen.gi_frame", "no-frame-access"),
    ("__import__('os')", "no-underscore-name"),
    ("eval('1 + 1')", "no-eval-exec"),
    ("exec('x = 1')", "no-eval-exec"),
    ("from os import *", "no-star-import"),
    ("__pbx__ = None", "reserved-name"),
    ("del __pbx__", "reserved-name"),
    ("__pbx_shadow = 1", "reserved-name"),
    ("get_ipython().system('id')", "no-shell-access"),
    ("!id", "no-shell-access"),
    ("class Sneaky:\n    def __getattribute__(self, name):\n        return name", "no-underscore-name"),
    ("async def f():\n    pass", "unsupported-syntax"),
    ("import builtins", "reserved-name"),
]


@pytest.mark.parametrize(("code", "rule"), STATIC_ESCAPES)
def test_static_escape_is_rejected_with_its_rule(shell: InteractiveShell, code: str, rule: str) -> None:
    error = run_refused(shell, code)
    assert error.rule == rule
    assert f"(policy rule: {rule})" in str(error)
    assert str(error).startswith("line ")


def test_rejection_names_the_line_and_runs_nothing(shell: InteractiveShell) -> None:
    error = run_refused(shell, "marker_before = 1\nsize = 2\nleak = size.__class__")
    assert error.line == 3
    assert str(error).startswith("line 3: attribute names starting with '_' are not allowed")
    assert "marker_before" not in shell.user_ns


def test_every_violation_of_a_cell_is_listed(shell: InteractiveShell) -> None:
    error = run_refused(shell, "a = ().__class__\nb = 1\nc = eval('2')")
    text = str(error)
    assert "line 1:" in text and "line 3:" in text
    assert "no-underscore-attr" in text and "no-eval-exec" in text


# ---------------------------------------------------------------- escapes, refused while running

RUNTIME_ESCAPES = [
    ("getattr((), '__class__')", "no-underscore-attr", AttributeError),
    ("setattr(print, '__doc__', 'x')", "no-underscore-attr", AttributeError),
    ("'{0.__class__}'.format(1)", "no-underscore-attr", AttributeError),
    ("'{x.__class__.__mro__}'.format_map({'x': 1})", "no-underscore-attr", AttributeError),
    ("class Text(str):\n    pass\nText.format('{0.__class__}', 1)", "no-underscore-attr", AttributeError),
    ("gen = (i for i in range(3))\ngetattr(gen, 'gi_frame')", "no-frame-access", AttributeError),
    ("import operator\noperator.attrgetter('__class__')(1)", "no-underscore-attr", AttributeError),
    ("import operator\noperator.methodcaller('__reduce__')(1)", "no-underscore-attr", AttributeError),
    ("vars()", "denied-builtin", PermissionError),
    ("globals()['__builtins__']", "no-underscore-name", KeyError),
    ("locals()['__pbx__']", "no-underscore-name", KeyError),
    (
        "import dataclasses\n@dataclasses.dataclass\nclass D:\n"
        "    g: dict = dataclasses.field(default_factory=globals)\nD()",
        "denied-builtin",
        PermissionError,
    ),
    ("from PIL import Image\nImage.new('L', (2, 2))._im", "no-underscore-attr", AttributeError),
    ("from PIL import Image\nimg = Image.new('L', (2, 2))\nimg._size = (9, 9)", "no-underscore-attr", AttributeError),
    ("from PIL import Image\nsetattr(Image.new('L', (2, 2)), '_size', (9, 9))", "no-underscore-attr", AttributeError),
    ("import numpy as np\nnp._core", "no-underscore-attr", AttributeError),
    ("import numpy as np\ngetattr(np, '_core')", "no-underscore-attr", AttributeError),
    (
        "from PIL import Image\nclass Mine(Image.Image):\n    def peek(self):\n        return self._im\nMine().peek()",
        "no-underscore-attr",
        AttributeError,
    ),
    ("len.__init__", "no-underscore-attr", AttributeError),
    ("__pbx__._x", "no-underscore-attr", AttributeError),
    ("run = eval\nrun('1')", "denied-builtin", PermissionError),
    ("compile('1', 'x', 'eval')", "denied-builtin", PermissionError),
    ("input()", "denied-builtin", PermissionError),
    ("import sys", "denied-module", ImportError),
    ("import subprocess", "denied-module", ImportError),
    ("import importlib", "denied-module", ImportError),
    ("from builtins import open as raw_open", "denied-module", ImportError),
    ("import ctypes", "denied-module", ImportError),
    ("import pickle", "denied-module", ImportError),
    ("import socket", "denied-module", ImportError),
    ("import numpy._core", "denied-module", ImportError),
    ("import numpy\nnumpy.ctypeslib", "denied-module", ImportError),
    ("from numpy import ctypeslib", "denied-module", ImportError),
    ("import os.path\nos.path.sys", "denied-module", ImportError),
    ("import warnings\nwarnings.sys", "denied-module", ImportError),
    ("import PIL.Image\nPIL.Image.builtins", "denied-module", ImportError),
    ("import uuid\nuuid.sys", "denied-module", ImportError),
    ("import uuid\nuuid.platform", "denied-module", ImportError),
    ("import uuid\ngetattr(uuid, '_uuid')", "no-underscore-attr", AttributeError),
    ("import uuid\ngetattr(uuid, '_get_command_stdout')", "no-underscore-attr", AttributeError),
    ("import uuid\nuuid.os.system('true')", "denied-os-function", PermissionError),
    ("from uuid import os\nos.popen", "denied-os-function", PermissionError),
    ("import uuid\nuuid.getnode = print", "no-module-write", PermissionError),
    ("import os\nos.system('true')", "denied-os-function", PermissionError),
    ("from os import popen", "denied-os-function", PermissionError),
    ("import os\nos.fork", "denied-os-function", PermissionError),
    ("import os\nos.environ['HOME'] = '/'", "read-only-environ", PermissionError),
    ("import numpy\nnumpy.zeros(3).ctypes", "no-frame-access", AttributeError),
    ("open('/proc/self/environ').read()", "denied-path", PermissionError),
    ("import io\nio.open('/proc/self/status')", "denied-path", PermissionError),
    ("import pathlib\npathlib.Path('/sys/kernel/hostname').read_text()", "denied-path", PermissionError),
    (
        "import functools\nimport PIL.Image\ndef g():\n    pass\n"
        "functools.update_wrapper(g, PIL.Image.open, assigned=(), updated=('__globals__',))",
        "denied-function",
        PermissionError,
    ),
    ("import typing\ntyping.get_type_hints(len)", "denied-function", PermissionError),
    ("import string\nstring.Formatter", "denied-function", PermissionError),
    ("import numpy as np\nnp.load('x.npy', allow_pickle=True)", "no-pickle", PermissionError),
    ("import PIL.Image\nPIL.Image.Image.save = print", "no-class-write", PermissionError),
    ("import cv2\ncv2.imwrite = print", "no-module-write", PermissionError),
    ("__pbx__.calls = []", "reserved-object", PermissionError),
    ("display({'application/vnd.pixelbox.artifact+json': {}}, raw=True)", "no-channel-forgery", PermissionError),
    ("import imageio.v3 as iio\niio.imread('http://127.0.0.1:9/x.png')", "no-network", None),
]


@pytest.mark.parametrize(("code", "rule", "flavour"), RUNTIME_ESCAPES)
def test_runtime_escape_is_refused_with_its_rule(
    shell: InteractiveShell, code: str, rule: str, flavour: type[BaseException] | None
) -> None:
    result = shell.run_cell(code)
    error = result.error_before_exec or result.error_in_exec
    assert error is not None
    if flavour is None:  # a library wrapped our error (urllib's URLError): the rule still reaches the agent
        assert f"(policy rule: {rule})" in str(error)
        return
    assert isinstance(error, PolicyViolation) and isinstance(error, flavour), repr(error)
    assert type(error).__name__ == "PolicyViolation"
    assert error.rule == rule
    assert f"(policy rule: {rule})" in str(error)


def test_denied_import_is_caught_by_except_importerror_and_lists_allowed(shell: InteractiveShell) -> None:
    value = run_ok(shell, "try:\n    import shutil\nexcept ImportError as exc:\n    caught = str(exc)\ncaught")
    assert "denied-module" in value
    assert "numpy" in value and "PIL" in value and "cv2" in value


def test_destructive_operation_outside_workspace_leaves_file_intact(
    shell: InteractiveShell, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = Path(os.path.expanduser("~")) / f"pixelbox-policy-probe-{os.getpid()}"
    outside.write_text("keep me")
    try:
        error = run_refused(shell, f"import os\nos.remove({str(outside)!r})")
        assert error.rule == "denied-path"
        assert outside.read_text() == "keep me"
    finally:
        outside.unlink()


def test_policy_survives_a_namespace_reset(shell: InteractiveShell) -> None:
    shell.reset()
    shell.user_ns["__pbx__"] = Recorder()
    error = run_refused(shell, "run = eval\nrun('1')")
    assert error.rule == "denied-builtin"
    assert "get_ipython" not in shell.user_ns


# ---------------------------------------------------------------- ordinary image work keeps working


def test_pil_crop_rotate_save_and_reopen(shell: InteractiveShell) -> None:
    size = run_ok(
        shell,
        (
            "from PIL import Image, ImageOps\n"
            "img = Image.new('RGB', (100, 80), (10, 20, 30))\n"
            "part = img.crop((10, 10, 50, 40)).rotate(90, expand=True)\n"
            "ImageOps.mirror(part).save('part.png')\n"
            "again = Image.open('part.png')\n"
            "again.size, again.getpixel((0, 0))"
        ),
    )
    assert size == ((30, 40), (10, 20, 30))


def test_numpy_slices_and_augmented_assignment(shell: InteractiveShell) -> None:
    total = run_ok(
        shell,
        (
            "import numpy as np\n"
            "a = np.zeros((20, 20), dtype=np.int32)\n"
            "a[0:10] += 5\n"
            "a[:, 0] *= 3\n"
            "a[a > 10] -= 1\n"
            "int(a.sum())"
        ),
    )
    assert total == 10 * 19 * 5 + 10 * 14


def test_augmented_item_assignment_evaluates_index_once(shell: InteractiveShell) -> None:
    assert run_ok(
        shell,
        (
            "import numpy as np\n"
            "arr = np.arange(6)\n"
            "calls = []\n"
            "def pick():\n"
            "    calls.append(1)\n"
            "    return 2\n"
            "arr[pick()] += 100\n"
            "int(arr[2]), len(calls)"
        ),
    ) == (102, 1)


def test_cv2_pipeline(shell: InteractiveShell) -> None:
    shape, peak, kept = run_ok(
        shell,
        (
            "import cv2\nimport numpy as np\n"
            "bgr = np.zeros((50, 60, 3), np.uint8)\n"
            "bgr[10:20, 10:30] = 255\n"
            "gray = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)\n"
            "edges = cv2.Canny(cv2.GaussianBlur(gray, (3, 3), 0), 50, 150)\n"
            "_, mask = cv2.threshold(gray, 127, 255, cv2.THRESH_BINARY)\n"
            "gray.shape, int(edges.max()), int((mask > 0).sum())"
        ),
    )
    assert shape == (50, 60) and peak == 255 and kept == 10 * 20


def test_matplotlib_savefig(shell: InteractiveShell) -> None:
    run_ok(
        shell,
        (
            "import matplotlib.pyplot as plt\n"
            "fig, ax = plt.subplots()\n"
            "ax.plot([1, 2, 3], [3, 1, 2])\n"
            "fig.savefig('plot.png')\n"
            "plt.close(fig)"
        ),
    )
    assert Path("plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_scipy_and_skimage(shell: InteractiveShell) -> None:
    count, level = run_ok(
        shell,
        (
            "import numpy as np\nimport scipy.ndimage as ndi\nfrom skimage import filters\n"
            "labels, count = ndi.label(np.array([[1, 0, 1], [0, 0, 0], [1, 1, 0]]))\n"
            "count, float(filters.threshold_otsu(np.array([[0, 0, 200, 210]], dtype=np.uint8)))"
        ),
    )
    assert count == 3 and 0 <= level < 200


def test_classes_with_self_and_state_across_cells(shell: InteractiveShell) -> None:
    run_ok(
        shell,
        (
            "class Tally:\n"
            "    kind = 'tally'\n"
            "    def __init__(self, start):\n"
            "        self.n = start\n"
            "    def bump(self, k=1):\n"
            "        self.n += k\n"
            "        return self.n\n"
            "    def __eq__(self, other):\n"
            "        return isinstance(other, Tally) and other.n == self.n\n"
            "t = Tally(3)"
        ),
    )
    assert run_ok(shell, "t.bump(); t.bump(2), t == Tally(6)") == (6, True)
    assert run_ok(shell, "Tally.kind = 'changed'\nTally.kind") == "changed"


def test_functions_defined_earlier_are_callable_later(shell: InteractiveShell) -> None:
    run_ok(shell, "def area(box):\n    x1, y1, x2, y2 = box\n    return (x2 - x1) * (y2 - y1)")
    assert run_ok(shell, "area((10, 20, 30, 60))") == 800


def test_comprehensions_generators_and_unpacking(shell: InteractiveShell) -> None:
    value = run_ok(
        shell,
        (
            "pairs = [(1, 'a'), (2, 'b'), (3, 'c')]\n"
            "labels = [f'{i}:{n}{s}' for i, (n, s) in enumerate(pairs)]\n"
            "index = {s: n for n, s in pairs}\n"
            "odd = {n for n, _ in pairs if n % 2}\n"
            "def squares(k):\n    for i in range(k):\n        yield i * i\n"
            "first, *rest = sorted(squares(4), reverse=True)\n"
            "labels, index['b'], odd, first, rest, sum(n for n, _ in pairs)"
        ),
    )
    assert value == (["0:1a", "1:2b", "2:3c"], 2, {1, 3}, 9, [4, 1, 0], 6)


def test_builtins_star_args_and_lambdas(shell: InteractiveShell) -> None:
    value = run_ok(
        shell,
        (
            "def f(*args, **kwargs):\n    return sum(args) + len(kwargs)\n"
            "args = (1, 2, 3)\nopts = {'a': 1}\n"
            "boxes = [(5, 1), (2, 9), (7, 4)]\n"
            "(f(*args, **opts), sorted(boxes, key=lambda b: b[1])[0], min(3, 1, 2), max([4, 8]), abs(-2),\n"
            " round(2.567, 2), list(zip('ab', range(2))), isinstance(1.0, float), len(range(5)),\n"
            " getattr(boxes, 'count')((2, 9)), getattr(boxes, 'missing', 'dflt'), hasattr(boxes, 'append'))"
        ),
    )
    assert value == (7, (5, 1), 1, 8, 2, 2.57, [("a", 0), ("b", 1)], True, 5, 1, "dflt", True)


def test_strings_format_and_fstrings(shell: InteractiveShell) -> None:
    value = run_ok(
        shell,
        (
            "w, h = 640, 480\n"
            "box = {'x': 3}\n"
            "(f'{w}x{h} {w / h:.2f}', '{} px, {:>5}'.format(w, h), '{0[x]} {k}'.format(box, k='v'),\n"
            " '{x}'.format_map(box), str.format('{}-{}', 1, 2))"
        ),
    )
    assert value == ("640x480 1.33", "640 px,   480", "3 v", "3", "1-2")


def test_try_except_with_and_files_in_workspace(shell: InteractiveShell) -> None:
    value = run_ok(
        shell,
        (
            "import os, json\n"
            "os.makedirs('out/sub', exist_ok=True)\n"
            "with open(os.path.join('out', 'sub', 'meta.json'), 'w') as fh:\n"
            "    json.dump({'ok': True}, fh)\n"
            "try:\n    1 / 0\nexcept ZeroDivisionError as exc:\n    caught = str(exc)\n"
            "with open('out/sub/meta.json') as fh:\n    meta = json.load(fh)\n"
            "os.rename('out/sub/meta.json', 'out/meta.json')\n"
            "os.remove('out/meta.json')\n"
            "meta, caught, sorted(os.listdir('out')), os.getcwd() == os.path.abspath('.')"
        ),
    )
    assert value == ({"ok": True}, "division by zero", ["sub"], True)


def test_print_goes_to_real_stdout(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    run_ok(shell, "for i in range(2):\n    print('row', i, sep='=')")
    assert capsys.readouterr().out.splitlines()[-2:] == ["row=0", "row=1"]


def test_last_expression_becomes_out(shell: InteractiveShell) -> None:
    result = shell.run_cell("width = 7\nwidth * 6", store_history=True)
    assert result.result == 42
    assert shell.user_ns["Out"][result.execution_count] == 42


def test_dataclass_io_buffer_and_stdlib(shell: InteractiveShell) -> None:
    value = run_ok(
        shell,
        (
            "from dataclasses import dataclass\nimport io, re, collections, itertools, math\n"
            "from PIL import Image\n"
            "@dataclass\nclass Box:\n    x: int\n    y: int = 2\n"
            "buf = io.BytesIO()\nImage.new('L', (4, 4)).save(buf, format='PNG')\n"
            "(Box(1), buf.getvalue()[:4], re.findall(r'\\d+', 'a1b22'),\n"
            " collections.Counter('aab')['a'], list(itertools.islice(itertools.count(5), 2)), math.floor(2.7))"
        ),
    )
    assert repr(value[0]) == "Box(x=1, y=2)"
    assert value[1:] == (b"\x89PNG", ["1", "22"], 2, [5, 6], 2)


def test_closures_nonlocal_global_and_walrus(shell: InteractiveShell) -> None:
    value = run_ok(
        shell,
        (
            "hits = 0\n"
            "def counter():\n    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n        return n\n"
            "    return inc\n"
            "def note():\n    global hits\n    hits += 1\n"
            "inc = counter(); inc(); note()\n"
            "[y := 4, y ** 2], inc(), hits"
        ),
    )
    assert value == ([4, 16], 2, 1)


def test_os_proxy_reads_environment_and_paths(shell: InteractiveShell) -> None:
    os.environ["PIXELBOX_POLICY_PROBE"] = "seen"
    try:
        value = run_ok(
            shell,
            (
                "import os\nimport os.path as osp\nfrom os import path\n"
                "os.environ.get('PIXELBOX_POLICY_PROBE'), os.getenv('PIXELBOX_POLICY_PROBE'),\\\n"
                "    osp.join('a', 'b'), path.splitext('x.png')[1], 'PIXELBOX_POLICY_PROBE' in os.environ"
            ),
        )
    finally:
        del os.environ["PIXELBOX_POLICY_PROBE"]
    assert value == ("seen", "seen", "a/b", ".png", True)


def test_recorder_binding_is_readable(shell: InteractiveShell) -> None:
    assert run_ok(shell, "__pbx__.call(21) * 2") == 42
    assert shell.user_ns["__pbx__"].calls[-1] == 21


def test_display_of_ordinary_objects_works(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    run_ok(shell, "display('shown')")
    assert "shown" in capsys.readouterr().out


# ---------------------------------------------------------------- settings and rules


def test_settings_reject_unknown_keys_and_bad_values() -> None:
    with pytest.raises(ValueError, match="unknown policy section keys"):
        PolicySettings.from_section({"enabled": True, "allow": ["sys"]})
    with pytest.raises(ValueError, match="must be a list of non-empty strings"):
        PolicySettings.from_section({"extra_modules": "sys"})
    with pytest.raises(ValueError, match="starting with '__pbx'"):
        PolicySettings.from_section({"reserved_names": ["recorder"]})
    settings = PolicySettings.from_section({"enabled": True, "extra_modules": ["html"], "deny_modules": ["cv2"]})
    assert settings.extra_modules == ("html",) and settings.deny_modules == ("cv2",)


def test_module_rules_extend_and_deny() -> None:
    rules = ModuleRules(extra_allowed=["html"], extra_denied=["scipy.io"])
    assert rules.allows("html.parser") and rules.allows("scipy.ndimage")
    assert not rules.allows("scipy.io") and not rules.allows("scipy.io.matlab")
    assert not rules.allows("numpy.ctypeslib") and not rules.allows("numpyx")
    assert not ModuleRules().allows("html")


def test_check_source_rejects_outside_ipython() -> None:
    tree = check_source("x = [1, 2]\nx[0] += 1\n__pbx__.call(x)")
    assert tree.body
    with pytest.raises(PolicyViolation, match="no-underscore-attr"):
        check_source("x.__dict__")


def test_ipython_display_module_is_a_safe_proxy(shell: InteractiveShell) -> None:
    run_ok(shell, "from IPython.display import display, Image\ndisplay(1)")
    refused = run_refused(shell, "from IPython.display import publish_display_data")
    assert "publish_display_data" in str(refused)


# ---------------------------------------------------------------- the audit hook behind the guards


class _RunsExec:
    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (exec, ("leaked_ran = True",))


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        ("leaked_exec('print(1)')", "denied-builtin"),
        ("leaked_compile('1', 'x', 'eval')", "denied-builtin"),
        ("leaked_loads(payload)", "no-pickle"),
    ],
)
def test_audit_hook_refuses_real_exec_compile_and_pickle_reached_from_a_cell(
    shell: InteractiveShell, code: str, rule: str
) -> None:
    """Should a cell ever hold the real ``exec``, ``compile`` or ``pickle.loads`` (by a route the
    guards missed), the audit hook still refuses them while the cell runs."""
    import builtins
    import pickle

    shell.user_ns.update(
        leaked_exec=builtins.exec,
        leaked_compile=builtins.compile,
        leaked_loads=pickle.loads,
        payload=pickle.dumps(_RunsExec()),
    )
    error = run_refused(shell, code)
    assert f"policy rule: {rule}" in str(error)
    assert "leaked_ran" not in shell.user_ns


def _library_eval(expression: str, **names: Any) -> Any:
    """Stands for a library function that evaluates a string it is given (ImageMath.unsafe_eval did)."""
    return eval(expression, None, names)


def test_audit_hook_refuses_string_code_a_library_evaluates_when_it_reaches_frames(shell: InteractiveShell) -> None:
    """A string evaluated by library code runs outside the attribute guard; the hook still refuses
    it when it names frame or code attributes (a generator's frame leads to the real builtins)."""
    shell.user_ns.update(library_eval=_library_eval)
    error = run_refused(shell, "import pathlib\nlibrary_eval('g.gi_frame.f_globals', g=pathlib.Path('.').glob('*'))")
    assert "policy rule: no-frame-access" in str(error) and "gi_frame" in str(error)
    nested = run_refused(shell, "library_eval('[t.tb_frame for t in x]', x=[])")
    assert "tb_frame" in str(nested)
    spelled = run_refused(shell, "library_eval('getattr(g, name)', g=1, name='gi_' + 'frame')")
    assert "getattr" in str(spelled)
    assert run_ok(shell, "library_eval('a + 1', a=1)") == 2


def test_uuid_works_and_its_program_fallback_starts_nothing(
    shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``uuid.getnode`` falls back to running ``ip``/``ifconfig`` when libuuid gives no node.

    The route is made live on purpose: libuuid is switched off and an ``ip`` that leaves a marker
    is put first on PATH. Outside a cell that ``ip`` runs (so the route is real); from a cell
    the audit hook refuses the start, uuid swallows the refusal and hands out a random node
    (multicast bit set), and the marker never appears.
    """
    import uuid

    marker = tmp_path / "ip-ran"
    fake_ip = tmp_path / "ip"
    fake_ip.write_text(f"#!/bin/sh\ntouch {marker}\n")
    fake_ip.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(uuid, "_generate_time_safe", None)
    monkeypatch.setattr(uuid, "_node", None)
    uuid._get_command_stdout("ip", "link")
    assert marker.exists(), "the fallback route must be live for this test to mean anything"
    marker.unlink()
    node = run_ok(shell, "import uuid\nuuid.getnode()")
    assert not marker.exists(), "uuid.getnode started a program from a cell"
    assert node & (1 << 40), f"expected a random (multicast) node, got {node:#x}"
    text = run_ok(shell, "from uuid import uuid4, uuid5, NAMESPACE_URL\nstr(uuid4())[8], uuid5(NAMESPACE_URL, 'a').hex")
    assert text == ("-", uuid.uuid5(uuid.NAMESPACE_URL, "a").hex)
    assert not marker.exists()


def test_library_code_that_compiles_its_own_source_still_runs(shell: InteractiveShell) -> None:
    assert run_ok(shell, "import collections\nP = collections.namedtuple('P', 'x y')\nP(1, 2).y") == 2
    assert run_ok(shell, "import dataclasses\n@dataclasses.dataclass\nclass D:\n    x: int = 3\nD().x") == 3


def test_globals_is_a_copy_without_dunder_names(shell: InteractiveShell) -> None:
    names = run_ok(shell, "seen = 1\n_mine = 2\nspace = globals()\nspace['later'] = 3\nsorted(space)")
    assert "seen" in names and "_mine" in names
    assert not [name for name in names if name.startswith("__")], names
    assert "later" not in shell.user_ns, "globals() is a copy: writing to it binds nothing"


def test_own_classes_keep_private_state_and_special_methods(shell: InteractiveShell) -> None:
    value = run_ok(
        shell,
        (
            "class Base:\n"
            "    def __init__(self, n):\n"
            "        self._n = n\n"
            "class Box(Base):\n"
            "    _made = 0\n"
            "    def __init__(self, n):\n"
            "        super().__init__(n)\n"
            "        Box._made += 1\n"
            "        self._n += 1\n"
            "    def __repr__(self):\n"
            "        return f'{type(self).__name__}({self._n})'\n"
            "box = Box(1)\n"
            "repr(box), getattr(box, '_missing', 'default'), hasattr(box, '_n'), Box._made"
        ),
    )
    assert value == ("Box(2)", "default", True, 1)


def test_a_trusted_program_window_lets_start_only_that_program_and_stop_only_its_processes() -> None:
    from pixelbox.kernel.policy import audit

    start = ("/usr/bin/true", ["/usr/bin/true"], None, None)
    assert not audit._trusted("subprocess.Popen", start)
    with audit.trusted_program("/usr/bin/true") as program:
        assert audit._trusted("subprocess.Popen", start)
        assert not audit._trusted("subprocess.Popen", ("/bin/sh", ["/bin/sh"], None, None))
        assert not audit._trusted("os.system", (b"true",)) and not audit._trusted("os.kill", (4242, 9))
        program.pids.add(4242)
        assert audit._trusted("os.kill", (4242, 9))
    assert not audit._trusted("subprocess.Popen", start) and not audit._trusted("os.kill", (4242, 9))


def test_refused_dunders_say_what_to_write_instead(shell: InteractiveShell) -> None:
    static = run_refused(shell, "size = 2\nkind = size.__class__")
    assert "(write type(obj) instead)" in str(static)
    runtime = run_refused(shell, "getattr(2, '__dict__')")
    assert "write vars(obj) for objects of your own classes" in str(runtime)


def test_vars_reads_own_objects_only(shell: InteractiveShell) -> None:
    own = run_ok(shell, "class Point:\n    def __init__(self):\n        self.x, self._y = 1, 2\nvars(Point())")
    assert own == {"x": 1, "_y": 2}
    assert run_refused(shell, "from PIL import Image\nvars(Image.new('L', (1, 1)))").rule == "denied-builtin"


def test_no_guard_name_can_be_named_and_trusted_bases_hide_nothing(shell: InteractiveShell) -> None:
    from pixelbox.kernel.policy import names

    guards = [name for name in shell.user_ns["__builtins__"] if name.startswith("_")]
    assert guards and not [name for name in guards if names.private_name(name)], guards
    private = {n for t in names.TRUSTED_BASES for n in dir(t) if n.startswith("_") and not n.startswith("__")}
    assert private == {"_abc_impl", "_is_protocol"}, "a trusted base must not bring private attributes to reach"
