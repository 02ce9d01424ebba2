"""Escapes from the restricted policy (local backend, policy on): dunder walks, getattr /
vars / globals tricks, format-string and operator back doors, import loopholes, shell access,
monkey-patching and pickle. Each must end as a PolicyViolation naming its rule, run nothing,
and leave the kernel and its variables intact. See docs/policy.md for the rules.
"""

from __future__ import annotations

import pytest

from tests.hardening.support import Target, message

HARDENING_BACKENDS = ("local",)

ESCAPES = {
    "dunder_walk_to_subclasses": ("().__class__.__base__.__subclasses__()", "no-underscore-attr"),
    "getattr_with_built_name": ("getattr((), '__cla' + 'ss__')", "no-underscore-attr"),
    "format_string_attribute": ("'{0.__class__}'.format(1)", "no-underscore-attr"),
    "format_map_attribute": ("'{x.__class__}'.format_map({'x': 1})", "no-underscore-attr"),
    "attrgetter": ("import operator\noperator.attrgetter('__cl' + 'ass__')(1)", "no-underscore-attr"),
    "methodcaller_reduce": ("import operator\noperator.methodcaller('__reduce_ex__', 2)(1)", "no-underscore-attr"),
    "map_getattr": ("list(map(getattr, [1], ['__cl' + 'ass__']))", "no-underscore-attr"),
    "partial_getattr": ("import functools\nfunctools.partial(getattr, 1)('__cl' + 'ass__')", "no-underscore-attr"),
    "vars": ("vars()", "denied-builtin"),
    "globals_builtins": ("globals()['__builtins__']", "no-underscore-name"),
    "globals_from_library_frame": (
        "import dataclasses\n@dataclasses.dataclass\nclass D:\n"
        "    g: dict = dataclasses.field(default_factory=globals)\nD()",
        "denied-builtin",
    ),
    "private_attribute_of_library_object": ("from PIL import Image\nImage.new('L', (2, 2))._im", "no-underscore-attr"),
    "private_attribute_through_subclass": (
        "from PIL import Image\nclass Mine(Image.Image):\n    def peek(self):\n        return self._im\nMine().peek()",
        "no-underscore-attr",
    ),
    "private_module_attribute": ("import numpy as np\nnp._core", "no-underscore-attr"),
    "super_to_getattribute": (
        "class A:\n    def f(self):\n        return super().__getattribute__('f')\nA().f()",
        "no-underscore-attr",
    ),
    "guard_name_rebound": ("_getattr_ = lambda obj, name: obj", "no-underscore-name"),
    "dunder_import": ("__import__('subprocess')", "no-underscore-name"),
    "importlib": ("import importlib\nimportlib.import_module('subprocess')", "denied-module"),
    "builtins_module": ("import builtins\nbuiltins.open", "reserved-name"),
    "sys_through_warnings": ("import warnings\nwarnings.sys.modules", "denied-module"),
    "os_system_through_pil": ("import PIL.Image\nPIL.Image.os.system('id')", "denied-os-function"),
    "numpy_ctypeslib": ("import numpy as np\nnp.ctypeslib", "denied-module"),
    "traceback_frame": ("try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame", "no-underscore-attr"),
    "generator_frame": ("g = (i for i in range(3))\ng.gi_frame.f_globals", "no-frame-access"),
    "exec_eval_compile": ("exec('import os')", "denied-builtin"),
    "shell_escape": ("!id", "no-shell-access"),
    "get_ipython": ("get_ipython().system('id')", "no-shell-access"),
    "environ_write": ("import os\nos.environ['LD_PRELOAD'] = '/tmp/x.so'", "read-only-environ"),
    "proc_self_mem": ("import pathlib\npathlib.Path('/proc/self/mem').read_bytes()", "denied-path"),
    "io_fileio_bypass": ("import io\nio.FileIO('/proc/1/environ').read()", "denied-path"),
    "pickle_via_numpy": ("import numpy as np, io\nnp.load(io.BytesIO(b'x'), allow_pickle=True)", "no-pickle"),
    "type_hints_eval": (
        "import typing\ndef f(x: 'open(1)'):\n    pass\ntyping.get_type_hints(f)",
        "denied-function",
    ),
    "imagemath_unsafe_eval": (
        "from PIL import ImageMath\nimport pathlib\n"
        "ImageMath.unsafe_eval('g.gi_frame.f_globals', g=pathlib.Path('.').glob('*'), gi_frame=0, f_globals=0)",
        "denied-function",
    ),
    "string_formatter": ("import string\nstring.Formatter().get_field('0.__class__', [1], {})", "denied-function"),
    "monkeypatch_module": ("import json\njson.dumps = print", "no-module-write"),
    "monkeypatch_library_class": ("from PIL import Image\nImage.Image.save = print", "no-class-write"),
    "ctypes": ("import ctypes\nctypes.CDLL(None)", "denied-module"),
    "subprocess_via_os": ("import os\nos.popen('id').read()", "denied-os-function"),
    "symlink_via_pathlib": ("import pathlib\npathlib.Path('l').symlink_to('/etc/shadow')", "no-links|denied"),
}


@pytest.mark.parametrize("case", list(ESCAPES))
def test_policy_escape_is_refused(target: Target, case: str) -> None:
    assert target.policy
    target.run("marker = 'intact'")
    code, rule = ESCAPES[case]
    result = target.run(code)
    assert result.status == "error" and result.error is not None, message(result)
    assert result.error.ename in ("PolicyViolation", "ReservedNameError"), message(result)
    assert f"policy rule: {rule}" in result.error.evalue or rule.split("|")[0] in result.error.evalue, message(result)
    assert target.run("print(marker)").stdout == "intact\n", "the refused cell must not disturb the kernel"
