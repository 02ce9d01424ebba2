import os
from PIL import Image

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
left = img.crop((0, 0, 500, 800))
left.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
right = img.crop((500, 0, 1000, 800))
print(undefined_name)
right.rotate(90).save("never.png")
