import numpy as np
import cv2

a = np.zeros((64, 64), dtype=np.uint8)
try:
    b = cv2.resize(a, (0, 0))
except cv2.error as exc:
    print("resize failed:", type(exc).__name__)
c = cv2.flip(a, 1)
print(c.shape)
