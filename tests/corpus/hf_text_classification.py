"""HF-style text classification: tokenizer kept on the dataset, arrow-backed data. Clean."""
from dataclasses import dataclass

import torch
from datasets import load_from_disk
from torch.utils.data import DataLoader, Dataset
from transformers import AutoTokenizer


class TextClsDataset(Dataset):
    def __init__(self, path, model_name, max_len=256, split="train"):
        self.data = load_from_disk(path)[split]
        self.tokenizer = AutoTokenizer.from_pretrained(model_name, use_fast=True)
        self.max_len = max_len
        self.label2id = {label: i for i, label in enumerate(sorted(set(self.data["label"])))}

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        row = self.data[i]
        enc = self.tokenizer(row["text"], truncation=True, max_length=self.max_len)
        enc["labels"] = self.label2id[row["label"]]
        return enc


@dataclass
class PadCollator:
    pad_id: int
    label_pad: int = -100

    def __call__(self, batch):
        width = max(len(b["input_ids"]) for b in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for k, b in enumerate(batch):
            n = len(b["input_ids"])
            ids[k, :n] = torch.tensor(b["input_ids"])
            mask[k, :n] = 1
        labels = torch.tensor([b["labels"] for b in batch])
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def make_loaders(path, model_name, batch_size=32, workers=4):
    train = TextClsDataset(path, model_name, split="train")
    val = TextClsDataset(path, model_name, split="validation")
    collator = PadCollator(train.tokenizer.pad_token_id)
    return (DataLoader(train, batch_size=batch_size, shuffle=True, num_workers=workers, collate_fn=collator),
            DataLoader(val, batch_size=batch_size * 2, num_workers=workers, collate_fn=collator))
