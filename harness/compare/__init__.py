"""Comparing scored runs: models, modes and suites side by side (``pixelbox compare``).

:func:`load_systems` reads the runs, :func:`build_comparison` computes aggregates, per-category and
per-level means, the per-task grid and paired bootstrap intervals, :func:`write_comparison` writes
the HTML page, ``compare.md`` and ``compare.json``.
"""

from pixelbox.harness.compare.build import build_comparison
from pixelbox.harness.compare.pages import write_comparison
from pixelbox.harness.compare.stats import PairedDifference, paired_bootstrap
from pixelbox.harness.compare.systems import System, load_systems

__all__ = ["PairedDifference", "System", "build_comparison", "load_systems", "paired_bootstrap", "write_comparison"]
