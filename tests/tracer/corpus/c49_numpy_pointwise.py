import numpy as np, os
from PIL import Image

rgb = np.array(Image.open(os.environ["ORIGINAL_IMAGE_PATH"]))
lum = rgb.mean(axis=2)
norm = lum / 255.0
dark = 1.0 - norm
bright_mask = norm >= 0.75
holes = ~bright_mask
upside = np.rot90(rgb, 2)
flipped = np.flipud(rgb)
piece = upside[0:200, 0:300]
stretched = np.clip((lum - 50) * 1.5, 0, 255).astype(np.uint8)
neg = np.invert(stretched)
print(dark.shape, int(holes.sum()) > 0, piece.shape, neg.dtype, flipped.shape)
