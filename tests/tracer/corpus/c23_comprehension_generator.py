import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
boxes = [(i * 250, 0, i * 250 + 250, 200) for i in range(4)]
crops = [img.crop(b) for b in boxes if b[0] != 500]
def gen():
    for c in crops:
        yield c.rotate(180)
rotated = list(gen())
best = max(crops, key=lambda c: c.getbbox()[2] if c.getbbox() else 0)
print(len(rotated), (n := len(crops)))
