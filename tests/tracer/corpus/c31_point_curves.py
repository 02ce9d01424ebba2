import os
from PIL import Image
g = Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("L")
neg = g.point(lambda v: 255 - v)
gamma = g.point(lambda v: int(255 * (v / 255) ** 0.5))
bw = g.convert("1")
print(neg.mode, gamma.mode, bw.mode)
