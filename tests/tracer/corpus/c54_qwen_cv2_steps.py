import cv2
import os
import numpy as np

img = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"])
h, w = img.shape[:2]
roi = img[int(h * 0.1):int(h * 0.4), int(w * 0.55):int(w * 0.95)]
print(roi.shape)
# %%
roi_big = cv2.resize(roi, None, fx=3, fy=3, interpolation=cv2.INTER_CUBIC)
gray = cv2.cvtColor(roi_big, cv2.COLOR_BGR2GRAY)
_, binary = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
cv2.imwrite(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"), binary)
# %%
center = (w // 2, h // 2)
M = cv2.getRotationMatrix2D(center, 90, 1.0)
rotated = cv2.warpAffine(img, M, (w, h))
flipped = cv2.flip(rotated, 0)
cv2.imwrite(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_2.png"), flipped)
# %%
edges = cv2.Canny(gray, 50, 150)
print(edges.shape, undefined_threshold)
cv2.imwrite("edges.png", edges)
