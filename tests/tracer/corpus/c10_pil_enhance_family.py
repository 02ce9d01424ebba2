import os
from PIL import Image, ImageEnhance, ImageFilter, ImageOps

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("RGB")
img = ImageEnhance.Contrast(img).enhance(1.8)
img = ImageEnhance.Sharpness(img).enhance(2.0)
img = ImageEnhance.Brightness(img).enhance(0.7)
img = ImageEnhance.Color(img).enhance(0)
img = img.filter(ImageFilter.GaussianBlur(radius=3))
img = img.filter(ImageFilter.SHARPEN)
img = img.filter(ImageFilter.UnsharpMask(radius=2, percent=150, threshold=3))
img = img.filter(ImageFilter.MedianFilter(size=5))
img = img.filter(ImageFilter.FIND_EDGES)
img = ImageOps.autocontrast(img, cutoff=2)
img = ImageOps.equalize(img)
img = ImageOps.invert(img)
print(img.mode)
