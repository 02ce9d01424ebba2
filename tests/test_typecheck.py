"""mypy sees the real modules: a wrong call into pixelbox.runtime, .tracer or .harness is an error.

``scripts/typecheck.py`` (``make lint``) checks the package as installed; without it, the
``pixelbox.runtime`` / ``.tracer`` / ``.harness`` imports would resolve to nothing and every use
of them would pass unchecked. Here it checks the package together with a probe file whose calls
are wrong on purpose: each must be reported, against the real signature, and nothing else may be.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = """\
from pixelbox.harness.suites import SUITES
from pixelbox.runtime import Sandbox, SandboxOptions
from pixelbox.tracer import instrument


def probe(sandbox: Sandbox) -> None:
    sandbox.execute(42)
    SandboxOptions(timeout="soon")
    instrument(b"x = 1")
    SUITES.get("agentic-mme").load_tasks(7)
"""
EXPECTED = (
    'probe_wrong_calls.py:7: error: Argument 1 to "execute" of "Sandbox" has incompatible type "int"; expected "str"',
    'probe_wrong_calls.py:8: error: Argument "timeout" to "SandboxOptions" has incompatible type "str"; '
    'expected "float"',
    'probe_wrong_calls.py:9: error: Argument 1 to "instrument" has incompatible type "bytes"; expected "str"',
    'probe_wrong_calls.py:10: error: Argument 1 to "load_tasks" of "Suite" has incompatible type "int"; '
    'expected "str | Path"',
)


def test_wrong_calls_into_the_real_modules_are_caught(tmp_path: Path) -> None:
    probe = tmp_path / "probe_wrong_calls.py"
    probe.write_text(PROBE)
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "typecheck.py"), str(probe)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    errors = [line.split("/")[-1] for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 1, done.stdout + done.stderr
    assert [e.split("  [")[0] for e in errors] == list(EXPECTED), done.stdout
