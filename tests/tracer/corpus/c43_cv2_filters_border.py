import cv2
import numpy as np
import os

src = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"], cv2.IMREAD_COLOR)
gray = cv2.cvtColor(src, cv2.COLOR_BGR2GRAY)
med = cv2.medianBlur(gray, 5)
bil = cv2.bilateralFilter(src, 9, 75, 75)
box = cv2.blur(gray, (7, 7))
gx = cv2.Sobel(gray, cv2.CV_64F, 1, 0, ksize=3)
lap = cv2.Laplacian(gray, cv2.CV_64F)
eq = cv2.equalizeHist(gray)
stretched = cv2.normalize(gray, None, 0, 255, cv2.NORM_MINMAX)
padded = cv2.copyMakeBorder(src, 20, 20, 40, 40, cv2.BORDER_CONSTANT, value=(0, 0, 0))
inner = padded[20:820, 40:1040]
small = cv2.pyrDown(src)
big = cv2.pyrUp(small)
print(med.shape, bil.shape, box.shape, gx.dtype, lap.dtype, eq.shape, stretched.max(), inner.shape, big.shape)
