"""The 2,000-line document ``lsp_bench.py`` edits: a realistic training module built from the
held-out corpus (datasets with handles, lambdas, loaders, module-level code) and unrelated code
(models, metrics, schedules, I/O helpers), deterministic."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
PARTS = [  # no "fork" string: a file holding it is never reduced (see slicing.py)
    "det_coco_lmdb.py",
    "hdf5_patch_bags.py",
    "torchvision_lambda_script.py",
    "sqlite_caption_dataset.py",
    "rng_objects.py",
    "stored_helper_readers.py",
    "unguarded_main_call.py",
    "kaggle_cassava_script.py",
]


def unrelated(i: int) -> str:
    """About 60 lines of code that has nothing to do with data loading."""
    return textwrap.dedent(
        f'''

        class Block{i}(nn.Module):
            """Residual block {i}."""

            def __init__(self, channels={16 + i}, expansion={1 + i % 4}):
                super().__init__()
                hidden = channels * expansion
                self.conv1 = nn.Conv2d(channels, hidden, 3, padding=1)
                self.bn1 = nn.BatchNorm2d(hidden)
                self.conv2 = nn.Conv2d(hidden, channels, 3, padding=1)
                self.bn2 = nn.BatchNorm2d(channels)
                self.act = nn.ReLU(inplace=True)

            def forward(self, x):
                out = self.act(self.bn1(self.conv1(x)))
                out = self.bn2(self.conv2(out))
                return self.act(out + x)


        def schedule_{i}(step, warmup={100 * (i + 1)}, base_lr=1e-3, floor=1e-5):
            """Warm-up then cosine decay ({i})."""
            if step < warmup:
                return base_lr * (step + 1) / warmup
            progress = min(1.0, (step - warmup) / max(1, 10_000 - warmup))
            return floor + 0.5 * (base_lr - floor) * (1 + math.cos(math.pi * progress))


        def metric_{i}(pred, target, eps=1e-7):
            """Dice and IoU of a binary mask ({i})."""
            pred = (pred > 0.5).float()
            inter = (pred * target).sum()
            union = pred.sum() + target.sum()
            dice = (2 * inter + eps) / (union + eps)
            iou = (inter + eps) / (union - inter + eps)
            return {{"dice": dice.item(), "iou": iou.item()}}


        def format_report_{i}(history, width=60):
            lines = []
            for epoch, values in enumerate(history):
                cells = ", ".join(f"{{k}}={{v:.4f}}" for k, v in sorted(values.items()))
                lines.append(f"epoch {{epoch:3d}} | {{cells}}"[:width])
            best = max(range(len(history)), key=lambda e: history[e].get("dice", 0.0)) if history else None
            lines.append(f"best epoch: {{best}}")
            return "\\n".join(lines)
        '''
    )


def build(lines: int = 2000) -> str:
    head = '"""Training module (benchmark document for the language server)."""\nimport math\n\nimport torch.nn as nn\n'
    parts: List[str] = [head]
    for name in PARTS:
        parts.append(f"\n\n# ---- {name}\n" + (CORPUS / name).read_text(encoding="utf-8"))
    i = 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.insert(1 + (i * 3) % (len(parts) - 1), unrelated(i))  # spread between the datasets
        i += 1
    return "".join(parts)


if __name__ == "__main__":
    text = build()
    print(text, end="")
