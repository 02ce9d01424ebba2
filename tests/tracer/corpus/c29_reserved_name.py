from PIL import Image
__pbx__ = None
img = Image.new("RGB", (10, 10)).crop((0, 0, 5, 5))
