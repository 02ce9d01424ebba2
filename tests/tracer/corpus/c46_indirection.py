import os
import functools
from PIL import Image, ImageOps

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
c = img.crop
tools = {"zoom": img.resize, "turn": functools.partial(img.rotate, expand=True)}
head = c((250, 0, 750, 200))
wide = tools["zoom"]((500, 400))
sideways = tools["turn"](90)
mirrors = list(map(ImageOps.mirror, [head, sideways]))
op_name = "trans" + "pose"
upside = getattr(head, op_name)(Image.Transpose.ROTATE_180)
print(head.size, wide.size, sideways.size, [m.size for m in mirrors], upside.size)
# %%
tip = upside.crop((0, 0, 100, 50))
print(tip.size)
