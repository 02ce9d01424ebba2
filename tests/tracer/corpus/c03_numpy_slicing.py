import os
import numpy as np
from PIL import Image

arr = np.array(Image.open(os.environ["ORIGINAL_IMAGE_PATH"]))
h, w = arr.shape[:2]
top = arr[: h // 4, :]
corner = arr[-200:, -300:]
mid = arr[h // 4 : 3 * h // 4, w // 4 : 3 * w // 4]
strided = arr[::2, ::2]
print(top.shape, corner.shape, mid.shape, strided.shape)
