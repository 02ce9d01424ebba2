import os
import cv2

image = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"])
H, W = image.shape[:2]
# boxes come back in 0-1000 coordinates
boxes = {"sign": [600, 125, 900, 375], "corner": [0, 875, 150, 1000]}
saved = []
for label, (x1, y1, x2, y2) in boxes.items():
    left, top = int(x1 * W / 1000), int(y1 * H / 1000)
    right, bottom = int(x2 * W / 1000), int(y2 * H / 1000)
    patch = image[top:bottom, left:right]
    patch = cv2.resize(patch, (0, 0), fx=2.5, fy=2.5, interpolation=cv2.INTER_LANCZOS4)
    name = os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], f"transformed_image_{len(saved) + 1}.png")
    cv2.imwrite(name, patch)
    saved.append(name)
print(len(saved), patch.shape)
