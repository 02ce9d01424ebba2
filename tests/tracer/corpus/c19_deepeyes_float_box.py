from PIL import Image
import os
image_1 = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
width, height = image_1.size
left, top, right, bottom = width * 0.25, height * 0.25, width * 0.75, height * 0.75
cropped = image_1.crop((left, top, right, bottom))
upscaled = cropped.resize((int(cropped.width * 1.5), int(cropped.height * 1.5)))
gray = upscaled.convert("L")
sharp = gray.filter(__import__("PIL.ImageFilter").ImageFilter.SHARPEN)
print(sharp.size)
