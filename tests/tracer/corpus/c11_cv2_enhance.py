import cv2, os
import numpy as np

img = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"])
lab = cv2.cvtColor(img, cv2.COLOR_BGR2LAB)
l, a, b = cv2.split(lab)
clahe = cv2.createCLAHE(clipLimit=3.0, tileGridSize=(8, 8))
l2 = clahe.apply(l)
merged = cv2.merge((l2, a, b))
out = cv2.cvtColor(merged, cv2.COLOR_LAB2BGR)
bright = cv2.convertScaleAbs(out, alpha=1.3, beta=20)
den = cv2.fastNlMeansDenoisingColored(bright, None, 10, 10, 7, 21)
blur = cv2.GaussianBlur(den, (0, 0), 3)
sharp = cv2.addWeighted(den, 1.5, blur, -0.5, 0)
print(sharp.shape)
