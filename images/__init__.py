"""Container image definitions (data package): the kernel image recipe lives in ``kernel/``."""
