"""A worker_init_fn defined inside main() (it configures logging in each worker)."""
import logging

from torch.utils.data import DataLoader


def main():
    def init_worker(worker_id):
        logging.getLogger("data").setLevel(logging.WARNING)

    loader = DataLoader(list(range(10)), batch_size=5, num_workers=2, worker_init_fn=init_worker)
    for batch in loader:
        print(batch.tolist())


if __name__ == "__main__":
    main()
