import matplotlib.pyplot as plt

# Coordinates determined by
# visual estimation:
# (left, upper, right, lower)
# The board is in the middle right
# by the wall,
# so let's crop generously
crop_box = (1700, 1700, 2100, 2050)
board_crop = image_clue_0.crop(crop_box)

plt.imshow(board_crop)
plt.axis('off')
plt.show()
# %%
# Adjust crop box to focus on the board near the wall
crop_box = (2600, 1200, 3050, 1600)
board_crop = image_clue_0.crop(crop_box)

plt.imshow(board_crop)
plt.axis('off')
plt.show()
# %%
crop_box = (1900, 1400, 2200, 1700)
board_crop = image_clue_0.crop(crop_box)

plt.imshow(board_crop)
plt.axis('off')
plt.show()
