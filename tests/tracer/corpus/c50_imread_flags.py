import os
import cv2

path = os.environ["ORIGINAL_IMAGE_PATH"]
half = cv2.imread(path, cv2.IMREAD_REDUCED_COLOR_2)
quarter_gray = cv2.imread(path, cv2.IMREAD_REDUCED_GRAYSCALE_4)
full = cv2.imread(path, cv2.IMREAD_COLOR)
print(half.shape, quarter_gray.shape, full.shape)
# %%
gray = cv2.imread(path, flags=cv2.IMREAD_GRAYSCALE)
tile = gray[100:300, 200:600]
cv2.imwrite(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"), tile)
