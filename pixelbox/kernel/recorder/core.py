"""The recorder: the object instrumented cells call (bound as ``__pbx__``) and its event buffer.

Instrumented code calls ``c``/``s``/``t``/``sub``/``inv``/``gt``... (see ``pixelbox.tracer.dynamic.rewrite``).
They return the callee unchanged unless it is an image operation, so ordinary calls run in the
agent's own frame. Recording never raises into the agent's code: a failure to describe a call
is counted and reported as a trace problem instead.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import partial, reduce
from itertools import starmap
from operator import methodcaller
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any

from pixelbox.contract.events import EVENT_VERSION
from pixelbox.contract.geometry import IDENTITY, Lineage, clip_box, normalize_box
from pixelbox.contract.tools import ToolError
from pixelbox.kernel.callers import MethodCaller
from pixelbox.kernel.recorder import libs
from pixelbox.kernel.recorder.images import Registry, is_image, size_of
from pixelbox.kernel.recorder.ops import OpTable, Spec
from pixelbox.kernel.recorder.ops.arrays import (
    bitwise_invert,
    compare,
    invert_operator,
    is_transposed_view,
    subscript,
)
from pixelbox.kernel.recorder.ops.base import CHAINED, Args, Observed, Virtual, transpose_obs

_MIN_SLICE_SIDE = 4
MAX_EVENTS_PER_EXECUTION = 20_000
"""Bound on one execution's batch (a per-pixel slicing loop must not flood the host)."""
_GEOMETRIC = ("crop", "rotate", "flip", "resize")
_BRIDGES = (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "imageio", "recorder_link.py"),
)
"""Files whose calls into the recorder only pass another caller's request on."""
_CALLER: Any = object()
"""Default of :meth:`Recorder.c`'s ``cell``: work it out from the calling frame."""


ToolRunner = Callable[[str, str], Any]
"""Runs one atomic tool call (name, arguments as JSON text): :func:`pixelbox.kernel.atomic.run_tool`."""


class Recorder:
    """Records canonical events for one kernel; one instance per kernel (see ``current()``)."""

    __slots__ = (
        "__weakref__",
        "_artifacts_by_path",
        "_pending_artifacts",
        "_plain",
        "_root_paths",
        "_seals",
        "_tools",
        "cell_files",
        "dropped",
        "events",
        "exec_index",
        "internal_errors",
        "max_events",
        "problems",
        "registry",
        "seq",
        "table",
    )

    def __init__(self, max_events: int = MAX_EVENTS_PER_EXECUTION) -> None:
        if max_events < 1:
            raise ValueError(f"max_events must be at least 1, got {max_events}")
        self.max_events = max_events
        self.dropped = 0
        self.registry = Registry()
        self.table = OpTable()
        self.table.refresh()
        self._plain = self.table.plain
        self.exec_index = -1
        self.seq = 0
        self.events: list[dict[str, Any]] = []
        self._seals: list[str] = []
        """One fingerprint per recorded event, kept apart from ``events``, so an event appended,
        edited or removed by anything but the recorder is noticed when the execution ends."""
        self.problems: list[str] = []
        self.internal_errors = 0
        self._pending_artifacts: dict[str, Any] = {}
        self._artifacts_by_path: dict[str, Any] = {}
        self._root_paths: dict[str, str] = {}
        self.cell_files: dict[str, int] = {}
        """Compiled cell file name -> execution index, so calls into earlier cells say which cell."""
        self._tools: ToolRunner | None = None

    # -- execution boundaries ----------------------------------------------------------------
    def begin(self) -> int:
        """Start a new execution; returns its index."""
        self.exec_index += 1
        self.events = []
        self._seals = []
        self.problems = []
        self.internal_errors = 0
        self.dropped = 0
        self.table.refresh()
        return self.exec_index

    def end(self) -> list[dict[str, Any]]:
        """Finish the execution: attach pending artifacts, and return its events in order."""
        for label, artifact in self._pending_artifacts.items():
            self._append(self._event("io", "pixelbox.capture", None, [label], None, {"action": "capture"}, artifact))
        self._pending_artifacts = {}
        self.problems.extend(self._unsealed())
        self.problems.extend(self.table.replaced())
        if self.internal_errors:
            self.problems.append(f"the recorder failed to describe {self.internal_errors} call(s)")
        if self.dropped:
            self.problems.append(
                f"{self.dropped} event(s) beyond the cap of {self.max_events} per execution were dropped"
            )
        return self.events

    def _unsealed(self) -> list[str]:
        """Say so when ``events`` is not exactly what the recorder recorded (see ``_seals``)."""
        events = self.events
        if type(events) is not list:
            self.events = []
            return ["the recorder's event list was replaced; the execution's events were dropped"]
        if len(events) != len(self._seals):
            return ["events were added to or removed from the execution's trace outside the recorder"]
        if any(_seal(event) != seal for event, seal in zip(events, self._seals, strict=True)):
            return ["the execution's events were edited outside the recorder"]
        return []

    # -- called by instrumented code ---------------------------------------------------------
    def c(self, fn: Any, line: int, col: int, cell: Any = _CALLER) -> Any:
        """Return ``fn``, or a recording stand-in when calling it is an image operation.

        ``cell`` is given by the stand-ins for callables that call their argument from C
        (``map``, ``reduce``, ``methodcaller``...): the caller's cell, as :meth:`_cell` says.
        """
        t = type(fn)
        if t is FunctionType:
            if fn.__code__ in self._plain:
                return fn
        elif t is MethodType:
            func = fn.__func__
            if type(func) is FunctionType and func.__code__ in self._plain:
                return fn
        elif t is type:
            if fn is map or fn is starmap:
                return self._traced_mapper(fn, line, col, self._caller_cell(cell))
            return fn
        elif t is partial:
            return self._traced_partial(fn, line, col, self._caller_cell(cell))
        elif t is methodcaller:
            return self._traced_methodcaller(fn, line, col, self._caller_cell(cell))
        elif t is MethodCaller:
            return self._traced_guarded_caller(fn, line, col, self._caller_cell(cell))
        elif t is BuiltinFunctionType:
            bound = fn.__self__
            if bound is None or type(bound) is ModuleType:
                if fn is reduce:
                    return self._traced_reduce(line, col, self._caller_cell(cell))
                if fn in self._plain:
                    return fn
            elif (type(bound), fn.__name__) in self._plain:
                return fn
        found = self.table.lookup(fn)
        if found is None:
            if fn is exec or fn is eval or fn is compile:
                self.problems.append(f"line {line}: code run through {fn.__name__}() is not traced")
            else:
                self.table.remember_plain(fn)
            return fn
        spec, bound = found
        return _Traced(self, fn, spec, bound, line, col, self._caller_cell(cell))

    # Callables that call an operation from C code, out of the instrumentation's sight: each is
    # replaced by a stand-in that routes the operation through :meth:`c` with the caller's position.

    def _traced_mapper(self, mapper: Any, line: int, col: int, cell: int | None) -> Any:
        """``map(op, ...)`` / ``itertools.starmap(op, ...)``."""

        def traced_map(func: Any, *iterables: Any) -> Any:
            return mapper(self.c(func, line, col, cell), *iterables)

        return traced_map

    def _traced_reduce(self, line: int, col: int, cell: int | None) -> Any:
        """``functools.reduce(op, items, image)`` calls ``op(image, item)`` for each item."""

        def traced_reduce(function: Any, *args: Any) -> Any:
            return reduce(self.c(function, line, col, cell), *args)

        return traced_reduce

    def _traced_partial(self, fn: partial[Any], line: int, col: int, cell: int | None) -> Any:
        """``partial(op, ...)()`` is the op with its bound arguments first."""
        inner = self.c(fn.func, line, col, cell)
        return fn if inner is fn.func else partial(inner, *fn.args, **fn.keywords)

    def _traced_methodcaller(self, fn: methodcaller, line: int, col: int, cell: int | None) -> Any:
        """``methodcaller(name, *args, **kwargs)(obj)`` is ``getattr(obj, name)(*args, **kwargs)``."""
        parts = _methodcaller_parts(fn)
        if parts is None:
            return fn
        name, args, kwargs = parts

        def traced_methodcaller(obj: Any, *extra: Any, **extra_kwargs: Any) -> Any:
            __tracebackhide__ = True
            if extra or extra_kwargs:  # let methodcaller raise its own TypeError
                return fn(obj, *extra, **extra_kwargs)
            return self.c(getattr(obj, name), line, col, cell)(*args, **kwargs)

        return traced_methodcaller

    def _traced_guarded_caller(self, fn: MethodCaller, line: int, col: int, cell: int | None) -> Any:
        """The policy's ``methodcaller``: the method its guarded lookup reaches, traced."""

        def traced_methodcaller(obj: Any, *extra: Any, **extra_kwargs: Any) -> Any:
            __tracebackhide__ = True
            if extra or extra_kwargs:
                return fn(obj, *extra, **extra_kwargs)
            return self.c(fn.lookup(obj, fn.name), line, col, cell)(*fn.args, **fn.kwargs)

        return traced_methodcaller

    def s(self, obj: Any, line: int, col: int) -> Any:
        """Return ``obj``, or a recording stand-in for subscripting an image array."""
        if type(obj) is libs.ndarray and is_image(obj) and min(obj.shape[:2]) >= _MIN_SLICE_SIDE:
            return _Slicer(self, obj, line, col, self._cell(sys._getframe(1)))
        return obj

    def t(self, obj: Any, line: int, col: int) -> Any:
        """``obj.T``: recorded as a transpose when ``obj`` is a labelled image array and the view
        swaps its two spatial axes (a colour image's ``.T`` reverses all three and is not one)."""
        result = obj.T
        if type(obj) is libs.ndarray and self.registry.label(obj) is not None and is_transposed_view(obj, result):
            cell = self._cell(sys._getframe(1))
            self._observe(lambda: transpose_obs(obj, result), "numpy.ndarray.T", line, col, cell=cell)
        return result

    def sub(self, left: Any, right: Any, line: int, col: int) -> Any:
        result = left - right
        if type(result) is libs.ndarray:
            cell = self._cell(sys._getframe(1))
            labelled = self.registry.label(right) is not None
            self._observe(lambda: invert_operator(left, right, result, labelled), "operator.sub", line, col, cell=cell)
        return result

    def inv(self, value: Any, line: int, col: int) -> Any:
        result = ~value
        if type(result) is libs.ndarray:
            cell = self._cell(sys._getframe(1))
            self._observe(lambda: bitwise_invert(value, result), "operator.invert", line, col, cell=cell)
        return result

    def gt(self, left: Any, right: Any, line: int, col: int) -> Any:
        return self._compare(left, right, left > right, ">", line, col)

    def ge(self, left: Any, right: Any, line: int, col: int) -> Any:
        return self._compare(left, right, left >= right, ">=", line, col)

    def lt(self, left: Any, right: Any, line: int, col: int) -> Any:
        return self._compare(left, right, left < right, "<", line, col)

    def le(self, left: Any, right: Any, line: int, col: int) -> Any:
        return self._compare(left, right, left <= right, "<=", line, col)

    def _compare(self, left: Any, right: Any, result: Any, symbol: str, line: int, col: int) -> Any:
        if type(result) is libs.ndarray:
            api = {">": "operator.gt", ">=": "operator.ge", "<": "operator.lt", "<=": "operator.le"}[symbol]
            cell = self._cell(sys._getframe(2))
            known = self.registry.label
            self._observe(
                lambda: compare(left, right, symbol, result, lambda x: known(x) is not None), api, line, col, cell=cell
            )
        return result

    # -- for the image I/O layer and atomic tools ---------------------------------------------
    def register_root(self, obj_or_path: Any, key: str | int) -> str:
        """Declare a task input: an image object, or a path whose loads descend from ``input:K``."""
        label = key if isinstance(key, str) and ":" in key else f"input:{key}"
        if self._from_cell(sys._getframe(1)):
            self.problems.append(f"the cell itself declared an image as {label}; it was not registered")
            return label
        if is_image(obj_or_path):
            self.registry.root(obj_or_path, label)
        else:
            self._root_paths[_real(obj_or_path)] = label
        return label

    def link_artifact(self, obj_or_path: Any, artifact: Any) -> None:
        """Attach a captured artifact to the image (or saved path) it was made from."""
        if self._from_cell(sys._getframe(1)):
            self.problems.append("the cell itself linked an artifact to an image; the link was not made")
            return
        if is_image(obj_or_path):
            label = self.registry.ensure(obj_or_path)
            for event in reversed(self.events):
                if event["op"] == "io" and event["inputs"] == [label] and event["artifact"] is None:
                    self._reseal(event, artifact)
                    return
            self._pending_artifacts[label] = artifact
            return
        path = _real(obj_or_path)
        for event in reversed(self.events):
            saved = event["params"].get("path")
            if event["op"] == "io" and saved is not None and _real(saved) == path and event["artifact"] is None:
                self._reseal(event, artifact)
                return
        self._artifacts_by_path[path] = artifact

    def serve_tools(self, runner: ToolRunner) -> None:
        """Let :meth:`tool` run atomic tools through ``runner`` (the atomic layer installs itself here)."""
        self._tools = runner

    def tool(self, name: str, arguments_json: str) -> Any:
        """Run atomic tool ``name`` with its arguments as JSON text (the host's ``Sandbox.call_tool``).

        Prints a summary line and captures the result as the next image; a bad call raises
        ``ToolError`` saying what is valid. See :mod:`pixelbox.kernel.atomic`.
        """
        if self._tools is None:
            raise ToolError("atomic tools need the image I/O layer; start the sandbox with io enabled")
        return self._tools(name, arguments_json)

    def label_of(self, obj: Any) -> str | None:
        """The id of an image value, if it has one."""
        return self.registry.label(obj)

    def invoke(self, fn: Any, *args: Any, api: str | None = None, **kwargs: Any) -> Any:
        """Call ``fn`` and record it like instrumented code would, with no source position."""
        found = self.table.lookup(fn)
        if found is None:
            raise ValueError(f"{fn!r} is not a known image operation, so invoking it would record nothing")
        spec, bound = found
        if api is not None:
            spec = Spec(spec.op, api, spec.describe)
        return _Traced(self, fn, spec, bound, None, None, None)(*args, **kwargs)

    def _from_cell(self, frame: Any) -> bool:
        """Whether the code behind a call to the recorder's lineage methods is the cell's own.

        The thin bridges to these methods (this package, ``imageio.recorder_link``) are walked past;
        the first caller beyond them must be the kernel's own layers, never code a cell compiled
        (its cells, or ``exec``/``compile`` text, whose file names begin with ``<``)."""
        while frame is not None and frame.f_code.co_filename.startswith(_BRIDGES):
            frame = frame.f_back
        filename = "<none>" if frame is None else frame.f_code.co_filename
        return filename in self.cell_files or filename.startswith("<")

    # -- recording ---------------------------------------------------------------------------
    def _caller_cell(self, cell: Any) -> int | None:
        """``cell``, or when it is ``_CALLER`` the cell of the frame that called :meth:`c`."""
        return self._cell(sys._getframe(2)) if cell is _CALLER else cell

    def _cell(self, frame: Any) -> int | None:
        """The execution that compiled ``frame``'s code, when it is an earlier one."""
        cell = self.cell_files.get(frame.f_code.co_filename)
        return cell if cell != self.exec_index else None

    def _observe(
        self,
        describe: Any,
        api: str,
        line: int | None,
        col: int | None,
        t0: float | None = None,
        cell: int | None = None,
    ) -> None:
        try:
            observed = describe()
            if observed is None:
                return
            previous: str | None = None
            for obs in observed if isinstance(observed, list) else [observed]:
                obs.inputs = [previous if x is CHAINED else x for x in obs.inputs]
                previous = self.record(obs, api, line, col, t0, cell=cell)
        except Exception:
            self.internal_errors += 1

    def record(
        self,
        obs: Observed,
        api: str,
        line: int | None,
        col: int | None,
        t0: float | None = None,
        error: Any = None,
        cell: int | None = None,
    ) -> str | None:
        """Turn one observation into an event (for aliases, just share the input's id).

        Returns the output's id.
        """
        inputs = [x if isinstance(x, str) else self._input_label(x, line, col, cell) for x in obs.inputs if _usable(x)]
        if obs.op == "alias":
            if inputs and obs.output is not None:
                self.registry.bind(obs.output, inputs[0])
            return inputs[0] if inputs else None
        output = None
        if obs.output is not None and error is None:
            output = self._loaded_root(obs, inputs)
            if output is None:
                output = self.registry.fresh(obs.output)
                self.registry.lineage[output] = self._derive(obs, inputs, output)
        params = dict(obs.params)
        if obs.op == "crop" and inputs and "box_px" in params:
            params.update(self._crop_params(inputs[0], params["box_px"]))
        elif obs.op in _GEOMETRIC and output is not None and self.registry.lineage[output].approximate:
            params["approximate"] = True
        artifact = self._artifact_for(obs)
        t_ms = round((time.perf_counter() - t0) * 1000, 3) if t0 is not None else 0.0
        src = {"line": line, "col": col or 0} if line is not None else None
        if src is not None and cell is not None:
            src["cell"] = cell
        self._append(self._event(obs.op, api, src, inputs, output, params, artifact, error, t_ms))
        return output

    def _input_label(self, obj: Any, line: int | None, col: int | None, cell: int | None) -> str:
        """The id of an operation's input, giving it one if it has none.

        A transposed view that :meth:`t` did not record (``.T`` of an array no operation made,
        ``getattr(a, "T")``...) is recorded as that transpose when an operation first uses it
        (at that operation's position).
        """
        label = self.registry.label(obj)
        if label is not None:
            return label
        if type(obj) is libs.ndarray and obj.base is not None and not obj.flags.c_contiguous:
            owner = obj.base if type(obj.base) is libs.ndarray and is_image(obj.base) else None
            candidates = [source for source, _ in self.registry.labelled_arrays()]
            for source in [*candidates, owner] if owner is not None else candidates:
                if source is not obj and is_transposed_view(source, obj):
                    label = self.record(transpose_obs(source, obj), "numpy.ndarray.T", line, col, cell=cell)
                    if label is not None:
                        return label
                    break
        return self.registry.ensure(obj)

    def _loaded_root(self, obs: Observed, inputs: list[str]) -> str | None:
        """The root id the I/O layer gave an image while it was being loaded (``input:K``)."""
        if obs.op != "io" or inputs:
            return None
        loaded = obs.output.of if isinstance(obs.output, Virtual) and obs.output.of is not None else obs.output
        label = self.registry.label(loaded)
        lineage = self.registry.lineage.get(label) if label is not None else None
        return label if lineage is not None and lineage.root == label else None

    def _derive(self, obs: Observed, inputs: list[str], output: str) -> Lineage:
        out_size = self.registry.sizes[output]
        if obs.op == "io" and not inputs:
            root = self._root_paths.get(_real(obs.params.get("path") or ""))
            return Lineage(root, out_size) if root else Lineage(output, out_size)
        if not inputs:
            return Lineage(output, out_size)
        base = self.registry.lineage.get(inputs[0]) or Lineage(inputs[0], self.registry.sizes[inputs[0]])
        if obs.geometry is not None:
            return base.then(obs.geometry, obs.approximate)
        if out_size == self.registry.sizes.get(inputs[0]):
            return base.then(IDENTITY, True)
        return Lineage(output, out_size)

    def _crop_params(self, label: str, box: list[Any]) -> dict[str, Any]:
        size = self.registry.sizes[label]
        lineage = self.registry.lineage.get(label) or Lineage(label, size)
        asked = tuple(float(v) for v in box)
        inside = clip_box(asked, size)
        in_root = lineage.box_to_root(inside)
        root_inside = clip_box(in_root, lineage.root_size)
        params: dict[str, Any] = {
            "bbox_2d": normalize_box(inside, size),
            "bbox_2d_root": normalize_box(root_inside, lineage.root_size),
            "root": lineage.root,
        }
        if lineage.approximate:
            params["approximate"] = True
        if _moved(asked, inside) or _moved(in_root, root_inside):
            params["clamped"] = True
        return params

    def _artifact_for(self, obs: Observed) -> Any:
        if obs.op != "io" or obs.params.get("action") != "save":
            return None
        path = obs.params.get("path")
        if path is not None:
            return self._artifacts_by_path.pop(_real(path), None)
        return None

    def _event(
        self,
        op: str,
        api: str,
        src: dict[str, int] | None,
        inputs: list[str],
        output: str | None,
        params: dict[str, Any],
        artifact: Any = None,
        error: Any = None,
        t_ms: float = 0.0,
    ) -> dict[str, Any]:
        return {
            "v": EVENT_VERSION,
            "seq": 0,
            "exec": self.exec_index,
            "op": op,
            "status": "error" if error is not None else "ok",
            "api": api,
            "src": src,
            "inputs": inputs,
            "output": output,
            "params": params,
            "artifact": artifact,
            "error": error,
            "t_ms": t_ms,
        }

    def _append(self, event: dict[str, Any]) -> None:
        if len(self.events) >= self.max_events:
            self.dropped += 1
            return
        event["seq"] = self.seq
        self.seq += 1
        self.events.append(event)
        self._seals.append(_seal(event))

    def _reseal(self, event: dict[str, Any], artifact: Any) -> None:
        """Attach ``artifact`` to a recorded event, keeping its seal true (edits by others stay visible)."""
        stale = _seal(event)
        event["artifact"] = artifact
        for position, seal in enumerate(self._seals):
            if seal == stale:
                self._seals[position] = _seal(event)
                return

    def _record_call(
        self,
        traced: _Traced,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result: Any,
        t0: float,
        before: tuple[int, int] | None,
    ) -> None:
        spec = traced.spec
        describe = lambda: spec.describe(Args(args, kwargs, result, before))  # noqa: E731
        self._observe(describe, spec.api, traced.line, traced.col, t0, cell=traced.cell)

    def _record_failure(
        self, traced: _Traced, args: tuple[Any, ...], kwargs: dict[str, Any], exc: BaseException, t0: float
    ) -> None:
        spec = traced.spec
        error = {"type": type(exc).__name__, "message": str(exc)[:300]}
        try:
            described = spec.describe(Args(args, kwargs, None))
        except Exception:
            described = None
        observed = described[0] if isinstance(described, list) else described
        if observed is None or observed.op == "alias":
            first = Args(args, kwargs, None).first_image()
            observed = Observed(spec.op, [first] if first is not None else [], None, {})
        observed.output = None
        try:
            self.record(observed, spec.api, traced.line, traced.col, t0, error, cell=traced.cell)
        except Exception:
            self.internal_errors += 1


class _Traced:
    """Stand-in for an image operation: calls it, then records what it did."""

    __slots__ = ("bound", "cell", "col", "fn", "line", "rec", "spec")

    def __init__(
        self, rec: Recorder, fn: Any, spec: Spec, bound: Any, line: int | None, col: int | None, cell: int | None
    ) -> None:
        self.rec, self.fn, self.spec, self.bound = rec, fn, spec, bound
        self.line, self.col, self.cell = line, col, cell

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        full = (self.bound, *args) if self.bound is not None else args
        before = size_of(full[0]) if full and self.rec.table.is_inplace(self.spec) and is_image(full[0]) else None
        t0 = time.perf_counter()
        try:
            result = self.fn(*args, **kwargs)
        except BaseException as exc:
            self.rec._record_failure(self, full, kwargs, exc, t0)
            raise
        self.rec._record_call(self, full, kwargs, result, t0, before)
        return result


class _Slicer:
    """Stand-in for an image array being subscripted: slices it, then records crops and flips."""

    __slots__ = ("cell", "col", "line", "obj", "rec")

    def __init__(self, rec: Recorder, obj: Any, line: int, col: int, cell: int | None) -> None:
        self.rec, self.obj, self.line, self.col, self.cell = rec, obj, line, col, cell

    def __getitem__(self, key: Any) -> Any:
        __tracebackhide__ = True
        result = self.obj[key]
        obj = self.obj
        describe = lambda: subscript(obj, key, result)  # noqa: E731
        self.rec._observe(describe, "numpy.ndarray.__getitem__", self.line, self.col, cell=self.cell)
        return result


def _methodcaller_parts(fn: methodcaller) -> tuple[str, tuple[Any, ...], dict[str, Any]] | None:
    """``(name, args, kwargs)`` of a ``methodcaller``, read from its ``__reduce__``.

    Without keywords it reduces to ``(methodcaller, (name, *args))``; with keywords to
    ``(partial(methodcaller, name, **kwargs), args)``.
    """
    try:
        reduced: Any = fn.__reduce__()
        maker, args = reduced[0], reduced[1]
        if maker is methodcaller:
            name, *rest = args
            return name, tuple(rest), {}
        if type(maker) is partial and maker.func is methodcaller and len(maker.args) == 1:
            return maker.args[0], tuple(args), dict(maker.keywords)
    except Exception:
        return None
    return None


def _seal(event: Any) -> str:
    """An event's fingerprint: its full ``repr`` (events hold plain data, so equal repr is equal content)."""
    try:
        return repr(event)
    except Exception:  # an object planted in an event can make repr fail: that is a changed event
        return "<unrepresentable>"


def _moved(before: tuple[float, ...], after: tuple[float, ...]) -> bool:
    """Whether clipping moved a box by more than float noise (a thousandth of a pixel)."""
    return any(abs(a - b) > 1e-3 for a, b in zip(before, after, strict=True))


def _usable(value: Any) -> bool:
    return isinstance(value, str) or (value is not None and is_image(value))


def _real(path: Any) -> str:
    try:
        return os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return str(path)
