import os
import cv2
import numpy as np

def to_px(box, shape):
    """Normalized 0-1000 box -> pixel bounds."""
    h, w = shape[:2]
    return [round(box[0] * w / 1000), round(box[1] * h / 1000), round(box[2] * w / 1000), round(box[3] * h / 1000)]

def zoom_in(arr, box, scale=2.0):
    x0, y0, x1, y1 = to_px(box, arr.shape)
    region = arr[y0:y1, x0:x1]
    return cv2.resize(region, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)

def save_step(arr, n):
    path = os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], f"transformed_image_{n}.png")
    cv2.imwrite(path, arr)
    return path
# %%
frame = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"])
first = zoom_in(frame, [100, 100, 400, 350])
save_step(first, 1)
print(first.shape)
# %%
second = zoom_in(first, [500, 0, 1000, 500], scale=1.5)
save_step(second, 2)
print(second.shape)
