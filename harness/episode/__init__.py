"""One episode: a task, an agent and a sandbox, turn by turn (:mod:`.loop`), with what it needs:
budgets (:mod:`.budgets`), prompts (:mod:`.prompts`), reading code-mode turns (:mod:`.codemode`),
the images of the episode (:mod:`.imagebook`) and what the model is shown (:mod:`.observations`).
"""

from pixelbox.harness.episode.loop import (
    EPISODE_STATUSES,
    MODES,
    RETRYABLE_STATUSES,
    Episode,
    EpisodeAborted,
    EpisodeConfig,
    EpisodeEnd,
    EpisodeOutcome,
    Mode,
    ask_agent,
    play_until_end,
    record_failed_start,
    redact,
    run_episode,
    runtime_info,
    start_fields,
    trace_call,
)

__all__ = [
    "EPISODE_STATUSES",
    "MODES",
    "RETRYABLE_STATUSES",
    "Episode",
    "EpisodeAborted",
    "EpisodeConfig",
    "EpisodeEnd",
    "EpisodeOutcome",
    "Mode",
    "ask_agent",
    "play_until_end",
    "record_failed_start",
    "redact",
    "run_episode",
    "runtime_info",
    "start_fields",
    "trace_call",
]
