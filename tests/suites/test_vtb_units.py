"""VisualToolBench pieces that need no sandbox: the loader on every released format, the calculator's
official semantics, page-text extraction, judge-reply parsing and the ARS/APR arithmetic on hand-checked cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from pixelbox.harness.suites.visualtoolbench.calculator import calculate
from pixelbox.harness.suites.visualtoolbench.rubrics import MET, NOT_MET, Verdict, parse_judgement, task_scores
from pixelbox.harness.suites.visualtoolbench.scoring import official_summary
from pixelbox.harness.suites.visualtoolbench.tasks import TaskSourceError, load_tasks_report
from pixelbox.harness.suites.visualtoolbench.web import page_text

RUBRICS = json.dumps(
    {"r1": {"description": "Says 42", "weight": 5, "critical": "no"}, "r2": {"description": "Brief", "weight": 1}}
)


def _downloader_layout(root: Path) -> Path:
    """``data/single_turn/dataset.json`` and ``data/multi_turn/...`` as the official downloader writes them."""
    for kind, sample in (("single_turn", 0), ("multi_turn", 0)):
        folder = root / "data" / kind / "images" / f"sample_{sample}"
        folder.mkdir(parents=True)
        for name in ("image_0.png", "turn_0_image_0.png", "turn_1_image_0.png"):
            Image.new("RGB", (8, 8), "red").save(folder / name)
    single = {
        "id": "s1",
        "turncase": "single-turn",
        "num_turns": 1,
        "prompt_category": "maths",
        "eval_focus": "region_switch",
        "turn_prompts": ["What number?"],
        "turn_golden_answers": ["42"],
        "turn_tool_trajectories": ["[]"],
        "rubrics_by_turn": [RUBRICS],
        "image_paths": ["data/single_turn/images/sample_0/image_0.png"],
        "images_by_turn_paths": [["data/single_turn/images/sample_0/turn_0_image_0.png"]],
    }
    bad = {**single, "id": "s2", "rubrics_by_turn": ["{not json"]}
    multi = {
        "id": "m1",
        "turncase": "multi-turn",
        "num_turns": 2,
        "prompt_category": "generalist",
        "eval_focus": "follow_up",
        "turn_prompts": ["First?", "Second?"],
        "turn_golden_answers": ["a", "b"],
        "rubrics_by_turn": [RUBRICS, RUBRICS],
        "image_paths": ["data/multi_turn/images/sample_0/image_0.png"],
        "images_by_turn_paths": [
            ["data/multi_turn/images/sample_0/turn_0_image_0.png"],
            ["data/multi_turn/images/sample_0/turn_1_image_0.png"],
        ],
    }
    (root / "data" / "single_turn" / "dataset.json").write_text(json.dumps([single, bad]))
    (root / "data" / "multi_turn" / "dataset.json").write_text(json.dumps([multi]))
    return root


def test_downloader_layout_loads_and_a_bad_record_is_reported_not_fatal(tmp_path: Path) -> None:
    report = load_tasks_report(_downloader_layout(tmp_path))
    assert [t.task_id for t in report.tasks] == ["s1", "m1"]
    single, multi = report.tasks
    assert single.domain == "STEM" and single.turns[0].image.name == "image_0.png"  # the first of `images`
    assert [t.image.name for t in multi.turns] == ["turn_0_image_0.png", "turn_1_image_0.png"]
    assert [r.weight for r in multi.turns[1].rubrics] == [5.0, 1.0]
    (error,) = report.errors
    assert error.task_id == "s2" and error.field == "rubrics_by_turn[0]" and "not valid JSON" in str(error)


def test_parquet_release_with_image_bytes(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import io

    import pyarrow.parquet as pq

    def png(color: str) -> dict[str, object]:
        buffer = io.BytesIO()
        Image.new("RGB", (6, 4), color).save(buffer, format="PNG")
        return {"bytes": buffer.getvalue(), "path": None}

    rows = [
        {
            "id": "p1",
            "turncase": "multi-turn",
            "num_turns": 2,
            "prompt_category": "physics",
            "eval_focus": "temporal",
            "turn_prompts": ["one", "two"],
            "turn_golden_answers": ["x", "y"],
            "turn_tool_trajectories": ["[]", "[]"],
            "rubrics_by_turn": [RUBRICS, RUBRICS],
            "images": [png("red")],
            "images_by_turn": [[png("green")], [png("blue")]],
            "num_images": 3,
        }
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "vistoolbench_1204.parquet")
    (task,) = load_tasks_report(tmp_path).tasks
    colors = [Image.open(t.image).getpixel((0, 0)) for t in task.turns]
    assert colors == [(0, 128, 0), (0, 0, 255)] and len(task.images) == 2


def test_no_readable_record_is_an_error_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "x", "turn_prompts": [], "rubrics_by_turn": [RUBRICS]}) + "\n")
    with pytest.raises(TaskSourceError, match="turn_prompts"):
        load_tasks_report(path)


@pytest.mark.parametrize(
    ("expression", "result"),
    [("2 * 3.14 * 5", "31.400000000000002"), ("-2 ** 2", "-4"), ("sqrt(16) + 10 % 4", "6.0"), ("(1 + 2) / 4", "0.75")],
)
def test_calculator_matches_the_official_semantics(expression: str, result: str) -> None:
    assert calculate(expression) == {"result": result, "expression": expression, "status": "success"}


@pytest.mark.parametrize("expression", ["2 ^ 3", "7 // 2", "+3", "pow(2, 3)", "__import__('os')", "9 ** 99999"])
def test_calculator_refuses_what_the_official_one_refuses(expression: str) -> None:
    out = calculate(expression)
    assert out["status"] == "error" and out["result"] == "Error" and out["error"]


def test_page_text_drops_chrome_and_collapses_whitespace() -> None:
    html = (
        "<html><head><title>Tower</title><style>p{}</style></head><body><nav>Home | About</nav>"
        "<h1>Eiffel</h1>\n<p>It is   324  metres\n   tall.</p><script>var x=1;</script>"
        "<footer>(c)</footer></body></html>"
    )
    title, text = page_text(html)
    assert title == "Tower"
    # adjacent elements join without a space, as BeautifulSoup's get_text() joins them in the official tool
    assert text == "TowerEiffel It is 324 metres tall."


@pytest.mark.parametrize(
    ("reply", "result"),
    [
        ('{"explanation": "ok", "judge_result": "Met"}', MET),
        ('Sure.\n```json\n{"explanation": "no", "judge_result": "Not Met"}\n```', NOT_MET),
        ('"judge_result": "not met"', NOT_MET),
        ("I cannot decide", None),
    ],
)
def test_judge_replies_are_read(reply: str, result: str | None) -> None:
    assert parse_judgement(reply)[0] == result


def _v(weight: float, result: str | None, turn: int = 0) -> Verdict:
    return Verdict(f"r{weight}{result}", turn, weight, result)


def test_ars_and_apr_on_hand_checked_cases() -> None:
    # weights 5 Met, 3 Not Met, 1 Met: ARS 6/9; no unmet rubric of weight >= 4: pass
    assert task_scores([_v(5, MET), _v(3, NOT_MET), _v(1, MET)]) == (pytest.approx(6 / 9), 1.0)
    # an unmet weight-4 rubric fails the task whatever the rest
    assert task_scores([_v(4, NOT_MET), _v(5, MET), _v(5, MET)]) == (pytest.approx(10 / 14), 0.0)
    # multi-turn pools the turns' rubrics
    assert task_scores([_v(5, MET, 0), _v(5, NOT_MET, 1)]) == (0.5, 0.0)
    # a rubric the judge could not decide leaves the task unscored (scored again later), never a guess
    assert task_scores([_v(5, MET), _v(2, None)]) == (None, None)


def test_official_summary_groups_like_the_official_script() -> None:
    def score(category: str, focus: str, apr: float, ars: float) -> dict[str, object]:
        return {
            "category": category,
            "eval_focus": focus,
            "turncase": "single-turn",
            "metrics": {"apr": apr, "ars": ars},
        }

    out = official_summary([score("STEM", "a", 1.0, 1.0), score("STEM", "b", 0.0, 0.5), score("x", "a", 1.0, 0.75)])
    assert out["overall_accuracy"] == round(2 / 3, 4) and out["overall_score"] == 0.75
    assert out["domain_results"]["STEM"] == {"accuracy": 0.5, "score": 0.75, "n": 2}
    assert out["eval_focus_results"]["a"]["n"] == 2


def test_lost_state_counts_calls_that_relied_on_an_earlier_calls_names() -> None:
    from pixelbox.harness.suites.visualtoolbench.scoring import lost_state

    def call(n: int, code: str, error: tuple[str, str] | None = None) -> list[dict[str, object]]:
        failure = {"ename": error[0], "evalue": error[1], "traceback": ""} if error else None
        return [
            {"kind": "action", "action_id": f"a{n}", "name": "python_image_processing", "arguments": {"code": code}},
            {
                "kind": "observation",
                "action_id": f"a{n}",
                "execution": {"status": "error" if error else "ok", "error": failure},
            },
        ]

    records = [
        *call(1, "from PIL import Image\nimg = Image.open('x.png')\ndef zoom(i):\n    return i"),
        *call(2, "img.crop((0, 0, 5, 5))", ("NameError", "name 'img' is not defined")),  # img from call 1
        *call(3, "zoom(1)", ("NameError", "name 'zoom' is not defined")),  # zoom from call 1
        *call(4, "typo_never_defined", ("NameError", "name 'typo_never_defined' is not defined")),  # a typo
        *call(5, "Image.open('x.png')"),
    ]
    assert lost_state(records) == 2


@pytest.mark.parametrize(("model", "temperature"), [("gpt-4o", 0.0), ("o4-mini", 1.0), ("openai/gpt-5-mini", 1.0)])
def test_sampling_follows_the_official_runner(model: str, temperature: float) -> None:
    from pixelbox.harness.suites import SUITES

    assert SUITES.get("visualtoolbench").default_temperature(model) == temperature
