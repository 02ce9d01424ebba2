"""Loopback servers speaking the protocols VisualToolBench's tools and judge talk to.

- :class:`SerpApiServer`: SerpAPI ``GET /search?engine=google&q=..&num=..&api_key=..`` (``organic_results``,
  ``search_information.total_results``);
- :class:`WeatherServer`: OpenWeatherMap ``GET /geo/1.0/direct`` then ``GET /data/2.5/weather`` (metric);
- :class:`PageServer`: HTML pages for ``browser_get_page_text``;
- :func:`rubric_judge`: a chat-completions script that answers a rubric prompt the way a careful judge would
  for the tests' cases (Met when the model answer contains the criterion's quoted value).
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.harness.servers import LocalServer, Request, Response, completion, json_response

SERP_KEY, WEATHER_KEY = "serp-test", "weather-test"


class SerpApiServer(LocalServer):
    """Results are made from the query, so each query gives different ones."""

    def handle(self, request: Request) -> Response:
        if request.path != "/search" or request.method != "GET":
            return json_response({"error": "not found"}, 404)
        if request.query.get("api_key") != SERP_KEY:
            return json_response({"error": "Invalid API key."}, 401)
        query, num = request.query["q"], int(request.query.get("num", "10"))
        organic = [
            {
                "position": i + 1,
                "title": f"{query} result {i}",
                "link": f"https://example.org/{i}",
                "displayed_link": f"example.org > {i}",
                "snippet": f"About {query}: fact {i}.",
            }
            for i in range(num)
        ]
        return json_response({"search_information": {"total_results": 1234}, "organic_results": organic})


class WeatherServer(LocalServer):
    def handle(self, request: Request) -> Response:
        if request.query.get("appid") != WEATHER_KEY:
            return json_response({"cod": 401, "message": "Invalid API key."}, 401)
        if request.path == "/geo/1.0/direct":
            if request.query["q"].startswith("Nowhere"):
                return json_response([])
            return json_response([{"name": request.query["q"], "lat": 48.85, "lon": 2.35, "country": "FR"}])
        if request.path == "/data/2.5/weather" and request.query.get("units") == "metric":
            return json_response(
                {
                    "weather": [{"main": "Rain", "description": "light rain"}],
                    "main": {
                        "temp": 12.34,
                        "feels_like": 11.0,
                        "temp_min": 10.0,
                        "temp_max": 14.5,
                        "pressure": 1012,
                        "humidity": 81,
                    },
                    "wind": {"speed": 3.6},
                }
            )
        return json_response({"cod": 404}, 404)


class PageServer(LocalServer):
    PAGE = (
        "<html><head><title>Opening hours</title><script>track()</script></head><body>"
        "<nav>Home | Shop</nav><main><h1>Hours</h1><p>Open   daily\n from 9 to 17.</p></main>"
        "<footer>(c) shop</footer></body></html>"
    )

    def handle(self, request: Request) -> Response:
        if request.path == "/hours":
            return Response(200, self.PAGE.encode(), {"Content-Type": "text/html; charset=utf-8"})
        return Response(404, b"<html>missing</html>", {"Content-Type": "text/html"})


_QUOTED = re.compile(r"'([^']+)'")


def rubric_judge(request: Request) -> Response:
    """Met when every quoted value of the criterion appears in the model answer; the reply is JSON."""
    prompt = request.json()["messages"][-1]["content"]
    criterion = prompt.split("Rubric criterion:", 1)[1].split("Model answer:", 1)[0]
    answer = prompt.split("Model answer:", 1)[1].split("Reply with JSON only", 1)[0]
    values = _QUOTED.findall(criterion)
    met = bool(values) and all(v in answer for v in values)
    reply = {"explanation": f"looked for {values}", "judge_result": "Met" if met else "Not Met"}
    return completion(json.dumps(reply))(request)


def judge_script(count: int) -> list[Any]:
    return [rubric_judge] * count
