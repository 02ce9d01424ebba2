import os
import numpy as np
import cv2
from PIL import Image

pil = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
r1 = pil.rotate(15, expand=True, fillcolor="white")
r2 = pil.transpose(Image.ROTATE_90)
arr = np.asarray(pil)
r3 = np.rot90(arr)
r4 = np.rot90(arr, k=3)
r5 = cv2.rotate(arr, cv2.ROTATE_90_CLOCKWISE)
M = cv2.getRotationMatrix2D((500, 400), 30, 1.0)
r6 = cv2.warpAffine(arr, M, (1000, 800))
r7 = np.fliplr(arr)
r8 = cv2.flip(arr, 0)
r9 = np.flip(arr, axis=(0, 1))
print(r1.size, r2.size, r3.shape, r4.shape, r5.shape, r6.shape, r9.shape)
