"""The offline demo: generated tasks, recorded solutions in both modes, a run, scores and a report."""

from __future__ import annotations

from .build import DemoFiles, write_demo
from .catalog import DEMO_TASKS, DemoTask
from .recordings import RECORDINGS

__all__ = ["DEMO_TASKS", "RECORDINGS", "DemoFiles", "DemoTask", "write_demo"]
