"""Web tools against real local Serper, Jina Reader and imgbb servers; errors become tool results."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pixelbox.harness.web import ImgbbHost, JinaReader, SerperProvider, WebCache, WebTools
from tests.harness.servers import ImgbbServer, JinaServer, Response, SerperServer, png_bytes


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def tools_for(serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer, cache: WebCache | None = None) -> WebTools:
    return WebTools(
        search=SerperProvider("serper-test", base_url=serper.url, timeout=2),
        reader=JinaReader(base_url=jina.url, timeout=2),
        host=ImgbbHost("imgbb-test", base_url=imgbb.url),
        cache=cache,
    )


def test_google_search_sends_serper_request_and_renders_results(serper: SerperServer) -> None:
    result = WebTools(search=SerperProvider("serper-test", base_url=serper.url)).google_search(
        "eiffel tower", "fr", "fr"
    )
    sent = serper.requests[0]
    assert (sent.path, sent.headers["x-api-key"]) == ("/search", "serper-test")
    assert sent.json()["q"] == "eiffel tower" and (sent.json()["gl"], sent.json()["hl"]) == ("fr", "fr")
    assert result.ok and result.source == "provider"
    assert [r["title"] for r in result.data["results"]] == [f"eiffel tower - result {i}" for i in (1, 2, 3)]
    assert "Answer: answer for eiffel tower" in result.text and "1. eiffel tower - result 1" in result.text


def test_keys_are_read_from_the_environment(serper: SerperServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPER_API_KEY", "serper-test")
    assert WebTools(search=SerperProvider(base_url=serper.url)).google_search("q").ok
    monkeypatch.delenv("SERPER_API_KEY")
    result = WebTools(search=SerperProvider(base_url=serper.url)).google_search("q")
    assert not result.ok and "SERPER_API_KEY is not set" in result.text
    assert len(serper.requests) == 1


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (Response(500, b"upstream broke"), "Serper returned HTTP 500: upstream broke"),
        (Response(200, b"<html>oops</html>"), "not JSON"),
        (Response(200, b"{}", delay=1.5), "did not answer within 0.3 s"),
    ],
)
def test_provider_failures_become_tool_errors(serper: SerperServer, failure: Response, message: str) -> None:
    serper.fail_next.append(failure)
    result = WebTools(search=SerperProvider("serper-test", base_url=serper.url, timeout=0.3)).google_search("q")
    assert not result.ok and message in result.error and result.text.startswith("Error: ")


def test_wrong_key_and_unreachable_server(serper: SerperServer) -> None:
    wrong = WebTools(search=SerperProvider("nope", base_url=serper.url)).google_search("q")
    assert "HTTP 403 (check the API key and its quota)" in wrong.error
    down = WebTools(search=SerperProvider("k", base_url=closed_port_url())).google_search("q")
    assert "cannot reach Serper" in down.error


def test_bad_arguments_never_reach_the_provider(serper: SerperServer) -> None:
    tools = WebTools(search=SerperProvider("serper-test", base_url=serper.url))
    assert "query must be a non-empty string" in tools.google_search("   ").error
    assert "query must be a non-empty string" in tools.google_search(42).error
    assert "unknown web tool" in tools.call("bing", {}).error
    assert "bad arguments for google_search" in tools.call("google_search", {"q": "x"}).error
    assert serper.requests == []


def test_lens_on_local_bytes_uploads_then_searches(serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer) -> None:
    image = png_bytes(30, 20)
    result = tools_for(serper, jina, imgbb).google_lens_search(image)
    assert list(imgbb.uploads.values()) == [image]
    lens_request = serper.requests[0]
    assert lens_request.path == "/lens" and lens_request.json()["url"].startswith(imgbb.url + "/i/img1/")
    assert result.ok and len(result.data["results"]) == 2 and "Reverse image search matches" in result.text


def test_lens_on_a_public_url_skips_the_upload(serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer) -> None:
    result = tools_for(serper, jina, imgbb).call("google_lens_search", {"image_url": "https://example.org/x.png"})
    assert result.ok and imgbb.requests == []
    assert serper.requests[0].json()["url"] == "https://example.org/x.png"


def test_lens_upload_failure_is_a_tool_error(serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer) -> None:
    tools = tools_for(serper, jina, imgbb)
    tools.host = ImgbbHost("wrong-key", base_url=imgbb.url)
    result = tools.google_lens_search(png_bytes())
    assert not result.ok and "imgbb returned HTTP 400" in result.error and "Invalid API v1 key" in result.error
    assert serper.requests == []


def test_fetch_webpage_truncates_with_a_notice(serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer) -> None:
    tools = tools_for(serper, jina, imgbb)
    long = tools.fetch_webpage("https://example.org/long", max_chars=100)
    assert long.ok and len(long.data["content"]) == 100 and long.data["total_chars"] == 25000
    assert "[page truncated: showing 100 of 25000 characters]" in long.text
    assert jina.requests[0].path == "/https://example.org/long"
    assert jina.requests[0].headers["accept"] == "application/json"
    short = tools.fetch_webpage("https://example.org/short")
    assert "324 metres" in short.text and "truncated" not in short.text
    missing = tools.fetch_webpage("https://example.org/none")
    assert not missing.ok and "HTTP 422" in missing.error
    assert "must be an http(s) URL" in tools.fetch_webpage("ftp://x").error
    assert "positive integer" in tools.fetch_webpage("https://example.org/short", max_chars=0).error


def test_jina_plain_text_replies_and_keys(jina: JinaServer) -> None:
    page = JinaReader(base_url=jina.url).read("https://example.org/short")
    assert page["content"] == "The tower is 324 metres tall."
    jina.api_key = "jina-test"
    assert "HTTP 401" in WebTools(reader=JinaReader(base_url=jina.url)).fetch_webpage("https://example.org/short").error
    assert WebTools(reader=JinaReader("jina-test", base_url=jina.url)).fetch_webpage("https://example.org/short").ok


# -- record / replay ------------------------------------------------------------------------------------


def test_record_then_replay_offline_gives_the_same_results(
    tmp_path: Path, serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer
) -> None:
    recorder = tools_for(serper, jina, imgbb, WebCache.for_task(tmp_path, "0001", "record"))
    recorded = [
        recorder.google_search("eiffel tower"),
        recorder.fetch_webpage("https://example.org/long", 50),
        recorder.google_lens_search(png_bytes()),
    ]
    assert all(r.ok for r in recorded) and len(list((tmp_path / "0001").glob("*.json"))) == 3
    offline = WebTools(
        search=SerperProvider("k", base_url=closed_port_url()),
        reader=JinaReader(base_url=closed_port_url()),
        host=ImgbbHost("k", base_url=closed_port_url()),
        cache=WebCache.for_task(tmp_path, "0001", "replay"),
    )
    replayed = [
        offline.google_search("  eiffel   tower "),
        offline.fetch_webpage("https://example.org/long", 50),
        offline.google_lens_search(png_bytes()),
    ]
    assert [r.text for r in replayed] == [r.text for r in recorded]
    assert {r.source for r in replayed} == {"cache"}


def test_replay_miss_is_a_tool_error_without_network(tmp_path: Path, serper: SerperServer) -> None:
    cache = WebCache.for_task(tmp_path, "0002", "replay")
    result = WebTools(search=SerperProvider("serper-test", base_url=serper.url), cache=cache).google_search("new")
    assert not result.ok and "no recorded result for google_search" in result.error and "record" in result.error
    assert serper.requests == []


def test_auto_uses_the_cache_and_retries_recorded_failures(tmp_path: Path, serper: SerperServer) -> None:
    cache = WebCache.for_task(tmp_path, "0003", "auto")
    tools = WebTools(search=SerperProvider("serper-test", base_url=serper.url), cache=cache)
    serper.fail_next.append(Response(503, b"busy"))
    assert not tools.google_search("q").ok
    second, third = tools.google_search("q"), tools.google_search("q")
    assert second.ok and second.source == "provider"
    assert third.ok and third.source == "cache" and third.text == second.text
    assert len(serper.requests) == 2


def test_replay_returns_a_recorded_failure_as_recorded(tmp_path: Path, serper: SerperServer) -> None:
    serper.fail_next.append(Response(500, b"broken"))
    record = WebCache.for_task(tmp_path, "t", "record")
    first = WebTools(search=SerperProvider("serper-test", base_url=serper.url), cache=record).google_search("q")
    again = WebTools(search=None, cache=WebCache.for_task(tmp_path, "t", "replay")).google_search("q")
    assert not again.ok and again.error == first.error and again.source == "cache"


def test_caches_are_per_task(tmp_path: Path, serper: SerperServer) -> None:
    provider = SerperProvider("serper-test", base_url=serper.url)
    WebTools(search=provider, cache=WebCache.for_task(tmp_path, "a", "record")).google_search("q")
    miss = WebTools(search=provider, cache=WebCache.for_task(tmp_path, "b", "replay")).google_search("q")
    assert not miss.ok and "no recorded result" in miss.error


def test_cache_mode_is_checked() -> None:
    with pytest.raises(ValueError, match="must be one of off, record, replay, auto"):
        WebCache("/tmp/x", "sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a directory"):
        WebCache(None, "record")
