from PIL import Image
import os

image = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
bbox = [612, 98, 905, 310]
zoomed = image.crop(bbox)
zoomed.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
# %%
bbox2 = [40, 30, 200, 150]
zoomed2 = zoomed.crop(bbox2)
zoomed2 = zoomed2.resize((zoomed2.width * 4, zoomed2.height * 4))
zoomed2.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_2.png"))
# %%
while zoomed2.width > 2000:
    zoomed2 = zoomed2.resize((zoomed2.width // 2, zoomed2.height // 2))
final = zoomed2.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
final.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_3.png"))
# %%
def unused_helper(x):
    return x.rotate(90)

print(final.size)
