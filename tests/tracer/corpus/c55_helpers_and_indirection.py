import os
from PIL import Image, ImageOps

def zoom_to(img, box, scale=2):
    part = img.crop(box)
    return part.resize((part.width * scale, part.height * scale))

def upright(img, angle):
    if angle:
        return img.rotate(angle, expand=True)
    return img

src = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
print(src.size)
# %%
z = zoom_to(src, (100, 100, 300, 250))
u = upright(z, 0)
u.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
# %%
ops = {"mirror": ImageOps.mirror, "flip": ImageOps.flip}
chosen = ops["mirror"](u)
turn = getattr(chosen, "rotate")
r = turn(180)
print(r.size)
# %%
pieces = list(map(lambda b: src.crop(b), [(0, 0, 50, 50), (50, 50, 100, 100)]))
print(len(pieces))
