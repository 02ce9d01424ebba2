import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
globals()["__" + "pb" + "x__"] = None
# %%
small = img.crop((0, 0, 10, 10))
print(small.size)
