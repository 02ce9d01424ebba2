import os
import numpy as np
from PIL import Image

arr = np.asarray(Image.open(os.environ["ORIGINAL_IMAGE_PATH"]).convert("L"))
rows, cols = 2, 4
th, tw = arr.shape[0] // rows, arr.shape[1] // cols
scores = {}
for r in range(rows):
    for c in range(cols):
        tile = arr[r * th:(r + 1) * th, c * tw:(c + 1) * tw]
        scores[(r, c)] = float(tile.mean())
best = max(scores, key=scores.get)
print(best, round(scores[best], 1))
# %%
r, c = best
zoom = Image.fromarray(arr[r * th:(r + 1) * th, c * tw:(c + 1) * tw]).resize((tw * 3, th * 3), Image.BICUBIC)
zoom.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
print(zoom.size)
