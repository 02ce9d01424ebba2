import cv2, os
import numpy as np
from PIL import Image

gray = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"], cv2.IMREAD_GRAYSCALE)
t, otsu = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
adaptive = cv2.adaptiveThreshold(gray, 255, cv2.ADAPTIVE_THRESH_GAUSSIAN_C, cv2.THRESH_BINARY, 11, 2)
hsv = cv2.cvtColor(cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"]), cv2.COLOR_BGR2HSV)
mask = cv2.inRange(hsv, np.array([0, 50, 50]), np.array([10, 255, 255]))
mask2 = gray > 200
pil_bw = Image.fromarray(gray).point(lambda p: 255 if p > 100 else 0)
inv = 255 - gray
inv2 = cv2.bitwise_not(gray)
print(otsu.dtype, adaptive.shape, int(mask.max()), mask2.dtype, pil_bw.mode, inv.dtype, inv2.shape)
