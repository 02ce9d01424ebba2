"""inspect_ai sandbox environment provider: ``inspect eval TASK --sandbox pixelbox``.

Registered through inspect_ai's ``inspect_ai`` entry point group (``pip install
'pixelbox[inspect]'``), so inspect imports this module when a task asks for the ``pixelbox``
sandbox. Each sample gets its own pixelbox :class:`~pixelbox.runtime.sandbox.Sandbox` (a kernel in
a container with no network, a memory, pid and CPU cap, a size-capped workspace), made in
``sample_init`` and closed in ``sample_cleanup``. inspect's tools reach it through the standard
interface: ``exec`` runs the command inside the sandbox (``Sandbox.run_command``, traced as a command),
``read_file`` and ``write_file`` go through the workspace with the sandbox's own link-refusing
file handling. Relative paths and ``cwd`` resolve to the workspace, which is the per-sample
filesystem context. :func:`pixelbox_python` is a tool inspect's own sandboxes do not have: the
sandbox's stateful, traced Python kernel, returning the operations that executed and the images
the code made.

Configuration: ``Task(sandbox=("pixelbox", "pixelbox.json"))`` with a JSON file of
:class:`~pixelbox.runtime.options.SandboxOptions` fields (``{"backend": "docker", "runtime":
"runsc", "memory": "1g"}``), or ``SandboxEnvironmentSpec("pixelbox", PixelboxConfig(...))``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import secrets
import shlex
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, overload

from inspect_ai.tool import ContentImage, ContentText, Tool, ToolError, ToolResult, tool
from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxConnection,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUserUnsupportedError,
    sandbox,
    sandboxenv,
)
from pydantic import BaseModel, ConfigDict

from pixelbox.plugins.render import artifact_images, result_text
from pixelbox.runtime.commands import CommandResult
from pixelbox.runtime.errors import OptionsError, WorkspacePathError
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.sandbox import Sandbox
from pixelbox.runtime.workspace import resolve_inside, write_host_file

SANDBOX_NAME = "pixelbox"
SHELL_WRAPPER = ("/bin/sh", "-c", 'cd "$1" || exit 1; shift; exec "$@" <"$0"')
"""Sets the working directory and standard input, then becomes the command (by absolute path: never a
PATH the sandbox controls). Its arguments: the stdin file, the directory, then the command."""
DEFAULT_COMMAND_TIMEOUT_S = 600.0
"""A command's deadline when inspect gives none: generous, never unbounded."""
MIN_OUTPUT_CAP = 10 * 1024**2
"""Each sample's sandbox keeps at least this much of a command's stdout and stderr (inspect's default limit)."""


class PixelboxConfig(BaseModel):
    """The sandbox options of every sample's sandbox: any :class:`SandboxOptions` field, by name."""

    model_config = ConfigDict(extra="allow", frozen=True)

    def options(self) -> SandboxOptions:
        """The options these fields describe (validated; a bad field raises :class:`OptionsError`)."""
        fields = dict(self.model_extra or {})
        try:
            return SandboxOptions(**fields)
        except TypeError as exc:
            known = ", ".join(SandboxOptions.__dataclass_fields__)
            raise OptionsError(f"pixelbox sandbox config: {exc}; the fields are: {known}") from None


def sandbox_options(config: SandboxEnvironmentConfigType | None) -> SandboxOptions:
    """The options a task's sandbox config gives: none, a :class:`PixelboxConfig`, or a JSON file's path."""
    if config is None:
        return SandboxOptions()
    if isinstance(config, PixelboxConfig):
        return config.options()
    if isinstance(config, str):
        path = Path(config)
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise OptionsError(f"pixelbox sandbox config {config!r} is not a readable JSON file: {exc}") from None
        if not isinstance(raw, dict):
            raise OptionsError(f"pixelbox sandbox config {config!r} must hold a JSON object of SandboxOptions fields")
        return PixelboxConfig(**raw).options()
    raise OptionsError(f"pixelbox sandbox config must be a PixelboxConfig or a JSON file path, got {config!r}")


@sandboxenv(name=SANDBOX_NAME)
class PixelboxSandboxEnvironment(SandboxEnvironment):
    """One sample's pixelbox sandbox behind inspect_ai's interface."""

    def __init__(self, sandbox: Sandbox) -> None:
        super().__init__()
        self.sandbox = sandbox

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        """Rebuild a :class:`PixelboxConfig` from its serialized fields (eval logs, retries)."""
        return PixelboxConfig(**config)

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        """Check the configuration once, before any sample starts (a bad field stops the task at once)."""
        sandbox_options(config)

    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, str]
    ) -> dict[str, SandboxEnvironment]:
        """A fresh sandbox for the sample, as the default environment (output caps raised to inspect's limit)."""
        options = sandbox_options(config)
        options = options.with_(
            stdout_cap=max(options.stdout_cap, MIN_OUTPUT_CAP), stderr_cap=max(options.stderr_cap, MIN_OUTPUT_CAP)
        )
        return {"default": cls(await asyncio.to_thread(Sandbox, options))}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        """Close the sample's sandboxes: their kernels stop and their files are deleted."""
        for environment in environments.values():
            if isinstance(environment, PixelboxSandboxEnvironment):
                await asyncio.to_thread(environment.sandbox.close)

    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        """``inspect sandbox cleanup pixelbox``: remove what killed pixelbox hosts left behind."""
        from pixelbox.runtime.cleanup import remove_orphans

        await asyncio.to_thread(remove_orphans)

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        """Run ``cmd`` in the sandbox as its one unprivileged user, through :meth:`Sandbox.run_command`.

        The command is recorded in the trace as a ``command`` event. Standard input and the working
        directory, which ``run_command`` does not take, are given by a ``/bin/sh`` wrapper that
        changes directory and redirects from a host-written, read-only file in the IPC directory.
        """
        if user is not None:
            raise SandboxUserUnsupportedError(
                f"pixelbox runs every command as the sandbox's one unprivileged user; user={user!r} is not available"
            )
        deadline = float(timeout) if timeout is not None else DEFAULT_COMMAND_TIMEOUT_S
        with _stdin_file(self.sandbox, input) as stdin:
            argv = [*SHELL_WRAPPER, stdin, _in_workspace(self.sandbox, cwd), *cmd]
            done = await asyncio.to_thread(self.sandbox.run_command, argv, timeout=deadline, env=env)
        return _exec_result(done, timeout)

    async def write_file(self, file: str, contents: str | bytes) -> None:
        """Write ``file`` in the workspace, creating its parent directories."""
        relative = self._relative(file)
        data = contents.encode() if isinstance(contents, str) else contents
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR((self.sandbox.layout.work / relative).lstat().st_mode):
                raise IsADirectoryError(f"{file} is a directory in the sandbox")
        await asyncio.to_thread(self.sandbox.upload, data, relative)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        """Read ``file`` from the workspace (newlines kept as they are in the file)."""
        relative = self._relative(file)
        try:
            info = (self.sandbox.layout.work / relative).lstat()
        except FileNotFoundError:
            raise FileNotFoundError(f"{file} does not exist in the sandbox") from None
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(f"{file} is a directory in the sandbox")
        if info.st_size > SandboxEnvironmentLimits.MAX_READ_FILE_SIZE:
            raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, None)
        data = await asyncio.to_thread(self.sandbox.download, relative)
        return data.decode() if text else data

    async def connection(self, *, user: str | None = None) -> SandboxConnection:
        """How a person enters a Docker-backed sandbox (inspect's human agent shows it); local ones cannot be entered.

        What is run this way bypasses the trace: it is for looking around, not for the model.
        """
        if user is not None:
            raise SandboxUserUnsupportedError(f"pixelbox sandboxes have one unprivileged user; user={user!r} is not")
        info = await asyncio.to_thread(lambda: self.sandbox.info)
        container = info.isolation.get("container_id")
        if not container:
            raise NotImplementedError(f"a {info.backend} pixelbox sandbox has no container to connect to")
        enter = info.isolation.get("enter")  # a kernel restored by runsc itself: runsc exec (no terminal)
        command = (
            shlex.join([*enter, "bash", "-l"])
            if enter
            else f"docker exec -it --workdir {self.sandbox.paths.workspace} {container} bash -l"
        )
        return SandboxConnection(type=SANDBOX_NAME, command=command, container=str(container))

    def _relative(self, file: str) -> str:
        """``file`` relative to the workspace; anywhere else is refused (the sandbox writes only there)."""
        root = self.sandbox.paths.workspace.rstrip("/")
        relative = file[len(root) + 1 :] if file.startswith(root + "/") else file
        try:
            resolve_inside(self.sandbox.layout.work, relative, what="file")
        except WorkspacePathError as exc:
            raise PermissionError(f"{exc} (the sandbox's files live under {root})") from None
        return relative


def _exec_result(done: CommandResult, timeout: int | None) -> ExecResult[str]:
    """inspect's view of a finished command; a passed deadline is a ``TimeoutError``, as inspect expects."""
    if done.timed_out or done.exit_code is None:
        raise TimeoutError(f"the command exceeded its {timeout} s deadline and was stopped")
    limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
    for text, cut in ((done.stdout, done.stdout_truncated), (done.stderr, done.stderr_truncated)):
        if cut or len(text.encode()) > limit:
            raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR, text[-limit:])
    return ExecResult(done.exit_code == 0, done.exit_code, done.stdout, done.stderr)


@contextlib.contextmanager
def _stdin_file(sandbox: Sandbox, data: str | bytes | None) -> Iterator[str]:
    """The in-sandbox path the command reads its standard input from (``/dev/null`` when there is none)."""
    if data is None:
        yield "/dev/null"
        return
    name = f"stdin-{secrets.token_hex(8)}"
    write_host_file(sandbox.layout.ipc, name, data)  # fresh, read-only to the kernel, never through a link
    try:
        yield f"{sandbox.paths.ipc.rstrip('/')}/{name}"
    finally:
        with contextlib.suppress(OSError):
            os.unlink(sandbox.layout.ipc / name)


def _in_workspace(sandbox: Sandbox, path: str | None) -> str:
    """An in-sandbox directory: ``path`` if absolute, else relative to the workspace (its root when None)."""
    root = sandbox.paths.workspace
    if not path:
        return root
    return path if path.startswith("/") else f"{root}/{path}"


@tool
def pixelbox_python(timeout: int | None = None) -> Tool:
    """The sample's pixelbox kernel as a tool: stateful, traced Python that returns the images it makes."""

    async def execute(code: str) -> ToolResult:
        """Run Python code in a persistent Jupyter kernel; variables, imports and files stay between calls.

        Images the code saves or shows are returned with the result, with the image operations that ran.

        Args:
          code: The Python code to run.

        Returns:
          The status, output, error, executed image operations and the images the code made.
        """
        box = sandbox().as_type(PixelboxSandboxEnvironment).sandbox
        result = await asyncio.to_thread(box.execute, code, timeout=timeout)
        if result.status == "crashed":
            raise ToolError(f"the kernel died: {result.crash_reason}; variables were lost")
        images = await asyncio.to_thread(artifact_images, box, result.artifacts)
        pictures = [ContentImage(image=f"data:{i.mime};base64,{base64.b64encode(i.data).decode()}") for i in images]
        return [ContentText(text=result_text(result)), *pictures]

    return execute
