import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
print(img.size)
# %%
top_half = img.crop((0, 0, img.width, img.height // 2))
print(top_half.size)
# %%
zoomed = top_half.crop((400, 100, 600, 300)).resize((400, 400))
zoomed.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_2.png"))
