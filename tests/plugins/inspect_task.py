"""An inspect_ai task whose mock model calls tools in the sample's sandbox (run by test_inspect_sandbox.py).

The model is inspect's ``mockllm/model`` with scripted outputs: each turn is one tool call, the
last a plain answer. The task names no sandbox: the test gives ``--sandbox pixelbox``, so every
tool below runs in a pixelbox sandbox. Each step checks something only a real sandbox gives: a
file written by one call is read by the next, the user is the unprivileged sandbox user, the only
network interface is loopback, and the traced kernel returns the image it saved.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import bash, python

from pixelbox.plugins.inspect_sandbox import pixelbox_python

MODEL = "mockllm/model"
IMAGE_CELL = (
    "from PIL import Image\n"
    "img = Image.new('RGB', (64, 48), 'white')\n"
    "img.crop((8, 8, 40, 32)).save('crop.png')\n"
    "print(open('note.txt').read().strip(), img.size)\n"
)
CALLS = [
    ("bash", {"command": "echo pixel-note > note.txt && id -u && pwd"}),
    ("python", {"code": "print(open('note.txt').read().strip().upper())"}),
    ("bash", {"command": "ls /sys/class/net; cat /proc/self/status | grep -i '^CapEff'"}),
    ("pixelbox_python", {"code": IMAGE_CELL}),
    ("bash", {"command": "ls -1 && printf 'err-line' >&2 && exit 3"}),
]


def scripted_outputs() -> list[ModelOutput]:
    """One tool call per turn, then the answer the scorer looks for.

    Each output states its token usage, so inspect does not count tokens (which would fetch a
    tokenizer's tables from the network).
    """
    outputs = [ModelOutput.for_tool_call(MODEL, name, args) for name, args in CALLS]
    outputs.append(ModelOutput.from_content(MODEL, "PIXEL-NOTE"))
    for output in outputs:
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return outputs


@task
def pixelbox_tools() -> Task:
    """One sample; the mock model drives bash, python and pixelbox_python in the sample's sandbox."""
    return Task(
        dataset=[Sample(input="Write a note, read it back, and crop an image.", target="PIXEL-NOTE")],
        solver=[use_tools([bash(timeout=60), python(timeout=60), pixelbox_python(timeout=60)]), generate()],
        scorer=includes(),
        model=get_model(MODEL, custom_outputs=scripted_outputs()),
    )
