# ruff: noqa: E501  (the code blocks are data, kept one per line)
"""Derive the official reading's expected outputs by running the official Agentic-MME code.

    .venv/bin/python scripts/official_cases.py --oracle /work/oracles/Agentic-MME

The official repository is a read-only oracle (clone it yourself; nothing of it is copied here):
this script builds code blocks (hand-picked ones and seeded random compositions of model-style
fragments), asks the official ``ast_ops`` module what it lists for each, and writes the answers to
``tests/tracer/static/official_cases.json``, which ``tests/tracer/static/test_official.py`` holds
our reading to. Rerun it when the cases change; the seed makes the file reproducible.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tests" / "tracer" / "static" / "official_cases.json"
SEED = 13

HEAD = [
    "import os\nfrom PIL import Image, ImageOps, ImageEnhance, ImageFilter, ImageDraw\nimport numpy as np\nimport cv2\n",
    "from PIL import Image\nimport os\n",
    "import cv2\nimport numpy as np\n",
    "from PIL import Image, ImageOps as IO\nfrom pathlib import Path\n",
]
OPEN = [
    "img = Image.open(os.environ['ORIGINAL_IMAGE_PATH'])\n",
    "img = Image.open('/mnt/data/input.png').convert('RGB')\n",
    "arr = cv2.imread(os.environ['ORIGINAL_IMAGE_PATH'])\n",
    "img = Image.open(path)\nw, h = img.size\n",
]
FRAGMENTS = [
    "img = img.crop((10, 20, 300, 400))\n",
    "crop = img.crop((0, 0, w // 2, h // 2))\n",
    "img = img.resize((800, 600))\n",
    "big = img.crop((5, 5, 50, 50)).resize((200, 200), Image.LANCZOS)\n",
    "img = img.resize((w * 2, h * 2)).crop((0, 0, 100, 100))\n",
    "img = img.rotate(90, expand=True)\n",
    "img = img.rotate(-15)\n",
    "img = ImageOps.mirror(img)\n",
    "img = ImageOps.flip(img)\n",
    "img = IO.mirror(img)\n",
    "img = img.transpose(Image.FLIP_LEFT_RIGHT)\n",
    "img = img.transpose(Image.Transpose.FLIP_TOP_BOTTOM)\n",
    "img = img.transpose(Image.ROTATE_90)\n",
    "img = img.transpose()\n",
    "a = np.array(img).transpose(1, 0, 2)\n",
    "img = ImageEnhance.Contrast(img).enhance(1.8)\n",
    "img = ImageEnhance.Brightness(img).enhance(2.0)\n",
    "img = img.filter(ImageFilter.SHARPEN)\n",
    "img = ImageOps.autocontrast(img)\n",
    "img = img.convert('L')\n",
    "img = img.point(lambda p: 255 if p > 128 else 0)\n",
    "draw = ImageDraw.Draw(img)\ndraw.rectangle([10, 10, 90, 90], outline='red')\n",
    "draw.text((5, 5), 'label', fill='white')\n",
    "img.paste(patch, (0, 0))\n",
    "arr = cv2.resize(arr, None, fx=2, fy=2, interpolation=cv2.INTER_CUBIC)\n",
    "M = cv2.getRotationMatrix2D((cx, cy), 30, 1.0)\narr = cv2.warpAffine(arr, M, (w, h))\n",
    "arr = cv2.warpPerspective(arr, H, (w, h))\n",
    "arr = cv2.rotate(arr, cv2.ROTATE_90_CLOCKWISE)\n",
    "arr = cv2.flip(arr, 1)\n",
    "arr = np.fliplr(arr)\n",
    "arr = np.rot90(arr)\n",
    "gray = cv2.cvtColor(arr, cv2.COLOR_BGR2GRAY)\n",
    "_, bw = cv2.threshold(gray, 127, 255, cv2.THRESH_BINARY)\n",
    "edges = cv2.Canny(gray, 50, 150)\n",
    "blur = cv2.GaussianBlur(arr, (5, 5), 0)\n",
    "clahe = cv2.createCLAHE(clipLimit=2.0)\nout = clahe.apply(gray)\n",
    "arr = cv2.dilate(arr, kernel)\n",
    "cv2.rectangle(arr, (1, 1), (20, 20), (0, 255, 0), 2)\n",
    "sub = arr[10:200, 30:300]\n",
    "small = img.copy()\nsmall.thumbnail((128, 128))\n",
    "print(img.size)\n",
    "ax.text(0.5, 0.5, 'x')\n",
    "from cv2 import resize\narr = resize(arr, (10, 10))\n",
    "q = collections.deque([1, 2])\nq.rotate(1)\n",
    "img = (img).crop(box)\n",
]
SAVES = [
    "img.save('transformed_image_1.png')\n",
    "img.save(os.path.join(os.environ['PROCESSED_IMAGE_SAVE_PATH'], 'transformed_image_2.png'))\n",
    "img.save('/mnt/data/zoom.png')\n",
    "out_path = os.path.join(out_dir, 'transformed_image_3.png')\nimg.save(out_path)\n",
    "cv2.imwrite('transformed_image_4.png', arr)\n",
    "cv2.imwrite(os.path.join(d, 'edges.jpg'), edges)\n",
    "img.save(Path(out) / 'transformed_image_5.png')\n",
    "img.save(f'{out}/transformed_image_{k}.png')\n",
    "img.save(f'transformed_image_{n + 1}.png')\n",
    "img.save(buf, format='PNG')\n",
    "crop.save('detail.JPG')\n",
    "name = 'result.png'\nimg.save(name)\n",
    "img.save(fp='transformed_image_6.png')\n",
]
LOOPS = [
    ("for i in range(3):\n", "    "),
    ("for box in [(0, 0, 10, 10), (5, 5, 20, 20)]:\n", "    "),
    ("for i, b in enumerate(boxes):\n", "    "),
    ("for i in range(0):\n", "    "),
    ("for i in range(60):\n", "    "),
    ("for k, v in {'a': 1, 'b': 2}.items():\n", "    "),
    ("for angle in (90, 180, 270):\n", "    "),
    ("for x in range(10, 0, -3):\n", "    "),
    ("while n < 3:\n", "    "),
    ("if img.width > 500:\n", "    "),
    ("try:\n", "    "),
    ("def helper(img):\n", "    "),
    ("with open(p) as f:\n", "    "),
]

HAND = [
    "img = Image.open(p)\nimg = img.crop((0, 0, 10, 10))\nimg = img.resize((100, 100))\nimg.save('transformed_image_1.png')\n",
    "img = Image.open(p)\nimg = img.resize((100, 100))\nimg = img.crop((0, 0, 10, 10))\nimg.save('transformed_image_1.png')\n",
    "img = Image.open(p).crop((1, 2, 3, 4)).resize((8, 8))\n",
    "boxes = [(0, 0, 5, 5), (1, 1, 6, 6), (2, 2, 7, 7)]\nfor b in boxes:\n    c = img.crop(b)\n",
    "i = 1\nfor b in [(0, 0, 5, 5), (1, 1, 6, 6)]:\n    c = img.crop(b)\n    c.save(f'transformed_image_{i}.png')\n    i += 1\n",
    "i = 3\nfor b in range(4):\n    c = img.rotate(b * 90)\n    c.save(f'transformed_image_{i}.png')\n    i -= 2\n",
    "for a in range(2):\n    for b in range(3):\n        img.crop((a, b, a + 1, b + 1)).save(f'transformed_image_{a}{b}.png')\n",
    "for a in range(8):\n    for b in range(8):\n        img.rotate(a)\n",
    "for x in [img.crop((0, 0, 1, 1))]:\n    pass\n",
    "[img.crop(b) for b in [(0, 0, 1, 1), (1, 1, 2, 2)]]\n",
    "def f(im):\n    return im.crop((0, 0, 5, 5))\nimg = f(img).resize((9, 9))\nimg.save('transformed_image_1.png')\n",
    "img.save('a.png'); img = img.rotate(5); img.save('b.png')\n",
    "img = img.rotate(5)\nimg.save('transformed_image_7.png')\nimg = img.crop((0, 0, 4, 4))\nimg2 = img.resize((2, 2))\n",
    "this is not python\n",
    "img = img.crop((0, 0, 1, 1)\n",
    "",
    "# just a comment\n",
    "x = 'é'; img = img.crop((0, 0, 1, 1)); img.save('transformed_image_1.png')\n",
    "s = 'é'; img = img.rotate(9); t = img.crop((1, 1, 2, 2))\nimg.save('transformed_image_2.png')\n",
    "async def g():\n    async for x in src:\n        img.crop(x)\n",
    "n = range(5)\nfor i in n:\n    img.rotate(i)\n",
    "d = {'a': 1}\nfor k in d.keys():\n    img.rotate(1)\n",
    "for i in range(2):\n    img.save(f'transformed_image_{i}.png')\n",
    "i = -3\nfor b in range(2):\n    img.save(f'transformed_image_{i}.png')\n    i += 1\n",
    "img.save('transformed_image_2.png')\nimg.save('transformed_image_1.png')\nimg.save('other.tif')\nimg.save('x.gif')\n",
    "p = 'transformed_image_9.png'\nq = p\nimg.crop((0, 0, 2, 2)).save(q)\n",
    "cv2.imwrite(f'/tmp/transformed_image_{k}.png', img)\n",
    "opencv_img.crop((0, 0, 1, 1))\ncv2x.rotate(1)\nimg.transpose(method=Image.FLIP_LEFT_RIGHT)\n",
    "img.point(lambda v: v)\ndraw.point((1, 1))\n",
    "img = img.rotate(30)\nfor i in range(3):\n    img = img.crop((i, i, 10, 10))\nimg = img.resize((5, 5))\n",
]


def random_block(rng: random.Random) -> str:
    code = rng.choice(HEAD) + rng.choice(OPEN)
    for _ in range(rng.randint(1, 6)):
        roll = rng.random()
        if roll < 0.25:
            header, indent = rng.choice(LOOPS)
            body = rng.choice(FRAGMENTS) + (rng.choice(SAVES) if rng.random() < 0.4 else "")
            if header.startswith("try"):
                code += (
                    header
                    + "".join(indent + line + "\n" for line in body.splitlines())
                    + "except Exception:\n    pass\n"
                )
            else:
                code += header + "".join(indent + line + "\n" for line in body.splitlines())
        elif roll < 0.45:
            code += rng.choice(SAVES)
        else:
            code += rng.choice(FRAGMENTS)
    if rng.random() < 0.5:
        code += rng.choice(SAVES)
    return code


def load_oracle(root: Path) -> Any:
    spec = importlib.util.spec_from_file_location("official_ast_ops", root / "ast_ops.py")
    if spec is None or spec.loader is None:
        sys.exit(f"no ast_ops.py under {root}: clone github:ChoS3nE11ven/Agentic-MME there first")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def expected(oracle: Any, code: str) -> dict[str, Any]:
    ops, saves = oracle.infer_ops_and_saves(code)
    events = oracle.infer_tool_events(code)
    return {
        "operations": [
            {
                "op": e["tool_name"],
                "line": o.lineno,
                "col": o.col,
                "save": e["arguments"]["save"],
                "loop_count": o.detail.get("loop_count"),
            }
            for o, e in zip(ops, events, strict=True)
        ],
        "saves": [
            {
                "image_index": s.image_index,
                "line": s.lineno,
                "col": s.col,
                "filename": s.filename,
                "op_guess": s.op_guess,
                "standard_name": s.is_standard_name,
            }
            for s in saves
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", type=Path, required=True, help="a checkout of ChoS3nE11ven/Agentic-MME")
    parser.add_argument("--random", type=int, default=220, help="how many random blocks besides the hand-picked ones")
    args = parser.parse_args()
    oracle = load_oracle(args.oracle)
    rng = random.Random(SEED)
    blocks = HAND + [random_block(rng) for _ in range(args.random)]
    cases = [{"code": code, **expected(oracle, code)} for code in blocks]
    OUT.write_text(json.dumps({"seed": SEED, "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()
