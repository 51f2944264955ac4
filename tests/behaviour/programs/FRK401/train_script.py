"""A small regression trained at module level."""
import torch
from torch.utils.data import DataLoader, TensorDataset

EPOCHS = 3
torch.manual_seed(0)
x = torch.linspace(-1, 1, 32).unsqueeze(1)
y = 3 * x + 0.5
model = torch.nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.5)


def step(xb, yb):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    opt.step()
    return loss.item()


loader = DataLoader(TensorDataset(x, y), batch_size=8, num_workers=2)
for epoch in range(EPOCHS):
    losses = [step(xb, yb) for xb, yb in loader]
    print(epoch, round(sum(losses) / len(losses), 5))
