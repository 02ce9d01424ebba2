"""The Docker labels that mark a container as pixelbox's and name its owner: shared by the Docker
backend and the restore paths, whose containers are cleaned up by the same rules."""

LABEL = "pixelbox"
OWNER_LABEL = "pixelbox.owner-pid"
OWNER_START_LABEL = "pixelbox.owner-start"
"""The owner's start time beside its pid: pids are reused, the pair is not."""
