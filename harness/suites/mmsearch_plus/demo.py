"""``pixelbox demo --suite mmsearch-plus|mmsearch-plus-som``: generated MMSearch-Plus tasks solved offline.

Two tasks are drawn here (a festival poster whose founding year a search finds; a street scene whose
small shop sign names a town) and written as an *encrypted* arrow dataset in the released layout
(``data-00000-of-00001.arrow`` + ``state.json``), so the demo goes through the decryption. A replay
agent plays them through the real runner and sandbox: in the full rollout with ``image_search`` and
``text_search``, in Set-of-Mark with ``zoom_in`` on one of our proposed regions and ``text_search``.
Search results, pages and their summaries come from a recorded web cache (nothing leaves the
machine). Scored with the rule (``match``) and reported.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pixelbox.harness.suites import DemoResult, Suite

HELP = (
    "MMSearch-Plus demo: two generated tasks written as an encrypted arrow dataset (the released layout), "
    "replayed through the real runner and sandbox with recorded searches, pages and summaries (full rollout: "
    "image_search and text_search; Set-of-Mark: zoom_in on a proposed region and text_search), scored and "
    "reported. Writes tasks/ (the arrow dataset), recordings/, web-cache/ and run/ (traces, scores.json, report/)."
)
POSTER_BOX = (140, 60, 420, 360)
SIGN_BOX = (380, 230, 520, 300)
QUESTIONS = {
    "mmsp-000": ("In which year was the festival on this poster first held?", ["1998"], "Music", "easy"),
    "mmsp-001": (
        "The shop sign in this street names a town. In which country is that town?",
        ["Norway"],
        "Geography",
        "difficult",
    ),
}


def draw_images(folder: Path) -> dict[str, Path]:
    from PIL import Image, ImageDraw, ImageFont

    folder.mkdir(parents=True, exist_ok=True)
    poster = Image.new("RGB", (560, 420), (30, 30, 60))
    draw = ImageDraw.Draw(poster)
    draw.rectangle(POSTER_BOX, fill=(250, 210, 60), outline=(0, 0, 0), width=4)
    draw.text((170, 120), "LUMEN FEST", fill=(20, 20, 20), font=ImageFont.load_default(size=36))
    draw.ellipse((230, 200, 330, 300), fill=(200, 40, 40))
    street = Image.new("RGB", (560, 420), (120, 160, 200))
    draw = ImageDraw.Draw(street)
    draw.rectangle((0, 300, 560, 420), fill=(80, 80, 80))
    draw.rectangle((40, 120, 200, 300), fill=(160, 110, 80), outline=(40, 20, 10), width=3)
    draw.rectangle(SIGN_BOX, fill=(240, 240, 230), outline=(10, 10, 10), width=3)
    draw.text((392, 250), "TROMSBY", fill=(10, 10, 10), font=ImageFont.load_default(size=22))
    paths = {"mmsp-000": folder / "poster.png", "mmsp-001": folder / "street.png"}
    poster.save(paths["mmsp-000"])
    street.save(paths["mmsp-001"])
    return paths


def write_dataset(folder: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` as a ``save_to_disk``-shaped dataset: one Arrow IPC stream shard and ``state.json``."""
    import pyarrow as pa

    folder.mkdir(parents=True, exist_ok=True)
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema(
        [
            ("question", pa.string()),
            ("answer", pa.list_(pa.string())),
            ("num_images", pa.int64()),
            ("arxiv_id", pa.string()),
            ("video_url", pa.string()),
            ("category", pa.string()),
            ("difficulty", pa.string()),
            ("subtask", pa.string()),
            *[(f"img_{k}", image) for k in range(1, 6)],
        ]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    shard = folder / "data-00000-of-00001.arrow"
    with pa.OSFile(str(shard), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    state = {"_data_files": [{"filename": shard.name}], "_split": "train", "_format_type": None}
    (folder / "state.json").write_text(json.dumps(state, indent=1), encoding="utf-8")
    return folder


def released_row(
    question: str, answers: list[str], images: list[Path], category: str, difficulty: str
) -> dict[str, Any]:
    """One row as released: encrypted text fields, HF Image structs, unused images null."""
    from pixelbox.harness.suites.mmsearch_plus.tasks import encrypt

    row: dict[str, Any] = {
        "question": encrypt(question),
        "answer": [encrypt(a) for a in answers],
        "num_images": len(images),
        "arxiv_id": "",
        "video_url": encrypt("https://example.org/video"),
        "category": category,
        "difficulty": difficulty,
        "subtask": "demo",
    }
    for k in range(1, 6):
        row[f"img_{k}"] = (
            {"bytes": images[k - 1].read_bytes(), "path": images[k - 1].name} if k <= len(images) else None
        )
    return row


def build_tasks(folder: Path) -> Path:
    images = draw_images(folder / "images")
    rows = [released_row(q, a, [images[tid]], c, d) for tid, (q, a, c, d) in QUESTIONS.items()]
    return write_dataset(folder / "dataset", rows)


SEARCHES = {
    "mmsp-000": (
        "Lumen Fest first held year",
        {
            "title": "Lumen Fest - history",
            "link": "https://example.org/lumen-fest",
            "snippet": "Lumen Fest began in 1998.",
        },
        "Lumen Fest is a summer light-and-music festival. It was first held in 1998 in a harbour town.",
        '{"web_info": "Lumen Fest was first held in 1998.", "related_info": "The poster reads LUMEN FEST."}',
    ),
    "mmsp-001": (
        "Tromsby town country",
        {"title": "Tromsby", "link": "https://example.org/tromsby", "snippet": "Tromsby is a small town in Norway."},
        "Tromsby is a fishing town in northern Norway.",
        '{"web_info": "Tromsby is a town in Norway.", "related_info": "The shop sign reads TROMSBY."}',
    ),
}
LENS = {
    "title": "Lumen Fest poster archive",
    "link": "https://example.org/lumen-posters",
    "image_url": "https://example.org/lumen.png",
}
LENS_SUMMARY = "The results show posters of Lumen Fest, a music festival."


def record_web(cache_root: Path, tasks: list[Any]) -> None:
    """What the providers and the summariser would have answered, in each task's web cache."""
    from pixelbox.harness.suites.mmsearch_plus import tools as mt
    from pixelbox.harness.web import WebCache

    for task in tasks:
        query, hit, page, summary = SEARCHES[task.task_id]
        cache = WebCache.for_task(cache_root, task.task_id, "record")
        cache.put(
            "google_search",
            {"query": query, "gl": "us", "hl": "en"},
            ok=True,
            data={"query": query, "results": [hit]},
            error=None,
        )
        cache.put(
            "fetch_webpage",
            {"url": hit["link"]},
            ok=True,
            data={"url": hit["link"], "title": hit["title"], "content": page},
            error=None,
        )
        prompt = mt.page_prompt(task.question, query, hit, page)
        context = mt.images_context(task.images)
        cache.put(mt.SUMMARY_TOOL, mt.summary_key(prompt, context), ok=True, data={"text": summary}, error=None)
        data = task.images[0].read_bytes()
        lens_key = {"image_sha256": hashlib.sha256(data).hexdigest(), "gl": "us", "hl": "en"}
        cache.put("google_lens_search", lens_key, ok=True, data={"results": [LENS]}, error=None)
        image_prompt = mt.IMAGE_PROMPT.format(what="image 1", question=task.question, results=mt.image_listing([LENS]))
        cache.put(
            mt.SUMMARY_TOOL, mt.summary_key(image_prompt, context), ok=True, data={"text": LENS_SUMMARY}, error=None
        )


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def recordings(som: bool, tasks: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """The replayed model's turns per task (Set-of-Mark zooms into the proposed region holding the text)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        query = SEARCHES[task.task_id][0]
        answer = task.answers[0]
        first: list[dict[str, Any]]
        if som:
            index = sign_mark(task)
            first = [
                {"text": f"Region {index} holds the text; I zoom in.", "tool_calls": [_call("zoom_in", index=index)]}
            ]
        else:
            first = [{"text": "A reverse image search first.", "tool_calls": [_call("image_search", image=1)]}]
        out[task.task_id] = [
            *first,
            {"text": "Now a text search.", "tool_calls": [_call("text_search", queries=[query])]},
            {"text": f"The search answers it. <answer>{answer}</answer>"},
        ]
    return out


def sign_mark(task: Any) -> int:
    """The number of our proposed region that overlaps the drawn text box most."""
    from pixelbox.harness.suites.mmsearch_plus.som import _overlap, marks_for

    target = POSTER_BOX if task.task_id == "mmsp-000" else SIGN_BOX
    marks = marks_for(task.images)
    best = max(marks, key=lambda m: _overlap(m.box, target))
    return best.index


def run_demo(out: Path, suite: Suite, *, backend: str, concurrency: int, progress: bool) -> DemoResult:
    from pixelbox.harness.suites.shared import judged_wrong, replay_run, write_recordings

    som = bool(getattr(suite, "som", False))
    dataset = build_tasks(out / "tasks")
    tasks = list(suite.load_tasks(dataset))
    rec_dir = write_recordings(out / "recordings", recordings(som, tasks))
    record_web(out / "web-cache", tasks)
    run_dir = out / "run"
    summary = replay_run(
        suite, tasks, rec_dir, "replay-demo", run_dir, mode="atm", backend=backend, concurrency=concurrency,
        progress=progress, web_cache=out / "web-cache",
    )  # fmt: skip
    failures = [f"{e['task_id']}: {e['error']}" for e in summary.failed]
    scores = suite.score_run(run_dir, ["match"], progress=progress)
    paths = suite.write_report(run_dir)
    failures += judged_wrong(scores)
    lines = [
        *suite.score_lines(scores, run_dir),
        f"dataset: {dataset} (encrypted, the released arrow layout)",
        f"recordings: {rec_dir}",
        f"traces: {run_dir / 'episodes'}",
        f"report: {paths['html']}",
    ]
    return DemoResult(out, lines, failures)
