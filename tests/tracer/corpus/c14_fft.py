import numpy as np
import cv2, os

gray = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"], 0).astype(np.float32)
f = np.fft.fft2(gray)
fshift = np.fft.fftshift(f)
rows, cols = gray.shape
crow, ccol = rows // 2, cols // 2
fshift[crow - 30:crow + 30, ccol - 30:ccol + 30] = 0
back = np.fft.ifft2(np.fft.ifftshift(fshift))
mag = np.abs(back)
print(mag.shape, round(float(mag.mean()), 3) >= 0)
