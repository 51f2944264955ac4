"""Loaders with an explicit fork context in a module that evaluates on CUDA when present."""
import torch
from torch.utils.data import DataLoader


def evaluate(model, loader):
    if torch.cuda.is_available():
        model = model.cuda()
    with torch.no_grad():
        return [model(b.unsqueeze(1).to(next(model.parameters()).device)).sum().item() for b in loader]


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1)
    with torch.no_grad():
        model.weight.fill_(2.0)
        model.bias.fill_(1.0)
    loader = DataLoader(torch.arange(6.0), batch_size=3, num_workers=2, multiprocessing_context="fork")
    print(evaluate(model, loader))
