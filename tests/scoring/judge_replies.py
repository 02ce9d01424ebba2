"""Judge replies for the harness's local OpenAI-compatible server (tests/harness/servers.py).

The scripted responder answers by looking at what it is sent, so tests exercise the whole request path:
- with an image: the name of the image's dominant colour ("red", "green", "blue", "white", "black", "gray");
- text only (the search judge): a JSON verdict, pass when the "Expected information" line's value
  appears in the returned text of the calls, fail otherwise.
"""

from __future__ import annotations

import base64
import io
import json
import re
from typing import Any

from PIL import Image, ImageStat

from tests.harness.servers import ChatCompletionsServer, Request, Response, completion

API_KEY = "sk-test"
MAX_CALLS = 200


def colour_name(png: bytes) -> str:
    with Image.open(io.BytesIO(png)) as img:
        r, g, b = ImageStat.Stat(img.convert("RGB")).mean
    if max(r, g, b) - min(r, g, b) < 40:
        return "white" if r > 200 else "black" if r < 60 else "gray"
    return ("red", "green", "blue")[max(range(3), key=lambda i: (r, g, b)[i])]


def answer_for(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    if isinstance(user, list):
        image = next(part for part in user if part["type"] == "image_url")["image_url"]["url"]
        return f"The square is {colour_name(base64.b64decode(image.split(',', 1)[1]))}."
    expected = re.search(r"Expected information: (.+)", user)
    returned = "\n".join(re.findall(r"returned:\n(.*?)(?=\n\d+\. |\nRules:)", user, re.DOTALL))
    found = expected is not None and expected.group(1).strip().lower() in returned.lower()
    return json.dumps({"verdict": "pass" if found else "fail", "reason": "checked the returned text"})


def judge_reply(request: Request) -> Response:
    return completion(answer_for(request.json()))(request)


def judge_server() -> ChatCompletionsServer:
    """A server answering up to ``MAX_CALLS`` judge requests (enter it with ``with``)."""
    return ChatCompletionsServer([judge_reply] * MAX_CALLS, api_key=API_KEY)
