"""The host-kernel contract: everything both sides of a sandbox must agree on.

- :mod:`.wire`: the files of the IPC directory, execute-request metadata, the record side channel
  and the atomic tool cell, with :data:`~pixelbox.contract.wire.KERNEL_PROTOCOL`;
- :mod:`.config`: the kernel configuration the host writes before a kernel starts;
- :mod:`.events`: the event schema's constants (version, fields, statuses);
- :mod:`.ops`: the canonical operations, one table;
- :mod:`.tools`: the atomic tools' argument checking and function-calling schemas;
- :mod:`.geometry`: image lineage and the 0-1000 box convention.

This package ships into the kernel image beside ``pixelbox.kernel`` and is imported by both the
kernel and the host (``pixelbox.runtime``, ``pixelbox.tracer``, ``pixelbox.harness``); it uses the
standard library only. Everything else in ``pixelbox.kernel`` is private to the kernel.
"""

from pixelbox.contract.wire import KERNEL_PROTOCOL

__all__ = ["KERNEL_PROTOCOL"]
