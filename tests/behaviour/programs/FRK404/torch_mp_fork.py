"""torch.multiprocessing fork start method in a CUDA-aware script."""
import torch
import torch.multiprocessing as tmp
from torch.utils.data import DataLoader

if __name__ == "__main__":
    tmp.set_start_method("fork", force=True)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    w = torch.ones(2, device=dev)
    for b in DataLoader(torch.arange(8.0).view(4, 2), batch_size=2, num_workers=2):
        print((b.to(dev) * w).cpu().tolist())
