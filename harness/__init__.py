"""Harness: tasks, agents, modes, tools, traces, scoring, reports (see issue 5)."""
