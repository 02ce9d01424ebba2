"""Real HTTP servers on 127.0.0.1 (stdlib ``http.server`` in threads) speaking the providers' wire formats.

- :class:`ChatCompletionsServer`: OpenAI ``POST /v1/chat/completions`` (tool calls, image parts,
  usage, 401/429/5xx errors with ``Retry-After``), answering from a script of responses, and
  ``GET /v1/models`` when given the models it serves; :meth:`~ChatCompletionsServer.kill` makes it
  die mid-run (open connections dropped, new ones refused);
- :class:`FlakyChatServer`: a chat endpoint answering every conversation from a function, failing a
  given fraction of all requests (500, 502 HTML, 503 with ``Retry-After``, dropped connection);
- :class:`DeadEndpoint`: a loopback port that refuses connections (bound, never listening);
- :class:`SerperServer`: ``POST /search`` and ``POST /lens`` with ``X-API-KEY``;
- :class:`JinaServer`: Jina Reader ``GET /<url>`` (JSON with ``Accept: application/json``, else text);
- :class:`ImgbbServer`: ``POST /1/upload?key=`` (form field ``image`` in base64), serving uploads back;
- :class:`ImageServer`: static images and non-images for download tests.

Each records the requests it received so tests can check what was really sent.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import socket
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from PIL import Image


@dataclass
class Request:
    """A request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Response:
    """What to send back; ``delay`` seconds pass first (to make clients time out); ``drop`` closes the
    connection without any answer."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(status, json.dumps(value).encode(), {"Content-Type": "application/json", **(headers or {})})


def png_bytes(
    width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 30, 30), fmt: str = "PNG"
) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format=fmt)
    return out.getvalue()


S = TypeVar("S", bound="LocalServer")


class LocalServer:
    """A threaded HTTP server on an ephemeral port; subclasses implement :meth:`handle`."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name=type(self).__name__, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self: S) -> S:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def handle(self, request: Request) -> Response:
        raise NotImplementedError


def _make_handler(server: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            parts = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            request = Request(
                method=self.command,
                path=parts.path,
                query=dict(urllib.parse.parse_qsl(parts.query)),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=self.rfile.read(length) if length else b"",
            )
            server.record(request)
            response = server.handle(request)
            if response.delay:
                time.sleep(response.delay)
            if response.drop:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(response.body)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


# -- OpenAI chat completions --------------------------------------------------------------------------

Scripted = Callable[[Request], Response]


def completion(
    content: str | list[dict[str, Any]] | None = "",
    tool_calls: Iterable[tuple[str, Any]] = (),
    *,
    usage: dict[str, int] | None = None,
    omit_usage: bool = False,
    reasoning: str | None = None,
    omit_ids: bool = False,
) -> Scripted:
    """A successful completion; ``tool_calls`` are ``(name, arguments)`` with arguments a dict or a raw string."""
    calls = list(tool_calls)

    def respond(request: Request) -> Response:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        if calls:
            message["tool_calls"] = [_tool_call(i, name, args, omit_ids) for i, (name, args) in enumerate(calls)]
        body: dict[str, Any] = {
            "id": f"chatcmpl-{len(calls)}-{int(time.time() * 1000)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.json().get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        }
        if not omit_usage:
            body["usage"] = usage or {
                "prompt_tokens": 11 * len(request.json()["messages"]),
                "completion_tokens": 7,
                "total_tokens": 11 * len(request.json()["messages"]) + 7,
            }
        return json_response(body)

    return respond


def _tool_call(index: int, name: str, arguments: Any, omit_id: bool) -> dict[str, Any]:
    call: dict[str, Any] = {
        "type": "function",
        "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
    }
    if not omit_id:
        call["id"] = f"call_srv_{index}"
    return call


def api_error(status: int, message: str = "", *, retry_after: str | None = None, delay: float = 0.0) -> Scripted:
    """An error response in OpenAI's ``{"error": {...}}`` shape."""
    kinds = {400: "invalid_request_error", 401: "invalid_api_key", 404: "not_found", 429: "rate_limit_exceeded"}
    headers = {"Retry-After": retry_after} if retry_after is not None else {}

    def respond(request: Request) -> Response:
        body = {
            "error": {
                "message": message or f"status {status}",
                "type": kinds.get(status, "server_error"),
                "param": None,
                "code": kinds.get(status),
            }
        }
        response = json_response(body, status, headers)
        response.delay = delay
        return response

    return respond


def hang(seconds: float) -> Scripted:
    """Answer only after ``seconds`` (a client with a shorter timeout gives up first)."""

    def respond(request: Request) -> Response:
        response = completion("late")(request)
        response.delay = seconds
        return response

    return respond


class ChatCompletionsServer(LocalServer):
    """Answers ``POST /v1/chat/completions`` from a script, after checking the request like the real API would.

    With ``models`` it also serves ``GET /v1/models`` (OpenAI's list shape); without, that route is a 404
    as on servers that do not implement it.
    """

    def __init__(
        self, script: Iterable[Scripted] = (), api_key: str | None = "sk-test", models: Iterable[str] | None = None
    ) -> None:
        super().__init__()
        self.script: deque[Scripted] = deque(script)
        self.api_key = api_key
        self.models = None if models is None else list(models)
        self.dead = threading.Event()

    def kill(self) -> None:
        """Die as a crashed server does: the port refuses new connections, open ones are dropped unanswered."""
        self.dead.set()

        def close() -> None:
            self._httpd.shutdown()
            self._httpd.server_close()

        threading.Thread(target=close, name="kill", daemon=True).start()

    def models_response(self, request: Request) -> Response:
        """``GET /v1/models`` as OpenAI answers it (404 when this server was given no models)."""
        if self.models is None:
            return api_error(404, f"no route {request.method} {request.path}")(request)
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "test"} for name in self.models]
        return json_response({"object": "list", "data": data})

    def chat_response(self, request: Request) -> Response:
        """The next scripted answer (400 when the script is used up)."""
        if not self.script:
            return api_error(400, "test server: the script has no more responses")(request)
        return self.script.popleft()(request)

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def bodies(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.requests if r.path.endswith("/chat/completions")]

    def handle(self, request: Request) -> Response:
        if self.dead.is_set():
            return Response(drop=True)
        models = request.method == "GET" and request.path.endswith("/models")
        if not models and (request.method != "POST" or not request.path.endswith("/chat/completions")):
            return api_error(404, f"no route {request.method} {request.path}")(request)
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return api_error(401, "Incorrect API key provided")(request)
        if models:
            return self.models_response(request)
        problem = _check_chat_request(request)
        if problem:
            return api_error(400, problem)(request)
        return self.chat_response(request)


def html_error(status: int) -> Scripted:
    """A proxy's HTML error page (not JSON)."""
    return lambda request: Response(status, b"<html><body>bad gateway</body></html>", {"Content-Type": "text/html"})


def dropped(request: Request) -> Response:
    """The connection closed without an answer (a crashed worker, a proxy reset)."""
    return Response(drop=True)


FLAKY_FAILURES: tuple[Scripted, ...] = (
    api_error(500, "internal error"),
    html_error(502),
    api_error(503, "overloaded", retry_after="0"),
    dropped,
)


class FlakyChatServer(ChatCompletionsServer):
    """A chat endpoint that fails ``fraction`` of all its requests, spread evenly (call ``n`` fails when
    ``floor((n + 1) * fraction) > floor(n * fraction)``), cycling through :data:`FLAKY_FAILURES`; the other
    requests are answered by ``reply(request)``. ``failures`` counts what it failed."""

    def __init__(
        self, reply: Scripted, fraction: float, *, api_key: str | None = "sk-test", models: Iterable[str] = ()
    ) -> None:
        super().__init__((), api_key, models)
        if not 0 <= fraction < 1:
            raise ValueError(f"fraction must be in [0, 1), got {fraction}")
        self.reply, self.fraction = reply, fraction
        self.calls = 0
        self.failures = 0

    def handle(self, request: Request) -> Response:
        with self._lock:
            n = self.calls
            self.calls += 1
            failing = int((n + 1) * self.fraction) > int(n * self.fraction)
            if failing:
                self.failures += 1
                kind = FLAKY_FAILURES[(self.failures - 1) % len(FLAKY_FAILURES)]
        return kind(request) if failing else super().handle(request)

    def chat_response(self, request: Request) -> Response:
        return self.reply(request)


class DeadEndpoint:
    """A loopback URL nothing answers: the port is bound (so no one else takes it) but never listens,
    so every connection is refused at once."""

    def __enter__(self) -> DeadEndpoint:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self._socket.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"


def _check_chat_request(request: Request) -> str | None:
    try:
        body = request.json()
    except json.JSONDecodeError:
        return "body is not JSON"
    if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
        return "'model' (string) and 'messages' (array) are required"
    for i, message in enumerate(body["messages"]):
        problem = _check_message(message, i)
        if problem:
            return problem
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or not isinstance(tool.get("function", {}).get("name"), str):
            return "each tool must be {'type': 'function', 'function': {'name': ...}}"
    return None


def _check_message(message: Any, index: int) -> str | None:
    if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant", "tool"):
        return f"messages[{index}]: role must be system, user, assistant or tool"
    if message["role"] == "tool" and not message.get("tool_call_id"):
        return f"messages[{index}]: tool messages need tool_call_id"
    content = message.get("content")
    for part in content if isinstance(content, list) else []:
        if part.get("type") == "image_url":
            url = part.get("image_url", {}).get("url", "")
            if not _valid_data_url(url) and not url.startswith("http"):
                return f"messages[{index}]: image_url must be an http(s) URL or a base64 data URL"
    return None


def _valid_data_url(url: str) -> bool:
    if not url.startswith("data:image/") or ";base64," not in url:
        return False
    try:
        base64.b64decode(url.split(",", 1)[1], validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# -- Serper --------------------------------------------------------------------------------------------


class SerperServer(LocalServer):
    """Serper's search and lens endpoints; results are made from the query so each query differs."""

    def __init__(self, api_key: str = "serper-test") -> None:
        super().__init__()
        self.api_key = api_key
        self.fail_next: deque[Response] = deque()

    def handle(self, request: Request) -> Response:
        if self.fail_next:
            return self.fail_next.popleft()
        if request.headers.get("x-api-key") != self.api_key:
            return json_response({"message": "Unauthorized.", "statusCode": 403}, 403)
        if request.method == "POST" and request.path == "/search":
            return json_response(self._search(request.json()))
        if request.method == "POST" and request.path == "/lens":
            return json_response(self._lens(request.json()))
        if request.method == "POST" and request.path == "/images":
            return json_response(self._images(request.json()))
        return json_response({"message": "Not found", "statusCode": 404}, 404)

    @staticmethod
    def _images(body: dict[str, Any]) -> dict[str, Any]:
        query = body["q"]
        slug = urllib.parse.quote(query.replace(" ", "-"))
        images = [
            {
                "title": f"{query} picture {i}",
                "imageUrl": f"https://img.example.org/{slug}/{i}.jpg",
                "imageWidth": 640,
                "imageHeight": 480,
                "thumbnailUrl": f"https://img.example.org/{slug}/{i}-thumb.jpg",
                "source": "Example",
                "domain": "example.org",
                "link": f"https://example.org/{slug}/page{i}",
                "position": i,
            }
            for i in range(1, 8)
        ]
        return {"searchParameters": {"q": query, "type": "images"}, "images": images, "credits": 1}

    @staticmethod
    def _search(body: dict[str, Any]) -> dict[str, Any]:
        query = body["q"]
        slug = urllib.parse.quote(query.replace(" ", "-"))
        organic = [
            {
                "title": f"{query} - result {i}",
                "link": f"https://example.org/{slug}/{i}",
                "snippet": f"About {query} (gl={body.get('gl')}, hl={body.get('hl')}).",
                "position": i,
            }
            for i in range(1, 4)
        ]
        return {
            "searchParameters": {"q": query, "gl": body.get("gl"), "hl": body.get("hl"), "type": "search"},
            "answerBox": {"answer": f"answer for {query}"},
            "organic": organic,
            "credits": 1,
        }

    @staticmethod
    def _lens(body: dict[str, Any]) -> dict[str, Any]:
        url = body["url"]
        organic = [
            {
                "title": f"match {i} for {url.rsplit('/', 1)[-1]}",
                "source": "Example",
                "link": f"https://example.org/m/{i}",
                "imageUrl": f"https://example.org/m/{i}.jpg",
                "thumbnailUrl": f"https://example.org/t/{i}.jpg",
            }
            for i in range(1, 3)
        ]
        return {"searchParameters": {"url": url, "type": "lens"}, "organic": organic, "credits": 3}


# -- Jina Reader ---------------------------------------------------------------------------------------


class JinaServer(LocalServer):
    """Jina Reader: ``GET /<target url>`` returns the page's title and markdown content."""

    def __init__(self, pages: dict[str, tuple[str, str]] | None = None, api_key: str | None = None) -> None:
        super().__init__()
        self.pages = pages or {}
        self.api_key = api_key

    def handle(self, request: Request) -> Response:
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return json_response({"code": 401, "name": "AuthenticationRequiredError", "message": "bad key"}, 401)
        target = request.path[1:]
        if target not in self.pages:
            return json_response(
                {"code": 422, "name": "AssertionFailureError", "message": f"Failed to goto {target}"}, 422
            )
        title, content = self.pages[target]
        if "application/json" in request.headers.get("accept", ""):
            data = {"title": title, "description": "", "url": target, "content": content, "usage": {"tokens": 9}}
            return json_response({"code": 200, "status": 20000, "data": data})
        text = f"Title: {title}\n\nURL Source: {target}\n\nMarkdown Content:\n{content}"
        return Response(200, text.encode(), {"Content-Type": "text/plain; charset=utf-8"})


# -- imgbb ---------------------------------------------------------------------------------------------


class ImgbbServer(LocalServer):
    """imgbb's upload API; uploaded images are served back at the returned URL."""

    def __init__(self, api_key: str = "imgbb-test") -> None:
        super().__init__()
        self.api_key = api_key
        self.uploads: dict[str, bytes] = {}

    def handle(self, request: Request) -> Response:
        if request.method == "GET" and request.path.startswith("/i/"):
            data = self.uploads.get(request.path.split("/")[2])
            return Response(200, data, {"Content-Type": "image/png"}) if data else Response(404, b"not found")
        if request.method != "POST" or request.path != "/1/upload":
            return json_response({"status_code": 404, "error": {"message": "Not found"}}, 404)
        if request.query.get("key") != self.api_key:
            return json_response({"status_code": 400, "error": {"message": "Invalid API v1 key.", "code": 100}}, 400)
        fields = dict(urllib.parse.parse_qsl(request.body.decode()))
        try:
            data = base64.b64decode(fields["image"], validate=True)
        except (KeyError, binascii.Error):
            return json_response({"status_code": 400, "error": {"message": "Empty upload source."}}, 400)
        image_id = f"img{len(self.uploads) + 1}"
        self.uploads[image_id] = data
        url = f"{self.url}/i/{image_id}/{fields.get('name', 'image')}"
        body = {
            "data": {
                "id": image_id,
                "url": url,
                "display_url": url,
                "delete_url": f"{self.url}/d/{image_id}",
                "expiration": request.query.get("expiration", "0"),
            },
            "success": True,
            "status": 200,
        }
        return json_response(body)


# -- images --------------------------------------------------------------------------------------------


class ImageServer(LocalServer):
    """Serves ``routes`` (path -> (content type, bytes)); ``/redirect/<path>`` redirects to ``/<path>``,
    ``/goto?to=URL`` to any URL, and ``/loop/N`` to ``/loop/N+1`` for ever."""

    def __init__(self, routes: dict[str, tuple[str, bytes]] | None = None) -> None:
        super().__init__()
        self.routes = routes or {}

    def handle(self, request: Request) -> Response:
        if request.path.startswith("/redirect/"):
            return Response(302, b"", {"Location": request.path[len("/redirect") :]})
        if request.path == "/goto":
            return Response(302, b"", {"Location": request.query["to"]})
        if request.path.startswith("/loop/"):
            return Response(301, b"", {"Location": f"/loop/{int(request.path.rsplit('/', 1)[1]) + 1}"})
        if request.path == "/slow":
            return Response(200, png_bytes(), {"Content-Type": "image/png"}, delay=3.0)
        if request.path not in self.routes:
            return Response(404, b"<html>not found</html>", {"Content-Type": "text/html"})
        content_type, body = self.routes[request.path]
        return Response(200, body, {"Content-Type": content_type})


class ImagesServer(LocalServer):
    """OpenAI's images API: ``POST /v1/images/generations`` (JSON) and ``POST /v1/images/edits`` (multipart).

    A generation is a 96x64 image of one colour (red); an edit is the uploaded image inverted, so a test can
    tell the edit used the image it was sent. Requests are checked as the real API would (model, prompt,
    the image part of an edit); ``parts`` keeps each edit's form fields.
    """

    def __init__(self, api_key: str = "sk-test") -> None:
        super().__init__()
        self.api_key = api_key
        self.parts: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def handle(self, request: Request) -> Response:
        if request.method != "POST" or not request.path.startswith("/v1/images/"):
            return api_error(404, f"no route {request.method} {request.path}")(request)
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return api_error(401, "Incorrect API key provided")(request)
        if request.path == "/v1/images/generations":
            body = request.json()
            if not body.get("model") or not body.get("prompt"):
                return api_error(400, "model and prompt are required")(request)
            return self._answer(png_bytes(96, 64, (220, 20, 20)))
        if request.path == "/v1/images/edits":
            fields = _multipart(request)
            self.parts.append(fields)
            if not fields.get("model") or not fields.get("prompt") or not isinstance(fields.get("image"), bytes):
                return api_error(400, "model, prompt and an image file are required")(request)
            source = Image.open(io.BytesIO(fields["image"])).convert("RGB")
            out = io.BytesIO()
            Image.eval(source, lambda v: 255 - v).save(out, format="PNG")
            return self._answer(out.getvalue())
        return api_error(404, f"no route {request.method} {request.path}")(request)

    @staticmethod
    def _answer(image: bytes) -> Response:
        return json_response({"created": 0, "data": [{"b64_json": base64.b64encode(image).decode()}]})


def _multipart(request: Request) -> dict[str, Any]:
    """A multipart/form-data body's fields: text values as str, file parts as bytes."""
    from email.parser import BytesParser
    from email.policy import HTTP

    head = f"Content-Type: {request.headers.get('content-type', '')}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + request.body)
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        fields[str(name)] = payload if part.get_filename() else payload.decode()
    return fields
