import cv2
import os
import numpy as np

image_path = os.environ["ORIGINAL_IMAGE_PATH"]
img = cv2.imread(image_path)
gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
blurred = cv2.GaussianBlur(gray, (5, 5), 0)
edges = cv2.Canny(blurred, 50, 150)
_, binary = cv2.threshold(gray, 127, 255, cv2.THRESH_BINARY)
x, y, bw, bh = 100, 200, 400, 300
roi = img[y:y + bh, x:x + bw]
roi = cv2.resize(roi, None, fx=2, fy=2, interpolation=cv2.INTER_CUBIC)
cv2.imwrite(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"), roi)
print(edges.shape, binary.max(), roi.shape)
