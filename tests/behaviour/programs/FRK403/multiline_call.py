"""A multi-line set_start_method call."""
import multiprocessing

multiprocessing.set_start_method(
    "forkserver"
)

from torch.utils.data import DataLoader  # noqa: E402

if __name__ == "__main__":
    print([b.tolist() for b in DataLoader(list(range(6)), batch_size=3, num_workers=2)])
