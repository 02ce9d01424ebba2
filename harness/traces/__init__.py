"""Episode traces: the append-only JSONL files and run directories (:mod:`.store`), and the one
reader that turns an episode trace back into its steps (:mod:`.episode`), used by export and scoring.

The format is specified in ``docs/traces.md``.
"""

from pixelbox.harness.traces.store import (
    RECORD_KINDS,
    SHARD_HELP,
    TRACE_VERSION,
    VOLATILE_CONFIG_KEYS,
    RunConfigMismatch,
    RunDirectory,
    Trace,
    TraceBuffer,
    TraceFormatError,
    TraceWriter,
    encode_record,
    find_traces,
    parse_shard,
    read_trace,
    select_shard,
    shard_of,
    summarize,
)

__all__ = [
    "RECORD_KINDS",
    "SHARD_HELP",
    "TRACE_VERSION",
    "VOLATILE_CONFIG_KEYS",
    "RunConfigMismatch",
    "RunDirectory",
    "Trace",
    "TraceBuffer",
    "TraceFormatError",
    "TraceWriter",
    "encode_record",
    "find_traces",
    "parse_shard",
    "read_trace",
    "select_shard",
    "shard_of",
    "summarize",
]
