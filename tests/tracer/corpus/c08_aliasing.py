import os
from PIL import Image
from PIL import ImageOps as ops

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
cut = img.crop
piece = cut((10, 20, 110, 220))
spin = getattr(piece, "rotate")
turned = spin(-90, expand=True)
flipped = Image.Image.transpose(turned, Image.Transpose.FLIP_LEFT_RIGHT)
g = ops.grayscale(flipped)
detail = g.crop((0, 0, 100, 50))
print(g.size, detail.size)
