"""Instrumentation never changes what a cell means, and keeps the agent's line numbers."""

from __future__ import annotations

import asyncio
import textwrap
from typing import Any

import pytest

from pixelbox.contract.wire import RECORDER_NAME
from pixelbox.kernel.recorder import Recorder
from pixelbox.tracer import cache_info, instrument


def run_both(source: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Execute ``source`` as written and instrumented; return both namespaces (minus the recorder)."""
    source = textwrap.dedent(source)
    plain: dict[str, Any] = {}
    exec(compile(source, "<plain>", "exec"), plain)
    traced: dict[str, Any] = {RECORDER_NAME: Recorder()}
    exec(compile(instrument(source).code, "<traced>", "exec"), traced)
    for ns in (plain, traced):
        ns.pop("__builtins__", None)
        ns.pop(RECORDER_NAME, None)
    return plain, traced


def test_line_count_and_untouched_lines_are_preserved() -> None:
    source = "import numpy as np\n\n# comment with é\nx = np.zeros((4, 4))[1:3,\n   0:2]\nprint(  x  )\n"
    code = instrument(source).code
    assert len(code.splitlines()) == len(source.splitlines())
    assert code.splitlines()[:3] == source.splitlines()[:3]
    assert "  x  " in code


def test_evaluation_order_is_kept() -> None:
    plain, traced = run_both(
        """
        log = []
        def f(tag, value=None):
            log.append(tag)
            return lambda *a, **k: (tag, a, k)
        r = f("callee")(f("a"), *[f("b")], k=f("c"), **{"z": f("d")})
        s = [f("x"), f("y")][f("i") is not None and 0]
        """
    )
    assert traced["log"] == plain["log"] == ["callee", "a", "b", "c", "d", "x", "y", "i"]


def test_short_circuit_and_conditional_expressions() -> None:
    plain, traced = run_both(
        """
        calls = []
        def hit(v):
            calls.append(v)
            return v
        a = hit(0) and hit(1)
        b = hit(2) or hit(3)
        c = hit(4) if hit(0) else hit(5)
        d = 3 > hit(1) > 0
        """
    )
    assert traced["calls"] == plain["calls"] == [0, 2, 0, 5, 1]
    assert (traced["a"], traced["b"], traced["c"], traced["d"]) == (0, 2, 5, True)


def test_exceptions_generators_comprehension_scopes_and_walrus() -> None:
    plain, traced = run_both(
        """
        def gen(n):
            for i in range(n):
                yield i * 2
        values = [y for x in gen(4) if (y := x + 1) > 2]
        squares = {k: k * k for k in range(3)}
        try:
            [][1]
        except IndexError as exc:
            caught = type(exc).__name__
        leaked = 'x' in dir()
        total = sum(v for v in gen(3))
        """
    )
    for key in ("values", "squares", "caught", "leaked", "total", "y"):
        assert traced[key] == plain[key], key


def test_super_locals_decorators_and_classes() -> None:
    plain, traced = run_both(
        """
        import functools
        class Base:
            def who(self):
                return "base"
        class Child(Base):
            __slots__ = ()
            def who(self):
                return "child>" + super().who()
        @functools.lru_cache(maxsize=None)
        def cached(n):
            return n + 1
        def local_names(a, b=2):
            c = a + b
            return sorted(locals())
        who = Child().who()
        names = local_names(1)
        hits = [cached(1), cached(1), cached.cache_info().hits]
        """
    )
    assert traced["who"] == plain["who"] == "child>base"
    assert traced["names"] == plain["names"] == ["a", "b", "c"]
    assert traced["hits"] == plain["hits"]


def test_await_and_async_comprehensions() -> None:
    source = textwrap.dedent(
        """
        import asyncio
        async def double(x):
            await asyncio.sleep(0)
            return x * 2
        async def main():
            return [await double(i) for i in range(3)]
        """
    )
    ns: dict[str, Any] = {RECORDER_NAME: Recorder()}
    exec(compile(instrument(source).code, "<traced>", "exec"), ns)
    assert asyncio.run(ns["main"]()) == [0, 2, 4]


def test_operators_keep_their_results() -> None:
    plain, traced = run_both(
        """
        import numpy as np
        a = np.arange(64, dtype=np.uint8).reshape(8, 8)
        inv = 255 - a
        neg = ~a
        mask = a > 10
        small = 3 <= 4
        sub = 10 - 3.5
        part = a[2:5, ::-1]
        """
    )
    for key in ("inv", "neg", "mask", "part"):
        assert (traced[key] == plain[key]).all(), key
    assert traced["small"] is True and traced["sub"] == 6.5


def test_subscript_targets_are_left_alone() -> None:
    plain, traced = run_both(
        """
        import numpy as np
        a = np.zeros((6, 6), dtype=np.uint8)
        a[1:3, 1:3] = 9
        a[0][0] = 1
        a[5, 5] += 2
        d = {"k": [0, 0]}
        d["k"][1] = 5
        del d["k"][0]
        """
    )
    assert (traced["a"] == plain["a"]).all() and traced["d"] == plain["d"] == {"k": [5]}


def test_transpose_attributes_keep_their_meaning() -> None:
    plain, traced = run_both(
        """
        import numpy as np
        class HasT:
            T = "not an array"
        a = np.arange(48, dtype=np.uint8).reshape(6, 8)
        b = a.T
        c = (a + 1).T.T
        d = (a  # the comment stays
             .T)
        e = HasT().T
        f = np.zeros((3, 4)).T @ np.ones((3, 2))
        a.T[0, 1] = 99
        """
    )
    for key in ("b", "c", "d", "f", "a"):
        assert (traced[key] == plain[key]).all(), key
    assert traced["e"] == plain["e"] == "not an array" and traced["a"][1, 0] == 99


def test_transposes_become_recorder_calls_without_moving_lines() -> None:
    code = instrument("b = a.T\nc = (a + 1).T\nd = (a.\n     T)\na.T[0] = 1\ne = x.Tx\n").code
    assert code.splitlines() == [
        f"b = {RECORDER_NAME}.t(a, 1, 6)",
        f"c = {RECORDER_NAME}.t((a + 1), 2, 12)",
        "d = (a.",  # dot and T on different lines: left to the first-use fallback
        "     T)",
        "a.T[0] = 1",  # written through, not read
        "e = x.Tx",
    ]


def test_self_documenting_fstring_fields_print_the_agents_text() -> None:
    plain, traced = run_both(
        """
        import numpy as np
        a = np.zeros((2, 3))
        text = f"{a.T.shape=} {len(a) = } {a.T.shape}"
        """
    )
    assert traced["text"] == plain["text"] == "a.T.shape=(3, 2) len(a) = 2 (3, 2)"


def test_match_patterns_are_left_as_written() -> None:
    plain, traced = run_both(
        """
        import enum
        import numpy as np
        class E(enum.Enum):
            T = 1
        a = np.zeros((2, 3))
        seen = []
        for value in (E.T, {E.T: a}, 1 - 2j):
            match value:
                case E.T:
                    seen.append("member")
                case {E.T: w} if w.T.shape == (3, 2):
                    seen.append("mapping")
                case 1 - 2j:
                    seen.append("complex")
        """
    )
    assert traced["seen"] == plain["seen"] == ["member", "mapping", "complex"]


def test_writes_through_a_transposed_view_are_not_reads() -> None:
    code = instrument("b.T[0][1] = 3\nb.T[:, 0][1] = 3\ndel b.T[0]\n").code
    assert f"{RECORDER_NAME}.t(" not in code


def test_syntax_error_returns_original_code() -> None:
    source = "x = (1,\nprint(x)\n"
    result = instrument(source)
    assert result.syntax_error is not None and "line" in result.syntax_error
    assert result.code == source and not result.traced


def test_reserved_names_are_flagged_with_their_line() -> None:
    result = instrument("x = 1\n__pbx__.c = None\n")
    assert not result.traced
    assert result.refusal is not None and "line 2" in result.refusal


def test_line_magics_are_kept_verbatim() -> None:
    source = "%matplotlib inline\nimport os\n!ls\nx = len('ab')\n"
    code = instrument(source).code
    lines = code.splitlines()
    assert lines[0] == "%matplotlib inline" and lines[2] == "!ls"
    assert RECORDER_NAME in lines[3]
    assert instrument(source).untraced_lines == (1, 3)


@pytest.mark.parametrize(
    "source",
    [
        'msg = ("%d x %d"\n       % img.size)\npart = img.crop((0, 0, 5, 5))\n',
        's = """\n%not a magic\n!nor this\n"""\npart = img.crop((0, 0, 5, 5))\n',
        "value = (10\n  % 3)\npart = img.crop((0, 0, 5, 5))\n",
    ],
)
def test_percent_inside_an_expression_is_python_not_a_magic(source: str) -> None:
    result = instrument(source)
    assert result.syntax_error is None and result.untraced_lines == ()
    assert "__pbx__.c(img.crop" in result.code


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("%time part = img.crop((0, 0, 5, 5))\nx = len('a')\n", (1,)),
        ("out = !echo hi\npart = img.crop((0, 0, 5, 5))\n", (1,)),
        ("files = %ls\n", (1,)),
        ("if True:\n    !ls\n    y = len('a')\n", (2,)),
    ],
)
def test_magics_and_shell_escapes_are_reported_untraced(source: str, lines: tuple[int, ...]) -> None:
    result = instrument(source)
    assert result.syntax_error is None and result.untraced_lines == lines


def test_fstrings_keep_their_value_and_are_traced() -> None:
    source = 'name = "a"\nw = 3\ntext = f"{name.upper()}-{len(name)}-{w:>{w}}-{{x}}-{w > 2!r}"\n'
    plain, traced = run_both(source)
    assert traced["text"] == plain["text"] == "A-1-  3-{x}-True"
    result = instrument(source)
    assert "__pbx__.c(len" in result.code and result.untraced_lines == ()


def test_image_op_inside_an_fstring_is_recorded() -> None:
    source = "from PIL import Image\nimg = Image.new('RGB', (10, 8))\nmsg = f\"size {img.crop((0, 0, 4, 4)).size}\"\n"
    rec = Recorder()
    exec(compile(instrument(source).code, "<traced>", "exec"), {RECORDER_NAME: rec})
    assert [e["op"] for e in rec.events] == ["crop"]


def test_cache_hits_return_the_same_object() -> None:
    source = "y = abs(-3)  # cache probe\n"
    before = cache_info()["hits"]
    first = instrument(source)
    second = instrument(source)
    assert first is second
    assert cache_info()["hits"] == before + 1


def test_non_string_input_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="cell source as str"):
        instrument(b"x = 1")  # type: ignore[arg-type]


def test_ops_passed_to_map_and_partial_are_recorded() -> None:
    source = textwrap.dedent(
        """
        import functools
        from PIL import Image
        img = Image.new("RGB", (40, 30))
        boxes = [(0, 0, 10, 10), (10, 10, 20, 20)]
        pieces = list(map(img.crop, boxes))
        turn = functools.partial(img.rotate, 90, expand=True)
        turned = turn()
        doubled = list(map(lambda b: b[0] * 2, boxes))
        """
    )
    rec = Recorder()
    ns: dict[str, Any] = {RECORDER_NAME: rec}
    exec(compile(instrument(source).code, "<traced>", "exec"), ns)
    assert [(e["op"], e["src"]["line"]) for e in rec.events] == [("crop", 6), ("crop", 6), ("rotate", 8)]
    assert rec.events[1]["params"]["box_px"] == [10, 10, 20, 20]
    assert ns["turned"].size == (30, 40) and ns["doubled"] == [0, 20]
