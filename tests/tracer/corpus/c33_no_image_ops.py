total = sum(x * 2 for x in range(10))
values = sorted({3: "c", 1: "a"}.items())
print(f"total={total}", values[0][1], 5 > 3, 255 - 3)
