"""Shared pieces of the hardening suite: limits, the shared-sandbox wrapper and outcome checks.

Every case runs model-style attack code in a real sandbox and asserts four things: the attack
failed (``contained``), the agent was told what happened (status, error or notice), the sandbox
works afterwards or was replaced and says so (``state_lost``), and nothing was left behind
(checked when each module's sandboxes close, and by the session-wide leak check).
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from dataclasses import dataclass, field
from typing import Any

from pixelbox.runtime import Execution, Sandbox

LIMITS: dict[str, Any] = {
    "memory": "512m",
    "pids": 64,
    "timeout": 3.0,
    "grace": 1.0,
    "tmpfs_size": "48m",
    "max_file_size": "64m",
    "workspace_size": "96m",
    "max_open_files": 256,
    "max_outputs": 40,
    "stdout_cap": 8000,
    "stderr_cap": 8000,
}
"""Small limits so that bombs end quickly; the shared sandboxes of every module use them."""

BUSY_S = 120.0
"""Deadline of a cell that must run to its end (or its crash) on a busy host: the 3 s of
:data:`LIMITS` is for bombs, and an import or a million-step loop can take longer than that
when the machine is shared."""

HOST_SECRET = "sk-pbx-hardening-host-secret-0451"
"""Set as OPENAI_API_KEY (and friends) in the host environment while sandboxes start."""

ESCAPED = "ESCAPED"
"""Attack code prints this only when the attack worked; no case may ever see it."""

OUTCOMES: dict[str, dict[str, Any]] = {}
"""Per test id: the executions it ran (filled by :class:`Target`, summarised at session end)."""


@dataclass
class Target:
    """One backend's shared sandbox as seen by a case, recording every execution it runs."""

    name: str
    sb: Sandbox
    log: list[Execution] = field(default_factory=list)

    @property
    def docker(self) -> bool:
        """Whether the kernel runs in a container (runc or runsc)."""
        return self.name in ("runc", "runsc")

    @property
    def policy(self) -> bool:
        """Whether the RestrictedPython layer is on for this target."""
        return bool(self.sb.options.policy_enabled("docker" if self.docker else "local"))

    def run(self, code: str, **kwargs: Any) -> Execution:
        """Execute ``code`` (dedented) and remember the result for the suite's figures."""
        result = self.sb.execute(textwrap.dedent(code).strip("\n"), **kwargs)
        self.log.append(result)
        return result


def attempt(body: str) -> str:
    """Wrap attack ``body``: print ESCAPED if it ran through, ``BLOCKED <repr>`` if it raised.

    Written without underscores so that the restricted policy does not refuse the wrapper
    itself: only the attack inside should meet the policy.
    """
    inner = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    return f"try:\n{inner}\n    print({ESCAPED!r})\nexcept Exception as exc:\n    print('BLOCKED', repr(exc))\n"


def message(result: Execution) -> str:
    """Everything the agent is told about how a cell ended: error, printed outcome, notices."""
    parts = [result.stdout, result.stderr, *result.notices]
    if result.error is not None:
        parts.append(f"{result.error.ename}: {result.error.evalue}")
    if result.crash_reason:
        parts.append(result.crash_reason)
    return "\n".join(parts)


def assert_contained(result: Execution, reason: str) -> None:
    """The attack did not work, and what stopped it is named in what the agent sees.

    ``reason`` is a regular expression over :func:`message` (for example the policy rule,
    the errno text or the exception type), so a silent failure does not pass.
    """
    told = message(result)
    assert ESCAPED not in result.stdout, f"attack succeeded: {told[:2000]}"
    assert result.status in ("ok", "error"), f"unexpected {result.status}: {told[:2000]}"
    assert re.search(reason, told), f"expected the agent to be told /{reason}/, got: {told[:2000]}"


def assert_usable(target: Target) -> None:
    """The sandbox answers a trivial cell correctly (after an attack or a replacement)."""
    after = target.run("print(6 * 7)")
    assert after.status == "ok" and after.stdout == "42\n", message(after)


def assert_replaced(result: Execution, target: Target) -> None:
    """A cell that lost the kernel says so, and the next cell runs on a fresh kernel."""
    assert result.state_lost, message(result)
    after = target.run("print('fresh')")
    assert after.status == "ok" and after.stdout == "fresh\n", message(after)
    if result.status == "crashed":
        assert after.restarted and after.state_lost, "the cell after a crash must report the restart"


def clear_workspace(target: Target) -> None:
    """Remove everything a case left in the shared workspace, from the host, without following links."""
    for entry in os.scandir(target.sb.layout.work):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            os.unlink(entry.path)


def container_fault(container_id: str, fault: str) -> None:
    """Do to a sandbox's container from the host what an operator or a crash would: ``kill`` (SIGKILL),
    ``rm`` (forced removal) or ``pause`` (freeze). A container restored by a restore path
    (``PIXELBOX_RUNSC_RESTORE=1``, ``PIXELBOX_RUNC_RESTORE=1``) is runsc's or runc's, not Docker's, so
    it gets that runtime's equivalent."""
    import subprocess

    from pixelbox.runtime.backends import criu, restore

    command = {"kill": ["kill", container_id, "KILL"], "rm": ["delete", "--force", container_id]}
    command["pause"] = ["pause", container_id]
    # asked of each runtime for this one container: a listing of all of them (``runc list``) can miss a live
    # one while another test session's restores come and go on the same state root
    if restore.runsc("state", container_id).returncode == 0:
        done = restore.runsc(*command[fault])
    elif criu.runc("state", container_id).returncode == 0:
        done = criu.runc(*command[fault])
    else:
        docker = {"kill": ["kill"], "rm": ["rm", "-f"], "pause": ["pause"]}[fault]
        done = subprocess.run(["docker", *docker, container_id], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{fault} of container {container_id} failed: {done.stderr}"
