"""The models behind Agent-X's model-backed tools, each answer recorded per task and replayable.

- :class:`VisionModel` (``PIXELBOX_AGENTX_VISION=openai:MODEL[@BASE_URL]``): SceneDescriber, ObjectCounter,
  RegionDescriber, LocateObjectByText and MathOCR ask a chat-completions vision model about an image.
- :class:`ImageModel` (``PIXELBOX_AGENTX_IMAGES=openai:MODEL[@BASE_URL]``): ImageGenerator asks an
  OpenAI-compatible images endpoint for ``/images/generations``, ImageStylization for ``/images/edits``
  (the image as a multipart file). Without an endpoint both answer that they are not available, and why.

Both keep every answer in ``RUN/vision-cache/TASK/`` (or ``PIXELBOX_AGENTX_VISION_DIR``), keyed by tool,
prompt, the input image's SHA-256 and the model; ``PIXELBOX_AGENTX_VISION_CACHE=replay`` answers only from
the recording (``auto``, the default, records). The key is ``OPENAI_API_KEY``.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelbox.harness.agents.messages import image_part, text_part
from pixelbox.harness.suites import EpisodeContext

VISION_ENV = "PIXELBOX_AGENTX_VISION"
IMAGES_ENV = "PIXELBOX_AGENTX_IMAGES"
CACHE_ENV = "PIXELBOX_AGENTX_VISION_CACHE"
CACHE_DIR_ENV = "PIXELBOX_AGENTX_VISION_DIR"


@dataclass
class Answer:
    """A model-backed tool's answer: text (or an error), the image bytes it made, and what is traced."""

    text: str
    ok: bool
    detail: dict[str, Any]
    image: bytes | None = None


class _Recorded:
    """An endpoint named by an environment variable, its answers recorded in the task's cache."""

    env = ""
    cache_tool = ""

    def __init__(self, context: EpisodeContext, task_id: str) -> None:
        from pixelbox.harness.web import WebCache

        self.spec = os.environ.get(self.env) or None
        mode: Any = os.environ.get(CACHE_ENV, "auto")
        root = Path(context.run_root or context.images_dir) / "vision-cache"
        self.cache = WebCache.for_task(os.environ.get(CACHE_DIR_ENV) or root, task_id, mode)

    def describe(self) -> dict[str, Any]:
        """The endpoint and recording, for ``episode_start``."""
        return {"endpoint": self.spec, "cache": str(self.cache.directory), "mode": self.cache.mode}

    def _key(self, tool: str, prompt: str, image: Path | None) -> dict[str, Any]:
        digest = hashlib.sha256(image.read_bytes()).hexdigest() if image is not None else None
        return {"tool": tool, "prompt": prompt, "image_sha256": digest, "model": self.spec}

    def _recorded(self, key: dict[str, Any]) -> Answer | None:
        """The recorded answer, or the error a replay without one gives; None means: ask the endpoint."""
        hit = self.cache.get(self.cache_tool, key)
        if hit is not None:
            return self._from_record(hit.data or {}, hit.ok, hit.error, {**key, "source": "cache"})
        if self.cache.mode == "replay":
            return Answer(f"no recorded {key['tool']} answer for this input in {self.cache.directory}", False, key)
        return None

    def _from_record(self, data: dict[str, Any], ok: bool, error: str | None, detail: dict[str, Any]) -> Answer:
        return Answer(str(data.get("text") or error or ""), ok, detail)


class VisionModel(_Recorded):
    """The perception tools' vision model (``PIXELBOX_AGENTX_VISION``)."""

    env = VISION_ENV
    cache_tool = "agentx_vision"

    def ask(self, tool: str, prompt: str, image: Path) -> Answer:
        """The model's answer about ``image``."""
        key = self._key(tool, prompt, image)
        recorded = self._recorded(key)
        if recorded is not None:
            return recorded
        if not self.spec:
            return Answer(f"{tool} needs a vision model: set {VISION_ENV}=openai:MODEL[@BASE_URL]", False, key)
        from pixelbox.harness.scoring.judges import parse_endpoint

        messages = [{"role": "user", "content": [image_part(image), text_part(prompt)]}]
        try:
            text = parse_endpoint(self.spec).complete(messages, max_tokens=512, temperature=0.0)
        except Exception as exc:
            return Answer(f"the vision model failed: {exc}", False, key)
        self.cache.put(self.cache_tool, key, ok=True, data={"text": text}, error=None)
        return Answer(text.strip(), True, {**key, "source": "endpoint"})


class ImageModel(_Recorded):
    """ImageGenerator's and ImageStylization's images endpoint (``PIXELBOX_AGENTX_IMAGES``)."""

    env = IMAGES_ENV
    cache_tool = "agentx_images"

    @property
    def model(self) -> str | None:
        """The model name of the configured endpoint."""
        return self.spec.partition(":")[2].partition("@")[0] if self.spec else None

    def make(self, tool: str, prompt: str, source: Path | None) -> Answer:
        """An image from ``prompt`` (``source`` None: generation) or ``source`` restyled by it (an edit)."""
        key = self._key(tool, prompt, source)
        recorded = self._recorded(key)
        if recorded is not None:
            return recorded
        if not self.spec:
            reason = f"no image-generation endpoint is configured (set {IMAGES_ENV}=openai:MODEL[@BASE_URL])"
            return Answer(f"{tool} is not available: {reason}", False, key)
        try:
            image = self._request(prompt, source)
        except Exception as exc:
            return Answer(f"the image endpoint failed: {exc}", False, key)
        data = {"text": "", "b64_json": base64.b64encode(image).decode()}
        self.cache.put(self.cache_tool, key, ok=True, data=data, error=None)
        return Answer("", True, {**key, "source": "endpoint"}, image)

    def _from_record(self, data: dict[str, Any], ok: bool, error: str | None, detail: dict[str, Any]) -> Answer:
        image = base64.b64decode(data["b64_json"]) if ok and data.get("b64_json") else None
        return Answer(str(error or ""), ok and image is not None, detail, image)

    def _request(self, prompt: str, source: Path | None) -> bytes:
        """One ``/images/generations`` or ``/images/edits`` call; the first image's bytes (``b64_json``)."""
        from openai import OpenAI

        assert self.spec is not None
        model, _, base_url = self.spec.partition(":")[2].partition("@")
        key = os.environ.get("OPENAI_API_KEY") or "unused"
        client = OpenAI(base_url=base_url or None, api_key=key, timeout=180.0, max_retries=1)
        settings: dict[str, Any] = {"model": model, "prompt": prompt, "n": 1}
        if not model.startswith("gpt-image"):  # gpt-image models always answer b64_json and refuse the setting
            settings["response_format"] = "b64_json"
        if source is None:
            response = client.images.generate(**settings)
        else:
            kind = mimetypes.guess_type(source.name)[0] or "image/png"
            response = client.images.edit(image=(source.name, source.read_bytes(), kind), **settings)
        first = (response.data or [None])[0]
        if first is None or not first.b64_json:
            raise ValueError("the endpoint sent no image as b64_json")
        return base64.b64decode(first.b64_json)
