"""Agent-X tasks: ``data.json`` + ``toolmeta.json`` + media, as the official scripts read them.

``data.json`` maps each key (``"0"``..``"827"``) to a one-element list holding the record: ``query``,
``file_path`` (one file or a comma-separated list, relative to the media folder), ``tool_metadata``
(the tools the ground truth used, by name), ``reasoning_steps`` (the ground-truth steps),
``final_answer`` (``{value, justification}``) and ``query_type``. A task is a video when its first
file ends in ``mp4``, ``avi`` or ``mov`` (the official test); its frames are then sampled as one
official script does (``gpt``: the first 8 frames in order, the default; ``gemini``: 4 evenly spaced),
chosen with ``PIXELBOX_AGENTX_FRAMES``, written as JPEG files and recorded in the task.

Media are looked for in ``files/`` beside ``data.json`` (the HF layout), then beside it.
``toolmeta.json`` is read from the same folder (or ``data_curation/``); without one, our own
description of the 14 tools (:mod:`.tools`) stands in.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pixelbox.harness.suites.shared import LoadedTasks, TaskRecordError

VIDEO_EXTENSIONS = ("mp4", "avi", "mov")
FRAME_POLICIES = {"gpt": "the first 8 frames in order (run_inference_gpt.py)", "gemini": "4 evenly spaced frames"}
GENERATIVE_IDS = frozenset(
    (
        1,
        8,
        10,
        12,
        24,
        30,
        35,
        44,
        46,
        50,
        53,
        56,
        57,
        60,
        61,
        63,
        65,
        67,
        69,
        70,
        75,
        78,
        92,
        93,
        94,
        97,
        98,
        101,
        103,
        106,
        107,
        113,
        115,
        117,
        119,
        121,
        122,
        125,
        129,
        132,
        134,
        135,
        139,
        146,
        147,
        148,
        159,
        162,
        164,
        166,
        168,
        170,
        174,
        185,
        196,
        198,
        215,
        217,
        221,
        223,
        231,
        232,
        233,
        234,
        235,
        244,
        245,
        246,
        261,
        274,
        277,
        278,
        284,
        293,
        294,
        303,
        304,
        311,
        319,
        332,
        335,
        336,
        338,
        339,
        341,
        351,
        358,
        359,
        362,
        363,
        364,
        365,
        368,
        371,
        374,
        382,
        389,
        394,
        399,
        407,
        408,
        412,
        413,
        414,
        418,
        419,
        424,
        425,
        430,
        436,
        442,
        443,
        445,
        447,
        448,
        450,
        451,
        463,
        467,
        468,
        472,
        473,
        476,
        481,
        483,
        484,
        485,
        487,
        491,
        495,
        497,
        500,
        508,
        509,
        515,
        516,
        521,
        526,
        530,
        533,
        539,
        546,
        551,
        552,
        553,
        556,
        560,
        563,
        567,
        571,
        572,
        582,
        584,
        586,
        588,
        595,
        596,
        600,
        604,
        605,
        614,
        615,
        620,
        623,
        624,
        640,
        643,
        644,
        645,
        646,
        647,
        650,
        651,
        652,
        655,
        660,
        664,
        677,
        679,
        683,
        694,
        697,
        698,
        701,
        704,
        706,
        712,
        714,
        716,
        728,
        731,
        739,
        741,
        742,
        749,
        752,
        755,
        756,
        758,
        759,
        761,
        764,
        766,
        768,
        775,
        776,
        777,
        788,
        789,
        796,
        798,
        799,
        800,
        805,
        806,
        816,
        817,
        818,
        819,
        820,
        822,
        826,
    )
)
"""The 222 generative tasks (by key) of the official analysis: excluded from goal accuracy, scored by G*."""


@dataclass(frozen=True)
class AgentXTask:
    """One Agent-X query with its media (video frames already sampled) and its ground truth."""

    task_id: str
    query: str
    files: tuple[str, ...]
    images: tuple[Path, ...]
    video: bool
    frame_policy: str | None
    frame_indices: tuple[int, ...]
    query_type: str
    gt_tools: tuple[str, ...]
    gt_tool_metadata: dict[str, Any]
    gt_steps: list[Any]
    gt_final: Any
    toolmeta: dict[str, Any] = field(default_factory=dict)

    @property
    def generative(self) -> bool:
        return self.task_id.isdigit() and int(self.task_id) in GENERATIVE_IDS

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "question": self.query,
            "query": self.query,
            "file_path": ", ".join(self.files),
            "images": [str(p) for p in self.images],
            "video": self.video,
            "frames": {"policy": self.frame_policy, "indices": list(self.frame_indices)} if self.video else None,
            "query_type": self.query_type,
            "generative": self.generative,
            "tool_metadata": self.gt_tool_metadata,
            "reasoning_steps": self.gt_steps,
            "final_answer": self.gt_final,
            "toolmeta": self.toolmeta,
        }


def frame_policy() -> str:
    policy = os.environ.get("PIXELBOX_AGENTX_FRAMES", "gpt")
    if policy not in FRAME_POLICIES:
        raise ValueError(f"PIXELBOX_AGENTX_FRAMES must be one of {', '.join(FRAME_POLICIES)}, got {policy!r}")
    return policy


def load_tasks(source: str | Path, ids: Iterable[str] | None = None) -> LoadedTasks[AgentXTask]:
    """Tasks of ``data.json`` (or a folder holding it)."""
    path = Path(source)
    data_file = path / "data.json" if path.is_dir() else path
    if not data_file.is_file():
        raise FileNotFoundError(f"{data_file}: no Agent-X data.json (give the file or the folder holding it)")
    folder = data_file.parent
    try:
        data = json.loads(data_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{data_file}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{data_file}: must map each key to a list holding its record, got {type(data).__name__}")
    meta = _toolmeta(folder)
    policy = frame_policy()
    wanted = set(ids) if ids is not None else None
    loaded: LoadedTasks[AgentXTask] = LoadedTasks()
    for key, value in data.items():
        if wanted is None or str(key) in wanted:
            loaded.add(partial(_task, str(key), value, folder, meta, policy), f"{data_file}, key {key}")
    return loaded


def _toolmeta(folder: Path) -> dict[str, Any]:
    for candidate in (folder / "toolmeta.json", folder / "data_curation" / "toolmeta.json"):
        if candidate.is_file():
            value = json.loads(candidate.read_text(encoding="utf-8"))
            if not isinstance(value, dict):
                raise ValueError(f"{candidate}: must map tool names to their metadata")
            return value
    return {}


def _task(key: str, value: Any, folder: Path, meta: dict[str, Any], policy: str) -> AgentXTask:
    record = value[0] if isinstance(value, list) and value else value
    if not isinstance(record, dict):
        raise TaskRecordError("must be a list holding one record object")
    query = record.get("query")
    if not isinstance(query, str) or not query.strip():
        raise TaskRecordError("field 'query' is missing or empty")
    file_path = record.get("file_path")
    if not isinstance(file_path, str) or not file_path.strip():
        raise TaskRecordError("field 'file_path' is missing or empty")
    files = tuple(f.strip() for f in file_path.split(",") if f.strip())
    paths = tuple(_media(folder, f) for f in files)
    video = files[0].rsplit(".", 1)[-1].lower() in VIDEO_EXTENSIONS
    indices: tuple[int, ...] = ()
    images = paths
    if video:
        images, indices = sample_frames(paths[0], policy)
    tool_metadata = record.get("tool_metadata") or {}
    if not isinstance(tool_metadata, dict):
        raise TaskRecordError("field 'tool_metadata' must map tool names to their metadata")
    return AgentXTask(
        task_id=key,
        query=query,
        files=files,
        images=images,
        video=video,
        frame_policy=policy if video else None,
        frame_indices=indices,
        query_type=str(record.get("query_type") or ""),
        gt_tools=tuple(tool_metadata),
        gt_tool_metadata=tool_metadata,
        gt_steps=list(record.get("reasoning_steps") or []),
        gt_final=record.get("final_answer") or {},
        toolmeta=meta,
    )


def _media(folder: Path, name: str) -> Path:
    for candidate in (folder / "files" / name, folder / name):
        if candidate.is_file():
            return candidate
    raise TaskRecordError(f"media file {name!r} is in neither {folder / 'files'} nor {folder}")


def sample_frames(video: Path, policy: str) -> tuple[tuple[Path, ...], tuple[int, ...]]:
    """The frames an official script would send, as JPEG files (content-addressed), and their indices."""
    import cv2

    capture = cv2.VideoCapture(str(video))
    if not capture.isOpened():
        raise TaskRecordError(f"OpenCV cannot open the video {video}")
    frames = []
    try:
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            frames.append(frame)
            if policy == "gpt" and len(frames) == 8:
                break
    finally:
        capture.release()
    if not frames:
        raise TaskRecordError(f"the video {video} has no readable frame")
    if policy == "gpt":
        indices = list(range(len(frames)))
    else:
        n = len(frames)
        indices = sorted({round(i * (n - 1) / 3) for i in range(4)}) if n > 1 else [0]
    digest = hashlib.sha256(video.read_bytes()).hexdigest()[:16]
    root = _cache() / digest
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for index in indices:
        target = root / f"{policy}_frame_{index:03d}.jpg"
        if not target.exists():
            cv2.imwrite(str(target), frames[index])
        out.append(target)
    return tuple(out), tuple(indices)


def _cache() -> Path:
    from pixelbox.harness.suites.shared import cache_dir

    return cache_dir("agent-x", "frames")
