"""Tasks in the Agentic-MME dataset layout (read as the official runner reads it, :mod:`.official`) or
JSONL (:mod:`.loader`), validated field by field (:mod:`.schema`)."""

from pixelbox.harness.tasks.loader import (
    Task,
    TaskFormatWarning,
    TaskNote,
    TaskSourceError,
    ValidationError,
    load_jsonl_tasks,
    load_official_tasks,
    load_tasks,
    load_tasks_report,
)

__all__ = [
    "Task",
    "TaskFormatWarning",
    "TaskNote",
    "TaskSourceError",
    "ValidationError",
    "load_jsonl_tasks",
    "load_official_tasks",
    "load_tasks",
    "load_tasks_report",
]
