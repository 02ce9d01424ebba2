import os
from PIL import Image

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
upright = img.transpose(Image.Transpose.ROTATE_270)
print(upright.size)
label = upright.crop((100, 50, 300, 250))
tilted = getattr(img, "rotate")(30)
patch = tilted.crop((500, 400, 700, 500))
print(label.size, patch.size)
# %%
import numpy as np, cv2
arr = np.array(img)
ccw = cv2.rotate(arr, cv2.ROTATE_90_COUNTERCLOCKWISE)
strip = ccw[0:250, :]
upside = cv2.rotate(arr, cv2.ROTATE_180)
corner = upside[:100, :200]
print(ccw.shape, strip.shape, corner.shape)
