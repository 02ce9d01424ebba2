import os
from PIL import Image, ImageDraw

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("RGB")
canvas = img.copy()
draw = ImageDraw.Draw(canvas)
draw.rectangle((100, 100, 300, 250), outline="red", width=3)
canvas.thumbnail((500, 500))
detail = canvas.crop((0, 0, 250, 200))
print(canvas.size, detail.size)
