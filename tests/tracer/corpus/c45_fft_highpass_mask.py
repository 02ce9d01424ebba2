import os
import numpy as np
from PIL import Image

gray = np.array(Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("L"), dtype=float)
F = np.fft.fftshift(np.fft.fft2(gray))
h, w = gray.shape
yy, xx = np.ogrid[:h, :w]
radius = 40
lowpass = (yy - h / 2) ** 2 + (xx - w / 2) ** 2 <= radius ** 2
F[lowpass] = 0
edges = np.abs(np.fft.ifft2(np.fft.ifftshift(F)))
edges = (255 * edges / edges.max()).astype(np.uint8)
Image.fromarray(edges).save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
print(edges.shape, edges.dtype)
# %%
yy, xx = np.mgrid[0:h, 0:w]
d2 = (yy - h / 2) ** 2 + (xx - w / 2) ** 2
highpass = 1 - np.exp(-d2 / (2 * 30.0 ** 2))
G = np.fft.fftshift(np.fft.fft2(gray)) * highpass
sharp_edges = np.real(np.fft.ifft2(np.fft.ifftshift(G)))
print(sharp_edges.shape)
