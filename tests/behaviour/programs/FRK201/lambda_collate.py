"""Variable-length token sequences padded by a lambda collate_fn."""
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

if __name__ == "__main__":
    seqs = [torch.arange(n) for n in (3, 1, 4, 1, 5, 2)]
    loader = DataLoader(seqs, batch_size=3, num_workers=2,
                        collate_fn=lambda batch: pad_sequence(batch, batch_first=True, padding_value=-1))
    for batch in loader:
        print(batch.tolist())
