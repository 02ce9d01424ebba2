"""Tracer: libcst instrumentation, canonical operations, lineage and the event schema."""
