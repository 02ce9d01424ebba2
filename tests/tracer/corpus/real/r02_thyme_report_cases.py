import os
import random
from PIL import Image

# Load the image
image_path = "hr_bench_4k/179.jpg"
image = Image.open(image_path)

# Define the cropping coordinates (x1, y1, x2, y2)
# These coordinates are estimated based on the sign's position in the image
x1, y1, x2, y2 = 1550, 2650, 1850, 2750

# Crop the image
cropped_image = image.crop((x1, y1, x2, y2))

# Apply a zoom factor (optional, depending on the required level of detail)
zoom_factor = 2
zoomed_image = cropped_image.resize((cropped_image.width * zoom_factor, cropped_image.height * zoom_factor))

# Save the processed image with a random suffix
random_suffix = random.randint(1000, 9999)
processed_filename = f"179_{random_suffix}.jpg"
processed_path = "/mnt/data/temp_processed_images/" + processed_filename
zoomed_image.save(processed_path)

# Print the path of the saved cropped image
print(processed_path)
# %%
import cv2
import os
import random

# Load the image
image_path = "hr_bench_4k/224.jpg"
image = cv2.imread(image_path)

# Define the cropping coordinates (x1, y1, x2, y2)
x1, y1, x2, y2 = 1750, 1950, 1850, 2600

# Crop the image
cropped_image = image[y1:y2, x1:x2]

# Apply zoom (resize the cropped image to enhance details)
zoom_factor = 2
zoomed_image = cv2.resize(cropped_image, None, fx=zoom_factor, fy=zoom_factor, interpolation=cv2.INTER_CUBIC)

# Save the processed image with a random suffix
random_suffix = random.randint(1000, 9999)
processed_filename = f"224_{random_suffix}.jpg"
processed_path = "/mnt/data/temp_processed_images/" + processed_filename
cv2.imwrite(processed_path, zoomed_image)

# Print the path of the saved cropped image
print(processed_path)
# %%
import os
import random
from PIL import Image

# Load the image
image_path = "MME-RealWorld/10993.jpg"
image = Image.open(image_path)

# Define the coordinates for cropping (based on the inferred region)
x1, y1, x2, y2 = 0, 1000, 1000, 1500 # Adjust these coordinates based on the image content

# Crop the image
cropped_image = image.crop((x1, y1, x2, y2))

# Apply zoom (resizing the cropped image for better visibility)
zoom_factor = 2
zoomed_image = cropped_image.resize((cropped_image.width * zoom_factor, cropped_image.height * zoom_factor))

# Save the processed image with a random suffix
random_suffix = random.randint(1000, 9999)
processed_filename = f"10993_{random_suffix}.jpg"
processed_path = "/mnt/data/temp_processed_images/" + processed_filename
zoomed_image.save(processed_path)

# Print the path of the saved cropped image
print(processed_path)
# %%
import cv2
import numpy as np
import os

# Load the image
image_path = "OCR_55251.png"
image = cv2.imread(image_path)

# Define the rotation angle (in degrees)
angle = 172 # The angle is derived from the filename suffix

# Get the image dimensions
height, width = image.shape[:2]
# Calculate the rotation matrix
rotation_matrix = cv2.getRotationMatrix2D((width / 2, height / 2), angle, 1)
# Perform the rotation
rotated_image = cv2.warpAffine(image, rotation_matrix, (width, height))
# Save the rotated image with a random suffix
random_suffix = np.random.randint(100000, 999999)
processed_path = f"/mnt/data/temp_processed_images/OCR_55251_{random_suffix}.png"
cv2.imwrite(processed_path, rotated_image)
# Print the saved image path
print(processed_path)
# %%
import os
import random
from PIL import Image, ImageEnhance

# Load the image
image_path = "OCRBench/150.jpg"
img = Image.open(image_path)

# Enhance the contrast
enhancer = ImageEnhance.Contrast(img)
enhanced_img = enhancer.enhance(2.0) # Increase contrast by a factor of 2

# Save the enhanced image with a random suffix
random_suffix = random.randint(1000, 9999)
filename, ext = os.path.splitext(os.path.basename(image_path))
processed_filename = f"{filename}_{random_suffix}{ext}"
processed_path = os.path.join("/mnt/data/temp_processed_images/", processed_filename)
enhanced_img.save(processed_path)

# Print the path of the saved enhanced image
print(processed_path)
# %%
import math
# Calculate y = log2(15/11)
y_val = math.log2(15/11)
print(y_val)
# %%
import math
# Calculate x = 2.75 / (3.00**0.45)
x_val = 2.75 / (3.00**0.45)
print(x_val)
# %%
# Calculate the value of 'a'
a_value = 0.5 * 9
print(a_value)
# %%
import os
import random
from PIL import Image

# Load the image
image_path = "hr_bench_4k/243.jpg"
img = Image.open(image_path)

# Define the cropping coordinates (x1, y1, x2, y2)
# These coordinates are estimated based on the position of the train's front panel
x1, y1, x2, y2 = 1600, 1900, 1900, 2200

# Crop the image
cropped_img = img.crop((x1, y1, x2, y2))

# Save the cropped image with a random suffix
random_suffix = random.randint(1000, 9999)
filename, ext = os.path.splitext(os.path.basename(image_path))
processed_filename = f"{filename}_{random_suffix}{ext}"
processed_path = os.path.join("/mnt/data/temp_processed_images/", processed_filename)
cropped_img.save(processed_path)

# Print the path of the saved cropped image
print(processed_path)
