import cv2
import os
image_path = os.environ["ORIGINAL_IMAGE_PATH"]
image = cv2.imread(image_path)
h, w = image.shape[:2]
x1, y1, x2, y2 = 850, 700, 1200, 900
x1, y1 = max(0, x1), max(0, y1)
x2, y2 = min(w, x2), min(h, y2)
cropped = image[y1:y2, x1:x2]
if cropped.shape[0] < 64 or cropped.shape[1] < 64:
    cropped = cv2.resize(cropped, (max(64, cropped.shape[1]), max(64, cropped.shape[0])))
out = cv2.resize(cropped, None, fx=3, fy=3)
cv2.imwrite(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"), out)
print(out.shape)
