import os
import numpy as np
from PIL import Image, ImageDraw
from scipy import ndimage

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("RGB")
arr = np.array(img)
smooth = ndimage.gaussian_filter(arr, sigma=2)
print(smooth.shape)
# %%
med = ndimage.median_filter(arr[:, :, 0], size=3)
turned = ndimage.rotate(arr, 30, reshape=False)
print(med.shape, turned.shape)
# %%
canvas = img.copy()
draw = ImageDraw.Draw(canvas)
for box in [(600, 100, 900, 300), (50, 50, 150, 150)]:
    draw.rectangle(box, outline=(0, 255, 0), width=3)
canvas.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
# %%
if canvas.mode != "RGB":
    canvas = canvas.convert("RGB")
zoom = canvas.crop((600, 100, 900, 300)).resize((600, 400))
zoom.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_2.png"))
