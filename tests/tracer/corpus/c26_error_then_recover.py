import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
img.crop((0, 0, 100)).save("bad.png")
# %%
fixed = img.crop((0, 0, 100, 100))
print(fixed.size)
