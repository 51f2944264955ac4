"""Speech dataset reading audio per item with soundfile / torchaudio. Clean."""
import csv
import os

import numpy as np
import soundfile as sf
import torch
import torchaudio
from torch.utils.data import Dataset


class SpeechCommands(Dataset):
    def __init__(self, root, manifest, sample_rate=16000, clip_seconds=1.0):
        self.root = root
        self.sample_rate = sample_rate
        self.num_samples = int(sample_rate * clip_seconds)
        with open(manifest, newline="") as f:
            rows = list(csv.DictReader(f))
        self.items = [(os.path.join(root, r["path"]), r["label"]) for r in rows]
        self.labels = sorted({label for _, label in self.items})
        self.durations = [sf.info(p).duration for p, _ in self.items[:100]]
        self.melspec = torchaudio.transforms.MelSpectrogram(sample_rate=sample_rate, n_mels=64)

    def __len__(self):
        return len(self.items)

    def _load(self, path):
        wav, sr = sf.read(path, dtype="float32", always_2d=False)
        if sr != self.sample_rate:
            wav = torchaudio.functional.resample(torch.from_numpy(wav), sr, self.sample_rate).numpy()
        if len(wav) < self.num_samples:
            wav = np.pad(wav, (0, self.num_samples - len(wav)))
        return torch.from_numpy(wav[:self.num_samples])

    def __getitem__(self, i):
        path, label = self.items[i]
        wav = self._load(path)
        shift = np.random.randint(-1600, 1600)
        wav = torch.roll(wav, shift)
        return self.melspec(wav).log1p(), self.labels.index(label)
