import os
from PIL import Image, ImageOps

src = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
out_dir = os.environ["PROCESSED_IMAGE_SAVE_PATH"]
regions = {"tl": (0, 0, 500, 400), "tr": (500, 0, 1000, 400), "bl": (0, 400, 500, 800)}
for n, (name, box) in enumerate(regions.items(), start=1):
    piece = src.crop(box)
    if name == "tr":
        piece = ImageOps.autocontrast(piece)
    piece.save(os.path.join(out_dir, f"transformed_image_{n}.png"))
print(sorted(os.listdir(out_dir)))
