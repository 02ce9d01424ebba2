import os
from PIL import Image, ImageChops, ImageFilter, ImageOps

base = Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("L")
soft = base.filter(ImageFilter.BoxBlur(4))
clean = base.filter(ImageFilter.ModeFilter(size=3))
thin = base.filter(ImageFilter.MinFilter(3))
crisp = base.filter(ImageFilter.Kernel((3, 3), [-1, -1, -1, -1, 9, -1, -1, -1, -1]))
outline = base.filter(ImageFilter.CONTOUR)
edged = base.filter(ImageFilter.EDGE_ENHANCE)
neg = ImageChops.invert(base)
diff = ImageChops.difference(base, soft)
poster = ImageOps.posterize(base, 2)
mixed = Image.blend(base, neg, 0.3)
print(soft.size, clean.mode, thin.mode, crisp.mode, outline.mode, edged.mode, diff.mode, poster.mode, mixed.mode)
