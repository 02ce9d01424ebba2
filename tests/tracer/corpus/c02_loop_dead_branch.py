import os
from PIL import Image, ImageOps

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("RGB")
tiles = []
for i in range(3):
    x0 = i * 300
    tiles.append(img.crop((x0, 0, x0 + 200, 400)))
if len(tiles) > 5:
    tiles = [ImageOps.invert(t) for t in tiles]
else:
    tiles[1] = ImageOps.grayscale(tiles[1])
print(len(tiles), tiles[1].mode)
