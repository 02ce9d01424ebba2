import importlib
import PIL.ImageOps
from PIL.ImageOps import *

img = PIL.Image.open(__import__("os").environ["ORIGINAL_IMAGE_PATH"])
m = mirror(img)
# %%
importlib.reload(PIL.ImageOps)
from PIL.ImageOps import flip as vflip
v = vflip(m)
e = PIL.ImageOps.equalize(v)
print(v.size, e.mode)
