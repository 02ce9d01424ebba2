import os
from PIL import Image, ImageDraw, ImageFilter

save_dir = os.environ["PROCESSED_IMAGE_SAVE_PATH"]
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("RGB")
W, H = img.size
quads = [(0, 0, W // 2, H // 2), (W // 2, 0, W, H // 2), (0, H // 2, W // 2, H), (W // 2, H // 2, W, H)]
for i, q in enumerate(quads, 1):
    piece = img.crop(q).filter(ImageFilter.DETAIL)
    piece.save(f"{save_dir}/transformed_image_{i}.png")
overview = img.copy()
pen = ImageDraw.Draw(overview)
for q in quads:
    pen.rectangle(q, outline=(255, 255, 0), width=4)
overview.save(f"{save_dir}/transformed_image_{len(quads) + 1}.png")
print(sorted(os.listdir(save_dir)))
