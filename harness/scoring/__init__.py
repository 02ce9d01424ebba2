"""Process-verified scoring from traces: Acc, S, V_tool, V_true, Overthink, failure taxonomy, reports.

Scoring reads episodes through one view (:class:`EpisodeView`); ``score_run`` and
``write_report`` are the entry points of ``pixelbox score`` and ``pixelbox report``.
Definitions and every difference from the official evaluator: docs/scoring.md.
"""

from pixelbox.harness.scoring.from_trace import episode_from_trace
from pixelbox.harness.scoring.run import score_run, write_report
from pixelbox.harness.scoring.score import score_episode
from pixelbox.harness.scoring.view import EpisodeView, TaskSpec

__all__ = ["EpisodeView", "TaskSpec", "episode_from_trace", "score_episode", "score_run", "write_report"]
