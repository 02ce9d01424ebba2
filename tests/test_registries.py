"""The registries agree with each other, with their implementations, with the command line and with the docs.

One op table (``pixelbox.contract.ops``) names the canonical operations; the recorder's API tables,
the canonical tools and replay handlers, the event schema, the function-calling schemas and the
scoring vocabulary must all agree with it. Backends, profiles, suites, judges and commands each
have one registry; every ``--choice`` list and every registry block of the docs is read from it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from pixelbox.cli import build_parser, commands
from pixelbox.cli.registries import TABLES, documents, render, stale_documents, sync
from pixelbox.contract.config import ProfileSpec
from pixelbox.contract.events import ALL_OPS, OTHER_KINDS, VISUAL_OPS
from pixelbox.contract.ops import CHECKPOINT_WORDS, HOST_OPS, OPS, OPS_BY_NAME, REPLAYABLE, TOOL_SPECS
from pixelbox.contract.tools import function_schema
from pixelbox.harness.modes import MODE_CHOICES, MODES
from pixelbox.harness.scoring.columns import columns_of, metrics_of, primary_of
from pixelbox.harness.scoring.judges import JUDGES, build_judges
from pixelbox.harness.scoring.requirements import ops_for
from pixelbox.harness.suites import DEFAULT_SUITE, SUITES, Suite
from pixelbox.harness.tools.atomic import ATOMIC_TOOLS, atomic_schemas
from pixelbox.kernel.atomic import canonical
from pixelbox.kernel.imageio.settings import parse_section
from pixelbox.kernel.recorder.ops import api_table
from pixelbox.registry import Registry, UnknownEntry
from pixelbox.runtime.backends import AUTO, BACKENDS, backend_choices, runtime_choices
from pixelbox.runtime.backends.base import Backend
from pixelbox.runtime.profiles import DEFAULT_PROFILE, PROFILES, profile_spec
from pixelbox.tracer.events import Event, EventFormatError

ROOT = Path(__file__).resolve().parents[1]
RECORDER_ONLY = {"alias"}
"""The recorder's marker for copies (they share their source's id and record no event)."""

# The checkpoint vocabulary as scoring read it before the op table existed: the derived table must not drift.
PINNED_WORDS = {
    "enhance": {"enhance", "autocontrast", "equalize", "sharpen", "threshold", "grayscale", "invert"},
    "contrast": {"enhance", "autocontrast", "equalize"},
    "brightness": {"enhance", "autocontrast", "equalize"},
    "zoom": {"crop"},
    "zoom_in": {"crop"},
    "magnify": {"crop", "resize"},
    "rotation": {"rotate"},
    "mirror": {"flip"},
    "scale": {"resize"},
    "upscale": {"resize"},
    "gray": {"grayscale"},
    "greyscale": {"grayscale"},
    "binarize": {"threshold"},
    "binarization": {"threshold"},
    "histogram_equalization": {"equalize"},
    "clahe": {"equalize"},
    "edge": {"edge_detect"},
    "edges": {"edge_detect"},
    "canny": {"edge_detect"},
    "sobel": {"edge_detect"},
    "smooth": {"blur", "denoise"},
    "gaussian_blur": {"blur"},
    "median": {"denoise"},
    "fourier": {"fft"},
    "frequency": {"fft"},
    "dft": {"fft"},
}


# -- the op table -------------------------------------------------------------------------------


def test_op_names_are_unique_and_the_vocabulary_is_derived_from_them() -> None:
    names = [op.name for op in OPS]
    assert len(names) == len(set(names)) == len(OPS_BY_NAME)
    assert ALL_OPS == VISUAL_OPS + OTHER_KINDS and set(ALL_OPS) == set(names)
    assert VISUAL_OPS[:5] == ("crop", "rotate", "flip", "resize", "enhance")


def test_every_api_the_recorder_knows_maps_to_an_op_of_the_table_and_every_op_is_recorded() -> None:
    recorded = set(api_table().values())
    assert recorded - RECORDER_ONLY <= set(ALL_OPS), recorded - set(ALL_OPS)
    from pixelbox.kernel.atomic import INTERNAL_OPS

    known = recorded | set(INTERNAL_OPS.values()) | HOST_OPS
    assert set(ALL_OPS) <= known, f"ops nothing records: {set(ALL_OPS) - known}"
    assert not set(INTERNAL_OPS.values()) & recorded, "an op of the kernel's internal tools is also a library API's"
    assert not HOST_OPS & (recorded | set(INTERNAL_OPS.values())), "an op the host records is also the kernel's"


def test_the_canonical_tools_are_exactly_the_tools_of_the_table() -> None:
    assert set(canonical.TOOLS) == set(TOOL_SPECS)
    assert all(OPS_BY_NAME[name].tool is spec for name, spec in TOOL_SPECS.items())


def test_replay_handlers_are_exactly_the_replayable_ops() -> None:
    assert set(canonical.REPLAY) == REPLAYABLE
    assert {op.name for op in OPS if op.tool is not None} <= REPLAYABLE, "an atomic tool replay cannot re-run"


def test_the_function_schemas_offer_the_tools_of_the_table_in_order() -> None:
    assert tuple(TOOL_SPECS) == ATOMIC_TOOLS
    assert [s["function"]["name"] for s in atomic_schemas()] == list(TOOL_SPECS)
    assert [function_schema(spec) for spec in TOOL_SPECS.values()] == atomic_schemas()


def test_the_checkpoint_words_are_derived_as_scoring_read_them() -> None:
    assert {word: set(ops) for word, ops in CHECKPOINT_WORDS.items()} == PINNED_WORDS
    assert all(set(ops) <= set(VISUAL_OPS) for ops in CHECKPOINT_WORDS.values())
    assert ops_for("Zoom-In") == frozenset({"crop"}) and ops_for("crop") == frozenset({"crop"})
    assert ops_for("draw") is None, "only visual ops satisfy checkpoints"


@pytest.mark.parametrize("op", ALL_OPS)
def test_events_of_every_op_validate_and_others_do_not(op: str) -> None:
    raw = {
        "v": 1,
        "seq": 0,
        "exec": 1,
        "op": op,
        "status": "ok",
        "api": "x",
        "src": None,
        "inputs": [],
        "output": None,
        "params": {},
        "artifact": None,
        "error": None,
        "t_ms": 0.0,
    }
    assert Event.from_dict(raw).op == op
    with pytest.raises(EventFormatError, match="unknown op"):
        Event.from_dict({**raw, "op": op + "_x"})


# -- the other registries -----------------------------------------------------------------------


@pytest.mark.parametrize("name", BACKENDS.names())
def test_every_backend_entry_loads_a_backend_of_its_name(name: str) -> None:
    cls = BACKENDS.get(name).load()
    assert issubclass(cls, Backend) and cls.name == name


def test_backend_and_runtime_choices_come_from_the_registry() -> None:
    assert backend_choices() == (AUTO, *BACKENDS.names())
    assert set(runtime_choices()) == {r for e in BACKENDS.entries() for r in e.runtimes} == {"runc", "runsc"}
    assert [e.name for e in BACKENDS.entries() if e.fallback] == ["local"]


@pytest.mark.parametrize("name", PROFILES.names())
def test_every_profile_travels_to_the_kernel_and_back(name: str, tmp_path: Path) -> None:
    spec = PROFILES.get(name).spec
    assert ProfileSpec.from_dict(spec.to_dict()) == spec == profile_spec(name) == profile_spec(spec.to_dict())
    settings = parse_section({"enabled": True, "workspace": str(tmp_path), "profile": spec.to_dict()})
    assert settings.profile == spec
    facts = PROFILES.get(name).facts.values()
    assert set(facts) == {"input_env", "output_env", "output_name"} and all(facts.values())


def test_the_default_profile_is_the_kernels_own_default(tmp_path: Path) -> None:
    assert PROFILES.get(DEFAULT_PROFILE).spec == ProfileSpec()
    assert parse_section({"enabled": True, "workspace": str(tmp_path)}).profile == ProfileSpec()


def test_suites_are_discovered_and_name_registered_profiles_and_modes() -> None:
    assert DEFAULT_SUITE in SUITES
    for suite in SUITES.entries():
        assert isinstance(suite, Suite)
        assert suite.profile in PROFILES, suite.name
        assert suite.modes and set(suite.modes) <= set(MODES), suite.name
        for judge in suite.default_judges:
            assert judge.partition(":")[0] in JUDGES, (suite.name, judge)


def test_every_suite_declares_its_metric_columns_and_a_primary_among_them() -> None:
    """Reports and ``pixelbox compare`` show a suite's metrics from its declaration alone."""
    for suite in SUITES.entries():
        keys = [column.key for column in suite.metric_columns()]
        assert keys and len(set(keys)) == len(keys), suite.name
        assert suite.primary_metric in keys, suite.name
        assert all(column.kind in ("rate", "number") for column in suite.metric_columns()), suite.name


def test_a_score_without_columns_of_its_own_shows_its_suites() -> None:
    """A record that names its suite gets the suite's columns and primary; its own declaration wins."""
    suite = SUITES.get(DEFAULT_SUITE)
    bare = {"suite": DEFAULT_SUITE, suite.primary_metric: True}
    assert columns_of(bare) == suite.metric_columns() and primary_of(bare) == suite.primary_metric
    assert metrics_of(bare)[suite.primary_metric] == 1.0
    own = {"suite": "elsewhere", "columns": [{"key": "f1", "label": "F1"}], "primary": "f1", "metrics": {"f1": 0.5}}
    assert [c.key for c in columns_of(own)] == ["f1"] and primary_of(own) == "f1" and metrics_of(own) == {"f1": 0.5}
    assert columns_of({"suite": "not-installed-here"}) == suite.metric_columns()  # scores from before suites said


def test_every_judge_kind_builds_from_its_form() -> None:
    specs = [kind.form.replace("MODEL[@BASE_URL]", "some-model@http://127.0.0.1:1/v1") for kind in JUDGES.entries()]
    judges = build_judges(specs)
    assert len(judges) == len(JUDGES)


def _choices(parser: argparse.ArgumentParser, command: str, option: str) -> tuple[Any, ...]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    action = next(a for a in sub._actions if option in a.option_strings or a.dest == option)
    return tuple(action.choices or ())


def test_every_command_line_choice_list_is_a_registry() -> None:
    parser = build_parser()
    for command in ("run", "info", "trace"):
        assert _choices(parser, command, "--backend") == backend_choices()
        assert _choices(parser, command, "--runtime") == runtime_choices()
    assert _choices(parser, "demo", "--backend") == backend_choices()
    for command in ("run", "trace"):
        assert _choices(parser, command, "--profile") == PROFILES.names()
    for command in ("run", "demo", "score", "report", "export"):
        assert _choices(parser, command, "--suite") == SUITES.names()
    assert _choices(parser, "run", "--mode") == MODE_CHOICES
    assert _choices(parser, "list", "kind") == tuple(TABLES)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert tuple(sub.choices) == commands().names()


# -- the docs -------------------------------------------------------------------------------------


def test_every_registry_block_of_the_docs_is_up_to_date() -> None:
    stale = stale_documents(ROOT)
    assert not stale, f"registry blocks out of date in {[str(p) for p in stale]}; run `make docs`"


def test_the_docs_carry_every_table_and_the_synopsis_of_run() -> None:
    text = "\n".join(path.read_text(encoding="utf-8") for path in documents(ROOT))
    for kind in [*TABLES, "usage:run"]:
        assert f"<!-- registry: {kind} -->" in text, kind


def test_a_stale_block_is_rewritten_from_the_registry() -> None:
    stale = "intro\n<!-- registry: suites -->\n| old |\n<!-- /registry -->\nend\n"
    fresh = sync(stale)
    assert "| old |" not in fresh and f"`{DEFAULT_SUITE}`" in fresh and fresh.endswith("<!-- /registry -->\nend\n")
    assert sync(fresh) == fresh
    with pytest.raises(ValueError, match="unknown registry block"):
        render("colours")


def test_a_suite_is_found_by_its_module_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery, as ``SUITES`` uses it: a new module defining ``SUITE`` is registered, nothing else is
    edited; modules without it and private modules are skipped."""
    package = tmp_path / "more_suites"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "visual_bench.py").write_text("class S:\n    name = 'visual-bench'\nSUITE = S()\n")
    (package / "helpers.py").write_text("VALUE = 1\n")
    (package / "_private.py").write_text("raise RuntimeError('private modules are not imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found: Registry[Any] = Registry("suite", discover=("more_suites", "SUITE"), name_of=lambda s: s.name)
    assert found.names() == ("visual-bench",)
    with pytest.raises(UnknownEntry, match="unknown suite 'nope'; choose one of: visual-bench"):
        found.get("nope")
