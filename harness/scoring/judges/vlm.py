"""The VLM judge: one artifact, one question, the answer compared to the expected short answer."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ..answers import short_answer_matches
from ..view import Artifact
from .base import JudgeVerdict, VisualQuestion
from .cache import JudgeCache, NoCache
from .chat import ChatEndpoint

SYSTEM_PROMPT = (
    "You are shown a single image, usually a processed view (crop, zoom, enhancement) of a larger picture. "
    "Answer the question about what is visible in this image only. Reply with a short answer of a few words; "
    "for yes/no questions start with Yes or No. If the image does not show enough to tell, reply: cannot tell."
)


class VlmJudge:
    """Asks an OpenAI-compatible vision model the checkpoint's question about one artifact."""

    def __init__(self, endpoint: ChatEndpoint, cache: JudgeCache | None = None) -> None:
        self.endpoint = endpoint
        self.cache = cache or NoCache()

    @property
    def judge_id(self) -> str:
        return f"vlm:{self.endpoint.model}"

    def applies(self, question: VisualQuestion) -> bool:
        return bool(question.question and question.expected)

    def judge(self, question: VisualQuestion, artifact: Artifact, root_image: Path | None) -> JudgeVerdict:
        prompt = f"{SYSTEM_PROMPT}\n\n{question.question}"
        cached = self.cache.get(self.judge_id, prompt, artifact.sha256)
        answer = cached["answer"] if cached else self._ask(question.question, artifact.path)
        if cached is None:
            self.cache.put(self.judge_id, prompt, artifact.sha256, {"answer": answer})
        passed = short_answer_matches(answer, question.expected)
        detail = {"question": question.question, "expected": question.expected, "cached": cached is not None}
        return JudgeVerdict(self.judge_id, artifact.index, passed, answer, detail)

    def _ask(self, question: str, image: Path) -> str:
        url = f"data:{_mime(image)};base64,{base64.b64encode(image.read_bytes()).decode()}"
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": url}},
                    {"type": "text", "text": question},
                ],
            },
        ]
        return self.endpoint.complete(messages, max_tokens=100)


def _mime(path: Path) -> str:
    return {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}.get(path.suffix.lower(), "image/png")
