import os
import numpy as np
from PIL import Image

a = np.asarray(Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("RGB"))
top = a[: a.shape[0] // 2]
left = top[:, : top.shape[1] // 2]
print(left.shape)
# %%
flipped = left[:, ::-1]
small = flipped[::2, ::2]
gray = small.mean(axis=2)
print(gray.shape)
# %%
norm = (gray - gray.min()) / (gray.max() - gray.min() + 1e-6)
mask = norm > 0.5
neg = 255 - small
out = Image.fromarray(neg)
out.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
# %%
rot = np.rot90(small, k=1)
stacked = np.hstack([small, small])
print(rot.shape, stacked.shape, mask.dtype)
