import os
import numpy as np
from PIL import Image

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
a = img.crop(box=(100, 100, 500, 300))
b = a.resize(size=(200, 100))
c = Image.Image.rotate(img, angle=-90, expand=True)
d = img.rotate(90)
e = d.crop((500, 400, 700, 450))
arr = np.asarray(img)
band = arr[100:300][:, 200:400]
inner = arr[-300:-100, 50:-50]
print(a.size, b.size, c.size, d.size, e.size, band.shape, inner.shape)
# %%
import cv2
M = cv2.getRotationMatrix2D((500, 400), 90, 1.0)
turned = cv2.warpAffine(arr, M, (1000, 800))
label = turned[400:450, 500:700]
T = np.float32([[1, 0, 100], [0, 1, 50]])
shifted = cv2.warpAffine(arr, T, (1000, 800))
piece = shifted[50:250, 100:400]
print(label.shape, piece.shape)
