import functools, os
from PIL import Image, ImageOps

def logged(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        result = fn(*args, **kwargs)
        print("ran", fn.__name__)
        return result
    return inner

class Pipeline:
    def __init__(self, image):
        self.image = image
    @logged
    def gray(self):
        self.image = ImageOps.grayscale(self.image)
        return self
    def crop(self, box):
        self.image = self.image.crop(box)
        return self

p = Pipeline(Image.open(os.environ["ORIGINAL_IMAGE_PATH"]))
p.gray().crop((100, 100, 200, 300))
print(p.image.size)
