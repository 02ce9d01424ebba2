from PIL import Image, ImageEnhance
import os

image_path = os.environ["ORIGINAL_IMAGE_PATH"]
image = Image.open(image_path)
width, height = image.size
crop_box = (width // 2, 0, width, height // 2)
cropped_image = image.crop(crop_box)
enhanced_image = ImageEnhance.Contrast(cropped_image).enhance(1.5)
enhanced_image.save(os.path.join(output_dir, "transformed_image_1.png"))
enhanced_image.rotate(90).save("unused.png")
print("done")
# %%
output_dir = os.environ["PROCESSED_IMAGE_SAVE_PATH"]
enhanced_image.save(os.path.join(output_dir, "transformed_image_1.png"))
print(enhanced_image.size)
