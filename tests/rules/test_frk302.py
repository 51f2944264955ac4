"""FRK302: exact findings and messages in worker-side code; no automatic fix."""

from __future__ import annotations

import textwrap

from flake8_forksafe.config import Config
from flake8_forksafe.fix import fix_source
from tests.rules._support import check_dedented

CFG = Config(select=("FRK302",))
BOTH = Config(select=("FRK301", "FRK302"))
HEAD = "import functools\nimport torch\nfrom torch.utils.data import DataLoader, Dataset, IterableDataset\n"


def check(body, cfg=CFG):
    return check_dedented(body, "ds.py", cfg, HEAD)


def findings(body, cfg=CFG):
    return [(f.code, f.line, f.col, f.fix) for f in check(body, cfg)]


def test_message_and_no_fix():
    body = """
    class DS(Dataset):
        def __getitem__(self, i):
            return torch.zeros(3).cuda()
    """
    (f,) = check(body)
    assert (f.line, f.col, f.fix) == (7, 15, None)
    assert f.message == (
        ".cuda() in DS.__getitem__ moves data to the GPU inside the DataLoader workers: forked workers fail "
        "with 'Cannot re-initialize CUDA in forked subprocess' once the parent uses CUDA, spawn workers each "
        "create a CUDA context; return CPU tensors, pass pin_memory=True to the DataLoader and move each batch "
        "to the GPU in the training loop"
    )
    res = fix_source(HEAD + textwrap.dedent(body), "ds.py", CFG, unsafe=True)
    assert not res.changed


def test_iter_helpers_and_default_device():
    got = check(
        """
        class Stream(IterableDataset):
            def __init__(self, device="cuda"):
                self.device = device

            def _noise(self):
                return torch.randn(3, device=self.device)

            def __iter__(self):
                torch.set_default_device("cuda:0")
                while True:
                    yield self._noise()
        """
    )
    assert [(f.line, f.col) for f in got] == [(10, 15), (13, 8)]
    assert got[0].message.startswith("torch.randn(device=self.device) in Stream._noise() (called from __iter__) moves")
    assert got[1].message.startswith(
        'torch.set_default_device("cuda:0") in Stream.__iter__ makes tensors created in the DataLoader workers CUDA tensors:'
    )


def test_collate_fn_forms():
    got = findings(
        """
        def collate(batch, scale=1):
            return torch.stack(batch).cuda() * scale

        def to_gpu(batch):
            return [b.to("cuda") for b in batch]

        class Loaders:
            def _collate(self, batch):
                torch.cuda.synchronize()
                return batch

            def build(self, ds):
                a = DataLoader(ds, num_workers=2, collate_fn=functools.partial(collate, scale=2))
                b = DataLoader(ds, num_workers=2, collate_fn=lambda b: torch.stack(b).to(0))
                c = DataLoader(ds, num_workers=2, collate_fn=self._collate)
                d = DataLoader(ds, 8, False, None, None, 2, to_gpu)
                return a, b, c, d
        """
    )
    assert [(line, col) for _, line, col, _ in got] == [(6, 11), (9, 12), (13, 8), (18, 63)]


def test_zero_workers_and_init_overlap_not_reported():
    body = """
    def collate(batch):
        return torch.stack(batch).cuda()

    class DS(Dataset):
        def __init__(self):
            self.x = self._load()

        def _load(self):
            return torch.ones(3).cuda()

        def __getitem__(self, i):
            return self._load()[i]

    loader = DataLoader(DS(), num_workers=2)
    other = DataLoader([1, 2], num_workers=0, collate_fn=collate)
    """
    # _load runs in __init__ too: FRK301 reports it, once
    assert findings(body, BOTH) == [("FRK301", 13, 15, "unsafe")]


def test_queries_and_lazy_calls_not_reported():
    body = """
    def wif(worker_id):
        torch.cuda.manual_seed_all(worker_id)

    class DS(Dataset):
        def __getitem__(self, i):
            if torch.cuda.is_available() and torch.cuda.device_count() > 1:
                return torch.zeros(2, device="cpu")
            return torch.zeros(1).to(torch.float16)

    loader = DataLoader(DS(), num_workers=2, worker_init_fn=wif)
    """
    assert findings(body) == []
