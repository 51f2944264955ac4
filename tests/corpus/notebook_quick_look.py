# Exploratory notebook export: everything loads in the main process (num_workers 0 / default). Clean.
import matplotlib.pyplot as plt
import torch
import torchvision.transforms as T
from torch.utils.data import DataLoader
from torchvision import datasets

ROOT = "/data/imagenette2-160/train"

to_rgb = T.Compose([T.Lambda(lambda im: im.convert("RGB")), T.Resize(160), T.CenterCrop(160), T.ToTensor()])
ds = datasets.ImageFolder(ROOT, transform=to_rgb)
print(len(ds), ds.classes[:5])

for x, y in DataLoader(ds, batch_size=8, shuffle=True):
    print(x.shape, y)
    break

preview = DataLoader(ds, batch_size=16, shuffle=True, num_workers=0, collate_fn=lambda b: b)
batch = next(iter(preview))

fig, axes = plt.subplots(2, 8, figsize=(16, 4))
for ax, (img, label) in zip(axes.flat, batch):
    ax.imshow(img.permute(1, 2, 0))
    ax.set_title(ds.classes[label][:10])
    ax.axis("off")
plt.tight_layout()
plt.savefig("preview.png")

means = []
for x, _ in DataLoader(ds, batch_size=256, num_workers=0):
    means.append(x.mean(dim=(0, 2, 3)))
print("channel means", torch.stack(means).mean(0))

counts = torch.bincount(torch.tensor(ds.targets))
print(sorted(zip(ds.classes, counts.tolist()), key=lambda kv: -kv[1])[:3])
