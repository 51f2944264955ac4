"""persistent_workers=False written out with a forkserver context."""
import torch
from torch.utils.data import DataLoader

if __name__ == "__main__":
    loader = DataLoader(torch.arange(4), batch_size=2, num_workers=2,
                        multiprocessing_context="forkserver", persistent_workers=False)
    print([b.tolist() for b in loader], [b.tolist() for b in loader])
