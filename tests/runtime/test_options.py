"""Options validation and small pure helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from pixelbox.runtime import OptionsError, Sandbox, SandboxOptions
from pixelbox.runtime.backends import BACKENDS, BackendEntry, backend_choices
from pixelbox.runtime.backends.base import describe_exit
from pixelbox.runtime.backends.local import LocalBackend
from pixelbox.runtime.mounts import _unescape, mounts_under
from pixelbox.runtime.outputs import CappedText, strip_ansi


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("backend", "podman", "backend='podman' is not supported"),
        ("runtime", "kata", "runtime='kata' is not supported"),
        ("memory", "lots", "is not a size"),
        ("memory", 0, "must be positive"),
        ("timeout", -1, "timeout must be a positive number"),
        ("pids", 5, "too low"),
        ("network", "bridge", "network='bridge' is not supported"),
        ("env", {"BAD-NAME": "x"}, "not a valid environment variable name"),
        ("env", {"N": 3}, "must be a string"),
        ("env", {"PIXELBOX_X": "1"}, "reserved"),
        ("workspace_size", "huge", "workspace_size='huge' is not a size"),
    ],
)
def test_bad_options_are_rejected_with_a_clear_message(field: str, value: object, message: str) -> None:
    with pytest.raises(OptionsError, match=message):
        SandboxOptions(**{field: value})  # type: ignore[arg-type]


def test_sizes_are_parsed_and_env_values_are_withheld_from_info() -> None:
    options = SandboxOptions(memory="1.5g", tmpfs_size="64m", env={"TOKEN": "secret"})
    assert options.memory == int(1.5 * 1024**3)
    assert options.tmpfs_size == 64 * 1024**2
    assert options.to_dict()["env"] == ["TOKEN"]
    assert "secret" not in str(options.to_dict())
    assert options.policy_enabled("local") and not options.policy_enabled("docker")
    assert SandboxOptions(policy=True).policy_enabled("docker")
    assert SandboxOptions(workspace_size="256m").workspace_size == 256 * 1024**2
    assert SandboxOptions(workspace_size=None).workspace_size is None


def test_mount_points_are_read_back_unescaped() -> None:
    assert _unescape(r"/tmp/with\040space\011tab\134slash") == "/tmp/with space\ttab\\slash"
    assert "/" in mounts_under("/") and mounts_under("/no/such/prefix") == []


def test_uncapped_sandbox_says_why() -> None:
    with Sandbox(backend="local", workspace_size=None) as sb:
        assert sb.info.isolation["workspace_quota"] == "not enforced: no workspace_size was set"
        assert sb.info.limits["workspace_size"] is None and mounts_under(str(sb.layout.root)) == []


def test_capped_text_keeps_head_and_tail() -> None:
    sink = CappedText("stdout", 100)
    for i in range(1000):
        sink.write(f"{i:04d}\n")
    text = sink.value()
    assert text.startswith("0000\n")
    assert text.endswith("0999\n")
    assert sink.dropped == 5000 - 100
    assert "4900 characters of stdout truncated" in text


def test_exit_descriptions() -> None:
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(-9) == "killed by signal 9 (SIGKILL)"
    assert describe_exit(139) == "killed by signal 11 (SIGSEGV)"
    assert describe_exit(137, oom=True, memory=512 * 1024**2).startswith("OOM-killed")
    assert strip_ansi("\x1b[0;31mred\x1b[0m") == "red"


class SecondLocalBackend(LocalBackend):
    """A backend only this test knows: the local backend under another name."""

    name = "second-local"


def test_a_backend_registered_at_run_time_needs_no_other_change() -> None:
    """The registry is the only list of backends: options accept a new entry, a sandbox runs on it,
    and ``Sandbox.info`` names it, with no change to the sandbox, options or choice lists."""
    with pytest.raises(OptionsError, match="backend='second-local' is not supported"):
        SandboxOptions(backend="second-local")
    BACKENDS.add("second-local", BackendEntry("second-local", f"{__name__}:SecondLocalBackend", "a test double"))
    try:
        assert "second-local" in backend_choices()
        with Sandbox(backend="second-local", timeout=60) as sandbox:
            result = sandbox.execute("print(6 * 7)")
            info = sandbox.info
        assert result.stdout == "42\n", result
        assert info.backend == "second-local" and info.reason == "second-local backend requested"
        assert info.policy, "no container: the policy is on by default"
    finally:
        BACKENDS.remove("second-local")
    assert "second-local" not in backend_choices()


def test_allow_modules_are_dotted_names_and_reach_the_policy_only_when_given() -> None:
    assert SandboxOptions(allow_modules=["sympy", "mpmath.libmp"]).allow_modules == ("sympy", "mpmath.libmp")
    assert SandboxOptions(allow_modules="sympy").to_dict()["allow_modules"] == ["sympy"]
    for bad in (["os;rm"], [""], [3], "a b"):
        with pytest.raises(OptionsError, match="allow_modules must be dotted module names"):
            SandboxOptions(allow_modules=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("allowed", [(), ("sympy",)])
def test_a_local_sandbox_imports_sympy_only_when_allowed(allowed: tuple[str, ...]) -> None:
    with Sandbox(SandboxOptions(backend="local", allow_modules=allowed)) as sandbox:
        result = sandbox.execute("import sympy\nprint(sympy.Integer(2) ** 10)")
    if allowed:
        assert result.status == "ok" and result.stdout.strip() == "1024"
    else:
        assert result.status == "error" and result.error is not None and "sympy" in result.error.evalue


def test_image_capture_is_on_unless_turned_off_and_artifacts_dir_is_a_path(tmp_path: Path) -> None:
    assert SandboxOptions().io_enabled and SandboxOptions(io={"profile": "generic"}).io_enabled
    assert not SandboxOptions(io={"enabled": False}).io_enabled
    with pytest.raises(OptionsError, match="True or False"):
        SandboxOptions(io={"enabled": "yes"})
    assert SandboxOptions(artifacts_dir=tmp_path).artifacts_dir == str(tmp_path)
    with pytest.raises(OptionsError, match="directory path"):
        SandboxOptions(artifacts_dir=3)  # type: ignore[arg-type]
