import os
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from PIL import Image

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
crop = img.crop((200, 200, 600, 500))
fig, ax = plt.subplots(1, 2)
ax[0].imshow(img)
ax[1].imshow(crop)
plt.savefig(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
plt.close(fig)
print("saved")
