"""ImageFolder variants that return paths and cache decoded images (timm / torchvision style)."""
import threading

from PIL import Image
from torchvision import datasets, transforms


class ImageFolderWithPaths(datasets.ImageFolder):
    """Returns (image, target, path); keeps a small decoded-image cache."""

    def __init__(self, root, transform=None, cache_size=256):
        super().__init__(root, transform=transform)
        self.cache_size = cache_size
        self._cache = {}
        self._cache_lock = threading.Lock()  # FRK203: 27

    def _load(self, path):
        with self._cache_lock:
            img = self._cache.get(path)
        if img is None:
            with open(path, "rb") as f:
                img = Image.open(f).convert("RGB")
            with self._cache_lock:
                if len(self._cache) < self.cache_size:
                    self._cache[path] = img
        return img

    def __getitem__(self, index):
        path, target = self.samples[index]
        sample = self._load(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target, path


class FilteredImageFolder(datasets.ImageFolder):
    """Keeps only the classes listed in a text file."""

    def __init__(self, root, class_list, transform=None):
        with open(class_list) as f:
            keep = {line.strip() for line in f if line.strip()}
        super().__init__(root, transform=transform)
        self.samples = [(p, t) for p, t in self.samples if self.classes[t] in keep]
        self.targets = [t for _, t in self.samples]
        self.imgs = self.samples


def build_transforms(img_size=224, train=True):
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    if train:
        return transforms.Compose([
            transforms.RandomResizedCrop(img_size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            normalize,
        ])
    return transforms.Compose([
        transforms.Resize(int(img_size / 0.875)),
        transforms.CenterCrop(img_size),
        transforms.ToTensor(),
        normalize,
    ])
