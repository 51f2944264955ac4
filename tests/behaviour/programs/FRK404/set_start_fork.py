"""fork set as the start method in a script that trains on CUDA when available."""
import multiprocessing

import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    multiprocessing.set_start_method("fork", force=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.arange(8.0).unsqueeze(1)
    loader = DataLoader(TensorDataset(x, 2 * x), batch_size=4, num_workers=2)
    for xb, yb in loader:
        print(xb.to(device).cpu().tolist(), yb.tolist())
    if torch.cuda.is_available():
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
