import os
import numpy as np
from PIL import Image
from skimage import transform, exposure, filters, restoration, util
from scipy import ndimage as ndi

g = np.asarray(Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("L"), dtype=np.float64) / 255.0
r = transform.rotate(g, -15, resize=True)
s = transform.rescale(g, 0.25, anti_aliasing=True)
eq = exposure.equalize_hist(g)
st = exposure.rescale_intensity(g, in_range=(0.2, 0.8))
us = filters.unsharp_mask(g, radius=3, amount=1.5)
tv = restoration.denoise_tv_chambolle(s, weight=0.1)
neg = util.invert(g)
flat = ndi.uniform_filter(g, size=9)
big = ndi.zoom(s, 2, order=1)
turned = ndi.rotate(g, 90)
print(r.shape, s.shape, eq.shape, st.max(), us.shape, tv.shape, neg.shape, flat.shape, big.shape, turned.shape)
