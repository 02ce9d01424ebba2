import os
import cv2

img = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"])
mode = "night"
if mode == "day":
    img = cv2.convertScaleAbs(img, alpha=0.8, beta=0)
elif mode == "night":
    img = cv2.convertScaleAbs(img, alpha=1.0, beta=40)
else:
    img = cv2.GaussianBlur(img, (3, 3), 0)
scale = 1.0
while True:
    scale *= 0.5
    small = cv2.resize(img, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    if small.shape[1] <= 300:
        break
try:
    gray = cv2.cvtColor(small, cv2.COLOR_GRAY2BGR)
except cv2.error:
    gray = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
else:
    gray = cv2.flip(gray, 1)
finally:
    print("shape", small.shape)
print(gray.shape)
