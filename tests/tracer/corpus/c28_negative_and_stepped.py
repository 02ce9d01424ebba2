import numpy as np, os
from PIL import Image
a = np.array(Image.open(os.environ["ORIGINAL_IMAGE_PATH"]))
up = a[::-1]
part = a[400:100:-1, 100:300]
thin = a[100:500:2, 0:1000:4]
print(up.shape, part.shape, thin.shape)
