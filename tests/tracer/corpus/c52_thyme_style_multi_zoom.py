import os
from PIL import Image

image_path = os.environ["ORIGINAL_IMAGE_PATH"]
img = Image.open(image_path)
w, h = img.size
print(f"size: {w}x{h}")
# %%
# zoom into the upper-right quadrant where the sign should be
crop_box = (int(w * 0.5), 0, w, int(h * 0.5))
region = img.crop(crop_box)
region = region.resize((region.width * 2, region.height * 2), Image.LANCZOS)
out_dir = os.environ["PROCESSED_IMAGE_SAVE_PATH"]
region.save(os.path.join(out_dir, "transformed_image_1.png"))
print(region.size)
# %%
boxes = {"left": (0, 0, w // 3, h), "middle": (w // 3, 0, 2 * w // 3, h), "right": (2 * w // 3, 0, w, h)}
for i, (name, box) in enumerate(boxes.items(), start=2):
    part = img.crop(box)
    if part.width < 10:
        part = part.resize((10, part.height))
    part.save(os.path.join(out_dir, f"transformed_image_{i}.png"))
# %%
try:
    detail = region.crop((0, 0, 5000, 5000)).rotate(15, expand=True)
    detail.save(os.path.join(out_dir, "transformed_image_5.png"))
except Exception as e:
    print("failed", e)
    detail = region
print(detail.size)
