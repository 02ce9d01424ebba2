import os
import numpy as np
from PIL import Image

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("L")
a = np.asarray(img, dtype=np.float64) / 255.0
h, w = a.shape
u = np.linspace(-1, 1, w)
v = np.linspace(-1, 1, h)
U, V = np.meshgrid(u, v)
D = np.sqrt(U ** 2 + V ** 2)
butterworth = 1 / (1 + (D / 0.1) ** 4)
highpass = 1 - butterworth
spectrum = np.fft.fftshift(np.fft.fft2(a))
detail = np.abs(np.fft.ifft2(np.fft.ifftshift(spectrum * highpass)))
print(detail.shape)
# %%
ring = (D > 0.2) & (D < 0.5)
dark = 1.0 - a
bright = a > 0.5
print(ring.sum() > 0, dark.shape, bright.dtype)
