import cv2, os
bgr = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"])
rgb = bgr[:, :, ::-1]
red = rgb[..., 0]
no_alpha = rgb[:, :, :3]
patch = rgb[100:300, 200:500, ::-1]
print(rgb.shape, red.shape, no_alpha.shape, patch.shape)
