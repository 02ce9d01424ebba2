import os
from PIL import Image, ImageOps

with Image.open(os.environ["ORIGINAL_IMAGE_PATH"]) as im:
    im.load()
    detail = im.crop((600, 100, 900, 300))
zoomed = detail.resize((600, 400), Image.Resampling.NEAREST)
gray = ImageOps.grayscale(zoomed)
canvas = Image.new("RGB", (1200, 400), "white")
canvas.paste(zoomed, (0, 0))
canvas.paste(gray.convert("RGB"), (600, 0))
canvas.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
print(canvas.size, detail.getpixel((10, 10)))
