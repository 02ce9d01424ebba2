import os
from PIL import Image, ImageEnhance

def zoom(img, bbox, factor=2):
    """Crop a region given as fractions and upscale it."""
    w, h = img.size
    box = tuple(int(v) for v in (bbox[0] * w, bbox[1] * h, bbox[2] * w, bbox[3] * h))
    return img.crop(box).resize(((box[2] - box[0]) * factor, (box[3] - box[1]) * factor))

def save(img, n):
    img.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], f"transformed_image_{n}.png"))
    return n

print("helpers ready")
# %%
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
z = zoom(img, (0.1, 0.5, 0.3, 0.75))
save(z, 1)
# %%
bright = ImageEnhance.Brightness(z).enhance(1.4)
save(zoom(bright, (0.0, 0.0, 0.5, 0.5), factor=1), 2)
