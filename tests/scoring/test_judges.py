"""V_true judges: VLM over a real local endpoint, tesseract OCR, geometric lineage, and the cache."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from pixelbox.harness.scoring.judges import (
    ChatEndpoint,
    GeometricJudge,
    JudgeCache,
    JudgeEndpointError,
    JudgeSpecError,
    OcrJudge,
    VisualQuestion,
    VlmJudge,
    build_judges,
)
from tests.harness.servers import ChatCompletionsServer as ChatServer
from tests.scoring.builders import EVIDENCE, EVIDENCE_PX, SIGN_PX, font, make_root, save_artifact

COLOUR = VisualQuestion("V1", "What color is the square?", "red")


def test_vlm_judge_sends_one_image_and_the_question(tmp_path: Path, server: ChatServer, endpoint: ChatEndpoint) -> None:
    root = make_root(tmp_path / "root.png")
    red = save_artifact(root, EVIDENCE_PX, tmp_path / "red.png", 1, 0, tuple(EVIDENCE), None)
    sign = save_artifact(root, SIGN_PX, tmp_path / "sign.png", 2, 0, None, None)
    judge = VlmJudge(endpoint)
    passed = judge.judge(COLOUR, red, root)
    failed = judge.judge(COLOUR, sign, root)
    assert passed.passed and passed.answer == "The square is red."
    assert not failed.passed and "white" in failed.answer
    request = server.bodies()[0]
    parts = request["messages"][-1]["content"]
    assert [p["type"] for p in parts] == ["image_url", "text"]
    assert parts[1]["text"] == COLOUR.question
    assert request["model"] == "judge-model" and request["temperature"] == 0.0


def test_judge_answers_are_cached_by_judge_prompt_and_image(
    tmp_path: Path, server: ChatServer, endpoint: ChatEndpoint
) -> None:
    root = make_root(tmp_path / "root.png")
    red = save_artifact(root, EVIDENCE_PX, tmp_path / "red.png", 1, 0, tuple(EVIDENCE), None)
    cache = JudgeCache(tmp_path / "cache")
    first = VlmJudge(endpoint, cache).judge(COLOUR, red, root)
    again = VlmJudge(endpoint, cache).judge(COLOUR, red, root)
    assert len(server.bodies()) == 1
    assert again.answer == first.answer and again.detail["cached"] is True
    VlmJudge(endpoint, cache).judge(replace(COLOUR, question="Which colour dominates?"), red, root)
    copy = replace(red, sha256="0" * 64)
    VlmJudge(endpoint, cache).judge(COLOUR, copy, root)
    assert len(server.bodies()) == 3


def test_unreachable_endpoint_is_a_clear_error(tmp_path: Path) -> None:
    root = make_root(tmp_path / "root.png")
    red = save_artifact(root, EVIDENCE_PX, tmp_path / "red.png", 1, 0, None, None)
    dead = ChatEndpoint("m", base_url="http://127.0.0.1:9/v1", api_key="k", timeout=2)
    with pytest.raises(JudgeEndpointError, match=r"127\.0\.0\.1:9"):
        VlmJudge(dead).judge(COLOUR, red, root)


def text_image(path: Path, text: str, size: tuple[int, int] = (420, 120), points: int = 48) -> Path:
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).text((20, 25), text, fill="black", font=font(points))
    image.save(path)
    return path


def test_ocr_judge_reads_rendered_text(tmp_path: Path) -> None:
    root = make_root(tmp_path / "root.png")
    sign = save_artifact(root, SIGN_PX, tmp_path / "sign.png", 1, 0, None, None)
    plate = save_artifact(
        text_image(tmp_path / "plate_src.png", "KX 4821"), (0, 0, 420, 120), tmp_path / "plate.png", 2, 0, None, None
    )
    judge = OcrJudge()
    assert judge.judge(VisualQuestion("c", "What word is on the sign?", "Pixel"), sign, root).passed
    verdict = judge.judge(VisualQuestion("c", "Plate number?", "kx-4821"), plate, None)
    assert verdict.passed and "4821" in verdict.answer
    assert not judge.judge(VisualQuestion("c", "Plate number?", "KX 4827"), plate, None).passed


def test_ocr_judge_applies_only_to_text_evidence() -> None:
    judge = OcrJudge()
    assert not judge.applies(VisualQuestion("c", "Is the sign readable?", "Yes"))
    assert not judge.applies(VisualQuestion("c", "Describe it", "a long description " * 5))
    assert judge.applies(VisualQuestion("c", "Is the sign readable?", "Yes", text="PIXEL"))


def test_geometric_judge_needs_coverage_and_resolution(tmp_path: Path) -> None:
    root = make_root(tmp_path / "root.png")
    question = VisualQuestion("V1", "", "", evidence_box=tuple(EVIDENCE), root="input:0", min_side_px=300)
    judge = GeometricJudge()
    native = save_artifact(root, EVIDENCE_PX, tmp_path / "a.png", 1, 0, tuple(EVIDENCE), None)
    zoomed = save_artifact(root, EVIDENCE_PX, tmp_path / "b.png", 2, 0, tuple(EVIDENCE), None, scale=2.0)
    whole = save_artifact(root, (0, 0, 1000, 800), tmp_path / "c.png", 3, 0, (0.0, 0.0, 1000.0, 1000.0), None)
    half = save_artifact(
        root, (600, 100, 750, 300), tmp_path / "d.png", 4, 0, (600.0, 125.0, 750.0, 375.0), None, scale=4.0
    )
    low = judge.judge(question, native, root)
    assert not low.passed and "200 px" in low.answer
    assert judge.judge(question, zoomed, root).passed
    assert not judge.judge(question, whole, root).passed
    cut = judge.judge(question, half, root)
    assert not cut.passed and "50%" in cut.answer
    unknown = judge.judge(question, replace(zoomed, box_root=None), root)
    assert not unknown.passed and "lineage" in unknown.answer


def test_judge_specs() -> None:
    judges = build_judges(["ocr", "geometric", "openai:some-vlm@http://127.0.0.1:1/v1"])
    assert [j.judge_id for j in judges] == ["ocr:tesseract", "geometric", "vlm:some-vlm"]
    with pytest.raises(JudgeSpecError, match="ocr, geometric"):
        build_judges(["gpt4"])
