"""Offline evaluation: multiprocessing used only under the guard or inside functions. Clean."""
import json
import multiprocessing as mp
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset


def score_file(path):
    with open(path) as f:
        preds = json.load(f)
    return sum(p["correct"] for p in preds) / max(len(preds), 1)


def score_all(paths, procs=4):
    with mp.Pool(procs) as pool:
        return pool.map(score_file, paths)


def background_writer(q, out_path):
    with open(out_path, "w") as f:
        for item in iter(q.get, None):
            f.write(json.dumps(item) + "\n")


def predict(model, x):
    loader = DataLoader(TensorDataset(x), batch_size=256, num_workers=2,
                        multiprocessing_context="spawn", persistent_workers=True)
    with torch.no_grad():
        return torch.cat([model(b).argmax(1) for (b,) in loader])


if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)
    q = mp.Queue()
    writer = mp.Process(target=background_writer, args=(q, "scores.jsonl"))
    writer.start()
    for path, s in zip(sys.argv[1:], score_all(sys.argv[1:])):
        q.put({"file": path, "score": s})
    q.put(None)
    writer.join()
    print(predict(torch.nn.Linear(8, 3), torch.randn(1000, 8))[:10])
