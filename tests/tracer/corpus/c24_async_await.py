import asyncio
import os
from PIL import Image

async def load_and_flip(path):
    await asyncio.sleep(0)
    return Image.open(path).transpose(Image.Transpose.FLIP_TOP_BOTTOM)

flipped = await load_and_flip(os.environ["ORIGINAL_IMAGE_PATH"])
print(flipped.size)
