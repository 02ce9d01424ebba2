import os
from PIL import Image, ImageOps
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
half = img.resize((img.width // 2, img.height // 2))
fit = ImageOps.contain(img, (300, 300))
red = img.reduce(4)
# %%
region = half.resize((200, 200), box=(100, 100, 300, 300))
print(region.size, fit.size, red.size)
