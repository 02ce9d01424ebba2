import os
from PIL import Image

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
w, h = img.size
box = (int(0.6 * w), int(0.1 * h), int(0.9 * w), int(0.4 * h))
region = img.crop(box)
region = region.resize((region.width * 2, region.height * 2), Image.LANCZOS)
out = os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png")
region.save(out)
print(region.size)
