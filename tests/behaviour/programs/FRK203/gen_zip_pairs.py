"""Question/answer pairs zipped in a generator expression, skipping unanswered questions."""
from torch.utils.data import DataLoader, IterableDataset


class QA(IterableDataset):
    def __init__(self, questions, answers):
        self.pairs = ((q.strip(), a.strip()) for q, a in zip(questions, answers) if a)

    def __iter__(self):
        for q, a in self.pairs:
            yield f"Q: {q} A: {a}"


if __name__ == "__main__":
    qs = [f" question {i} " for i in range(9)]
    ans = [f"answer {i}" if i % 3 else "" for i in range(9)]
    for batch in DataLoader(QA(qs, ans), batch_size=2, num_workers=2, collate_fn=list):
        print(batch)
