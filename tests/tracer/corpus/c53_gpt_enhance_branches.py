import os
import numpy as np
from PIL import Image, ImageEnhance, ImageOps, ImageFilter

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("RGB")
arr = np.array(img)
brightness = arr.mean()
print("mean brightness", round(float(brightness), 1))
# %%
if brightness < 60:
    img2 = ImageEnhance.Brightness(img).enhance(2.5)
elif brightness > 200:
    img2 = ImageEnhance.Brightness(img).enhance(0.6)
else:
    img2 = ImageEnhance.Contrast(img).enhance(1.8)
img2 = img2.filter(ImageFilter.SHARPEN)
img2.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
# %%
gray = ImageOps.grayscale(img2)
eq = ImageOps.equalize(gray)
inv = ImageOps.invert(eq) if np.asarray(eq).mean() > 250 else eq
inv.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_2.png"))
# %%
for factor in []:
    img2 = ImageEnhance.Sharpness(img2).enhance(factor)
mirrored = ImageOps.mirror(img2)
print(mirrored.size)
