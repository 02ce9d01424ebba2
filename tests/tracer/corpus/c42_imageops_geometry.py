import os
from PIL import Image, ImageOps

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
mirrored = ImageOps.mirror(img)
left = mirrored.crop((0, 0, 200, 800))
trimmed = ImageOps.crop(img, border=50)
bordered = ImageOps.expand(trimmed, border=10, fill="black")
square = ImageOps.pad(img, (600, 600), color=(0, 0, 0))
half = ImageOps.scale(img, 0.5)
diag = img.transpose(Image.Transpose.TRANSPOSE)
print(left.size, trimmed.size, bordered.size, square.size, half.size, diag.size)
# %%
both = ImageOps.flip(mirrored)
corner = Image.Image.crop(both, (0, 0, 100, 100))
print(corner.getpixel((0, 0)))
