"""Dataset that preloads tensors and an encoder onto the GPU in __init__ (FRK301)."""
import torch
import torch.nn as nn
from torch.utils.data import Dataset


class Encoder(nn.Module):
    def __init__(self, dim=128):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                 nn.Flatten(), nn.Linear(32, dim))

    def forward(self, x):
        return self.net(x)


class GpuCachedDataset(Dataset):
    def __init__(self, tensor_file, encoder_ckpt=None):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.n_gpus = torch.cuda.device_count()
        blob = torch.load(tensor_file, map_location="cpu")
        self.x = blob["x"].cuda()  # FRK301: 17
        self.y = blob["y"].to("cuda", non_blocking=True)  # FRK301: 17
        self.mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(3, 1, 1)  # FRK301: 20
        self.encoder = None
        if encoder_ckpt is not None:
            enc = Encoder()
            enc.load_state_dict(torch.load(encoder_ckpt, map_location="cpu"))
            self.encoder = enc.to(torch.device("cuda")).eval()  # FRK301: 27
        torch.cuda.empty_cache()  # not a hazard on its own: a no-op unless CUDA is already initialised

    def __len__(self):
        return self.x.shape[0]

    def __getitem__(self, i):
        return self.x[i] - self.mean, self.y[i]


class CpuTensorDataset(Dataset):
    """Keeps data on the CPU; the training loop moves batches (not flagged)."""

    def __init__(self, tensor_file, device="cuda"):
        blob = torch.load(tensor_file, map_location="cpu")
        self.x = blob["x"].float()
        self.y = blob["y"].long()
        self.target_device = device
        self.use_amp = torch.cuda.is_available()

    def __len__(self):
        return self.x.shape[0]

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def train_step(model, batch, opt):
    x, y = (t.to("cuda", non_blocking=True) for t in batch)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()
