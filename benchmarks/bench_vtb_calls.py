"""What VisualToolBench's fresh interpreter per code call costs: one ``python_image_processing`` call,
stateless (kernel restart, the official predefined names, the model's code) against stateful (the code
alone), on each backend, with the image I/O layer in the ``visualtoolbench`` profile and one 640x480 input.

    .venv/bin/python benchmarks/bench_vtb_calls.py                 # 12 calls per mode and backend
    .venv/bin/python benchmarks/bench_vtb_calls.py --calls 4 --backends local

Results (with machine facts) go to ``benchmarks/results/vtb_calls.json``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import format_table, machine_facts, summarize, write_json

from pixelbox.harness.suites.visualtoolbench.interpreter import Interpreter
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.sandbox import Sandbox

BACKENDS = {
    "local": {"backend": "local"},
    "runc": {"backend": "docker", "runtime": "runc"},
    "runsc": {"backend": "docker", "runtime": "runsc"},
}
CODE = (
    "from PIL import Image\nimport os\nimg = Image.open(os.environ['INPUT_IMAGE_PATH'])\n"
    "img.crop((100, 100, 300, 250)).resize((400, 300)).save(PROCESSED_IMAGE_SAVE_PATH + '/transformed_image_{i}.png')\n"
)


def measure(name: str, image: Path, calls: int, pause: float) -> dict[str, Any]:
    """Seconds per call as the episode sees them: stateless with the next call at once (waiting for the
    restart and preparation), stateless after ``pause`` seconds of model time (preparation done meanwhile),
    and stateful."""
    results: dict[str, Any] = {}
    for mode, wait in (("stateless", 0.0), ("stateless_after_pause", pause), ("stateful", 0.0)):
        options = SandboxOptions(**BACKENDS[name], io={"enabled": True, "profile": "visualtoolbench"})
        with Sandbox(options, inputs=[str(image)]) as sandbox:
            interpreter = Interpreter(sandbox, sandbox.paths.workspace, 120.0, stateful=mode == "stateful")
            interpreter.run(CODE.format(i=0))
            samples = []
            for i in range(1, calls + 1):
                time.sleep(wait)
                started = time.perf_counter()
                run = interpreter.run(CODE.format(i=i))
                samples.append(time.perf_counter() - started)
                assert run.status == "ok" and run.artifacts, run.error
            interpreter.close()
        results[mode] = summarize(samples)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--backends", default="local,runc,runsc")
    parser.add_argument("--pause", type=float, default=8.0, help="model seconds between calls (default 8)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "vtb_calls.json")
    args = parser.parse_args()
    facts = machine_facts()
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        image = Path(tmp) / "input.png"
        Image.new("RGB", (640, 480), (90, 120, 160)).save(image)
        for name in args.backends.split(","):
            results[name] = measure(name, image, args.calls, args.pause)
            modes = ("stateless", "stateless_after_pause", "stateful")
            rows.append([name, *(f"{results[name][m]['p50']:.3f} s ({results[name][m]['p90']:.3f})" for m in modes)])
    headers = ["backend", "fresh, next call at once", f"fresh, after {args.pause:g} s of model time", "stateful"]
    print(format_table(headers, rows))
    print("p50 (p90) seconds per python_image_processing call, as the episode waits for it")
    write_json(args.out, {"machine": facts, "calls": args.calls, "pause": args.pause, "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
