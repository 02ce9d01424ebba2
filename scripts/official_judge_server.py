"""A deterministic OpenAI-compatible judge on loopback, for running the official evaluator offline.

    python scripts/official_judge_server.py --port 8765      # then OPENAI_BASE_URL=http://127.0.0.1:8765/v1

It answers ``POST /v1/chat/completions`` (and ``GET /v1/models``) for the two kinds of judge call
Agentic-MME scoring makes, whoever makes them (the official ``evaluation/eval_runs_search.py`` or
``pixelbox score --semantics official``), so both get the same answers for the same inputs:

- a request with an image: the judge reads the image's text with tesseract (upscaled when small)
  and answers it, or ``Yes`` when it reads nothing; the answer depends on the image bytes only;
- a request without an image (a search judge): the expected answer is the text after
  "expected to find:" / "expected answer:" / "expected:" in the checkpoint description (up to a
  closing parenthesis or line end); the verdict is ``VERDICT: PASS`` when that text occurs in the
  search results section (case-insensitive), or, with no expected answer, when the results are not
  empty; else ``VERDICT: FAIL``. The results section is found between the official prompt's
  results heading and its criteria heading, or after ``Search results:`` in pixelbox's prompt.

Every request is appended to ``--log`` (JSON lines) when given. Stdlib, Pillow and tesseract only.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import re
import shutil
import subprocess
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

EXPECTED = re.compile(r"expected(?: to find| answer)?:\s*([^\n)]+)", re.IGNORECASE)
OFFICIAL_RESULTS = re.compile(r"\*\*Search Results Summary:\*\*(.*?)\*\*Evaluation Criteria", re.DOTALL)
OURS_RESULTS = re.compile(r"Search results:\n(.*?)(?:\nAnswer with|\Z)", re.DOTALL)


def read_text(image: bytes) -> str:
    """The image's text as tesseract reads it (one line, spaces squeezed)."""
    from PIL import Image

    if shutil.which("tesseract") is None:
        return ""
    with Image.open(io.BytesIO(image)) as opened:
        picture = opened.convert("RGB")
    if min(picture.size) < 600:
        scale = 600 / max(1, min(picture.size))
        picture = picture.resize((int(picture.width * scale), int(picture.height * scale)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.png"
        picture.save(path)
        done = subprocess.run(["tesseract", str(path), "-", "--psm", "6"], capture_output=True, text=True, timeout=60)
    return " ".join(done.stdout.split())


def visual_answer(image: bytes) -> str:
    """What the judge says about an image: its text, or Yes."""
    return read_text(image) or "Yes"


def search_verdict(prompt: str) -> str:
    """PASS when the expected answer occurs in the results section."""
    found = OFFICIAL_RESULTS.search(prompt) or OURS_RESULTS.search(prompt)
    results = found.group(1) if found else ""
    description = prompt[: found.start()] if found else prompt
    expected = EXPECTED.search(description)
    if expected:
        wanted = expected.group(1).strip().rstrip(".,;:").lower()
        passed = bool(wanted) and wanted in results.lower()
    else:
        passed = bool(results.strip().strip("."))
    return ("VERDICT: PASS" if passed else "VERDICT: FAIL") + "\nREASONING: loopback judge"


def answer(body: dict[str, Any]) -> str:
    """The judge's reply to one chat request."""
    images, texts = [], []
    for message in body.get("messages") or []:
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        for part in parts:
            if part.get("type") == "image_url":
                url = str((part.get("image_url") or {}).get("url") or "")
                images.append(base64.b64decode(url.split(",", 1)[1]) if "," in url else b"")
            elif part.get("type") == "text":
                texts.append(str(part.get("text") or ""))
    if images:
        return visual_answer(images[-1])
    return search_verdict("\n".join(texts))


class Handler(BaseHTTPRequestHandler):
    log_path: Path | None = None

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "loopback-judge", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        text = answer(body)
        if self.log_path is not None:
            digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
            with self.log_path.open("a", encoding="utf-8") as log:
                log.write(json.dumps({"request": digest, "answer": text}) + "\n")
        message = {"role": "assistant", "content": text}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        reply = {"id": "judge", "object": "chat.completion", "created": int(time.time()), "model": body.get("model")}
        self._send(200, {**reply, "choices": [choice], "usage": usage})

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--log", type=Path, default=None)
    args = parser.parse_args()
    Handler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"judge on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
