"""Tasks in the Agentic-MME dataset layout or JSONL (:mod:`.loader`), validated field by field
(:mod:`.schema`)."""

from pixelbox.harness.tasks.loader import (
    Task,
    TaskSourceError,
    ValidationError,
    load_jsonl_tasks,
    load_official_tasks,
    load_tasks,
)

__all__ = ["Task", "TaskSourceError", "ValidationError", "load_jsonl_tasks", "load_official_tasks", "load_tasks"]
