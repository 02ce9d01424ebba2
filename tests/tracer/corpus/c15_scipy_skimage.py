import numpy as np
from scipy import ndimage
from skimage import filters, exposure, transform, color, feature
from PIL import Image
import os

rgb = np.asarray(Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("RGB"))
g = color.rgb2gray(rgb)
smooth = ndimage.gaussian_filter(g, sigma=2)
med = ndimage.median_filter(g, size=3)
rot = ndimage.rotate(g, 45, reshape=False)
zoomed = ndimage.zoom(g, 0.5)
edges = feature.canny(g, sigma=1.5)
sob = filters.sobel(g)
eq = exposure.equalize_adapthist(g)
gam = exposure.adjust_gamma(g, 0.5)
small = transform.resize(g, (400, 500))
mask = g > filters.threshold_otsu(g)
print(smooth.shape, rot.shape, zoomed.shape, edges.dtype, small.shape, mask.dtype)
