"""FRK201: lambdas kept on datasets or given to DataLoaders with workers (beyond the fixtures)."""

from __future__ import annotations

import json
import textwrap

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source
from tests.rules._support import ALL, check_dedented, clean_env, fix_dedented, run_python

CFG = Config(select=("FRK201",))
SPAWN = "spawn/forkserver workers cannot pickle it (it only works under fork)"
TODO = "use a module-level function (functools.partial to bind values)"


def findings(src, cfg=CFG):
    return [(f.code, f.line, f.col, f.fix) for f in check_dedented(src, "t.py", cfg)]


def fixed(src, cfg=CFG):
    return fix_dedented(src, "t.py", cfg, unsafe=False)


# --------------------------------------------------------------------------------------------------
# what is flagged


def test_messages_say_where_the_lambda_goes():
    src = textwrap.dedent(
        """
        from torch.utils.data import DataLoader, Dataset

        class DS(Dataset):
            def __init__(self, items, key=lambda x: x):
                self.items = items
                self.key = key

            def __getitem__(self, i):
                return self.key(self.items[i])

        def loaders(items, workers):
            ds = DS(items, key=lambda x: -x)
            ds.post = lambda x: x
            return DataLoader(ds, num_workers=workers, collate_fn=lambda b: b)
        """
    )
    got = [(f.line, f.col, f.message) for f in check_source(src, "t.py", CFG)]
    assert got == [
        (5, 34, f"lambda stored on dataset DS (self.key): {SPAWN}; {TODO}"),
        (13, 23, f"lambda passed to the dataset constructor DS(): {SPAWN}; {TODO}"),
        (14, 14, f"lambda stored on dataset object ds.post: {SPAWN}; {TODO}"),
        (15, 58, f"lambda passed as collate_fn to a DataLoader whose num_workers is not 0: {SPAWN}; {TODO}"),
    ]


def test_transient_lambdas_and_unstored_defaults_are_not_flagged():
    src = """
        import functools
        import json
        from torch.utils.data import Dataset

        class DS(Dataset):
            def __init__(self, items, key=lambda x: x):
                self.items = sorted(items, key=key)
                self.total = functools.reduce(lambda a, b: a + b, items, 0)
                self.evens = list(filter(lambda x: x % 2 == 0, items))
                self.first = (lambda xs: xs[0])(items)
                self.description = json.dumps({"n": 1}, default=lambda o: o.name)

            def __getitem__(self, i):
                return self.items[i]
        """
    assert findings(src) == []


def test_wrapping_calls_and_containers_keep_the_lambda():
    src = """
        from collections import defaultdict
        import numpy as np
        from torch.utils.data import Dataset

        class DS(Dataset):
            def __init__(self):
                self.counts = defaultdict(lambda: 0)
                self.vec = np.vectorize(lambda v: v + 1)
                self.ops = {"neg": lambda x: -x}
                steps = []
                steps.append(lambda x: x * 2)
                self.steps = steps

            def __getitem__(self, i):
                return i
        """
    assert findings(src) == [
        ("FRK201", 8, 34, "safe"),
        ("FRK201", 9, 32, "safe"),
        ("FRK201", 10, 27, "safe"),
        ("FRK201", 12, 21, "safe"),
    ]


def test_worker_only_lambdas_are_not_flagged():
    src = """
        from torch.utils.data import Dataset

        class DS(Dataset):
            def __getitem__(self, i):
                self.last = lambda: i
                return i
        """
    assert findings(src) == []


def test_loader_exemption_is_per_call():
    src = """
        from torch.utils.data import DataLoader

        def loaders(ds):
            debug = DataLoader(ds, num_workers=0, collate_fn=lambda b: b)
            train = DataLoader(ds, num_workers=4, worker_init_fn=lambda i: None, sampler=None)
            return debug, train
        """
    assert findings(src) == [("FRK201", 6, 57, "safe")]


def test_dataset_exempt_when_its_loaders_have_no_workers():
    src = """
        from torch.utils.data import DataLoader, Dataset

        class DS(Dataset):
            def __init__(self):
                self.f = lambda x: x

            def __getitem__(self, i):
                return self.f(i)

        loader = DataLoader(DS(), num_workers=0)
        """
    assert findings(src) == []
    assert findings(src.replace("num_workers=0", "num_workers=2")) == [("FRK201", 6, 17, "safe")]


def test_loader_subclass_super_init():
    src = """
        from torch.utils.data import DataLoader

        class Quiet(DataLoader):
            def __init__(self, ds):
                super().__init__(ds, num_workers=0, collate_fn=lambda b: b)

        class Busy(DataLoader):
            def __init__(self, ds, **kw):
                super().__init__(ds, collate_fn=lambda b: b, **kw)
        """
    assert findings(src) == [("FRK201", 10, 40, "safe")]


def test_keywords_given_through_a_kwargs_dict():
    """``collate_fn`` / ``worker_init_fn`` (and ``num_workers``) carried by a ``**kwargs`` dict: a
    literal, items added later (``kw[...] =``, ``.update``, ``.setdefault``), a dict kept on self."""
    src = """
        from torch.utils.data import DataLoader

        def literal(ds):
            kw = {"num_workers": 2, "collate_fn": lambda b: b}
            return DataLoader(ds, **kw)

        def items(ds):
            kw = dict(num_workers=2)
            kw["worker_init_fn"] = lambda i: None
            kw.update(collate_fn=lambda b: b)
            return DataLoader(ds, **kw)

        class Loader(DataLoader):
            def __init__(self, ds, raw=False, **kwargs):
                self.kwargs = dict(kwargs)
                if raw:
                    self.kwargs.update({"collate_fn": lambda x: x})
                super().__init__(ds, **self.kwargs)

        def no_workers(ds):
            kw = {"num_workers": 0, "collate_fn": lambda b: b}
            kw.setdefault("worker_init_fn", lambda i: None)
            return DataLoader(ds, **kw)
        """
    assert findings(src) == [
        ("FRK201", 5, 42, "safe"),
        ("FRK201", 10, 27, "safe"),
        ("FRK201", 11, 25, "safe"),
        ("FRK201", 18, 46, "safe"),
    ]
    fixed = fix_dedented(src, "m.py", ALL)
    assert "lambda b: b}" not in fixed.split("def no_workers")[0] and "lambda x: x" not in fixed
    assert findings(fixed) == []


def test_noqa():
    src = """
        from torch.utils.data import DataLoader
        loader = DataLoader([], num_workers=2, collate_fn=lambda b: b)  # noqa: FRK201
        """
    assert findings(src) == []


# --------------------------------------------------------------------------------------------------
# the fix


def test_captured_locals_become_keyword_only_parameters():
    src = """
        from torch.utils.data import DataLoader


        def make(ds, pad, workers=2):
            scale = 2.0
            return DataLoader(ds, num_workers=workers, collate_fn=lambda b, *extra: [x * scale + pad for x in b])
        """
    assert fixed(src) == textwrap.dedent(
        """
        import functools

        from torch.utils.data import DataLoader


        def _collate_fn(b, *extra, scale, pad):
            return [x * scale + pad for x in b]


        def make(ds, pad, workers=2):
            scale = 2.0
            return DataLoader(ds, num_workers=workers, collate_fn=functools.partial(_collate_fn, scale=scale, pad=pad))
        """
    )


@pytest.mark.parametrize(
    "imports,spelled",
    [
        ("import functools as ft\n", "ft.partial"),
        ("from functools import partial\n", "partial"),
        ("from functools import partial as bind\n", "bind"),
    ],
)
def test_existing_partial_import_is_reused(imports, spelled):
    src = imports + textwrap.dedent(
        """
        from torch.utils.data import DataLoader

        def make(ds, k):
            return DataLoader(ds, num_workers=2, collate_fn=lambda b: b * k)
        """
    )
    out = fix_source(src, "t.py", CFG).source
    assert out.startswith(imports + "\nfrom torch.utils.data import DataLoader\n\n\ndef _collate_fn(b, *, k):\n")
    assert f"collate_fn={spelled}(_collate_fn, k=k))" in out
    assert "import functools\n" not in out


def test_not_fixable_when_the_value_can_change_or_needs_the_instance():
    src = """
        from torch.utils.data import DataLoader, Dataset

        class DS(Dataset):
            def __init__(self, n):
                self.n = n
                self.f = lambda x: x % self.n
                self.fs = [lambda x: x + k for k in range(3)]
                later = 1
                self.g = lambda x: x + later
                later = 2
                for j in range(2):
                    self.h = lambda x: x * j

            def __getitem__(self, i):
                return self.f(i)

        loader = DataLoader(DS(3), num_workers=2)
        """
    assert findings(src) == [
        ("FRK201", 7, 17, None),
        ("FRK201", 8, 19, None),
        ("FRK201", 10, 17, None),
        ("FRK201", 13, 21, None),
    ]
    assert fixed(src) == textwrap.dedent(src)


def test_reassigned_before_creation_is_fine():
    src = """
        from torch.utils.data import Dataset

        class DS(Dataset):
            def __init__(self, scale=None):
                scale = scale or 1.0
                self.f = lambda x: x * scale

            def __getitem__(self, i):
                return self.f(i)
        """
    assert findings(src) == [("FRK201", 7, 17, "safe")]
    assert "self.f = functools.partial(_f_fn, scale=scale)" in fixed(src)


def test_local_import_is_repeated_and_module_names_are_not_bound():
    src = """
        import math
        from torch.utils.data import DataLoader

        def make(ds):
            import numpy as np
            return DataLoader(ds, num_workers=2, collate_fn=lambda b: np.stack(b) * math.pi)
        """
    assert fixed(src) == textwrap.dedent(
        """
        import math
        from torch.utils.data import DataLoader


        def _collate_fn(b):
            import numpy as np
            return np.stack(b) * math.pi


        def make(ds):
            return DataLoader(ds, num_workers=2, collate_fn=_collate_fn)
        """
    )


def test_names_are_unique_and_comments_kept():
    src = """
        from torch.utils.data import DataLoader


        def _collate_fn(b):
            return b


        # loaders for the two splits
        def make(ds, _collate_fn_2=None):
            a = DataLoader(ds, num_workers=2, collate_fn=lambda b: b[0])  # first
            b = DataLoader(ds, num_workers=2, collate_fn=lambda b: (  # second
                b[1]  # keep me
            ))
            return a, b
        """
    assert fixed(src) == textwrap.dedent(
        """
        from torch.utils.data import DataLoader


        def _collate_fn(b):
            return b


        def _collate_fn_3(b):
            return b[0]


        def _collate_fn_4(b):
            return (  # second
                b[1]  # keep me
            )


        # loaders for the two splits
        def make(ds, _collate_fn_2=None):
            a = DataLoader(ds, num_workers=2, collate_fn=_collate_fn_3)  # first
            b = DataLoader(ds, num_workers=2, collate_fn=_collate_fn_4)
            return a, b
        """
    )


def test_multiline_body_without_parentheses_is_wrapped():
    src = """
        from torch.utils.data import DataLoader
        loader = DataLoader([], num_workers=2, collate_fn=lambda b: b[0] +
                            b[1])
        """
    out = fixed(src)
    assert "def _collate_fn(b):\n    return (b[0] +\n                        b[1])\n" in out
    compile(out, "t.py", "exec")


def test_fix_is_idempotent_and_keeps_crlf():
    src = (
        "from torch.utils.data import DataLoader\r\n"
        "\r\n"
        "def make(ds, k):\r\n"
        "    return DataLoader(ds, num_workers=2, collate_fn=lambda b: b * k)\r\n"
    )
    once = fix_source(src, "t.py", CFG).source
    assert "\n" not in once.replace("\r\n", "")
    assert "def _collate_fn(b, *, k):\r\n    return b * k\r\n" in once
    assert fix_source(once, "t.py", CFG).source == once
    assert check_source(once, "t.py", CFG) == []


# --------------------------------------------------------------------------------------------------
# runtime: the fixed script works under fork, spawn and forkserver


SCRIPT = '''\
"""Toy training script: squares, a lambda transform pipeline and a lambda collate_fn."""
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Compose:
    def __init__(self, fns):
        self.fns = fns

    def __call__(self, x):
        for f in self.fns:
            x = f(x)
        return x


class Squares(Dataset):
    def __init__(self, n, scale=2.0, target_transform=lambda y: y % 3):
        self.n = n
        self.transform = Compose([lambda x: x * x, lambda x: x * scale])  # augment
        self.target_transform = target_transform

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.transform(torch.tensor([float(i)])), self.target_transform(i)


def make_loader(ds, workers, ctx=None):
    offset = 10.0
    return DataLoader(
        ds,
        batch_size=4,
        num_workers=workers,
        multiprocessing_context=ctx,
        collate_fn=lambda batch: (torch.stack([x for x, _ in batch]) + offset, [y for _, y in batch]),
    )


if __name__ == "__main__":
    for xs, ys in make_loader(Squares(8), int(sys.argv[1])):
        print(xs.flatten().tolist(), ys)
'''

DRIVER = '''\
import json, sys
sys.path.insert(0, sys.argv[1])
import importlib


def batches(mod, workers, ctx):
    loader = mod.make_loader(mod.Squares(12), workers, ctx)
    return [[xs.flatten().tolist(), ys] for xs, ys in loader]


if __name__ == "__main__":
    out = {}
    for arg in sys.argv[2:]:
        name, _, contexts = arg.partition(":")
        mod = importlib.import_module(name)
        base = batches(mod, 0, None)
        res = {}
        for ctx in contexts.split(","):
            try:
                res[ctx] = "same" if batches(mod, 2, ctx) == base else "different"
            except Exception as exc:
                res[ctx] = f"{type(exc).__name__}: {exc}"
        out[name] = res
    print(json.dumps(out))
'''


def test_runtime_script_is_flagged_and_fixed_exactly():
    got = [(f.code, f.line, f.col, f.fix) for f in check_source(SCRIPT, "toy.py", ALL)]
    assert got == [
        ("FRK201", 19, 54, "safe"),
        ("FRK201", 21, 34, "safe"),
        ("FRK201", 21, 51, "safe"),
        ("FRK201", 38, 19, "safe"),
    ]
    res = fix_source(SCRIPT, "toy.py", ALL)
    assert res.remaining == []
    assert "collate_fn=functools.partial(_collate_fn, offset=offset)," in res.source
    assert (
        "        self.transform = Compose(\n"
        "            [_transform_fn, functools.partial(_transform_fn_2, scale=scale)]\n"
        "        )  # augment\n"
    ) in res.source  # split as ruff's formatter would: the fix made the line longer than 88


@pytest.mark.slow
def test_fixed_script_runs_under_every_start_method(tmp_path):
    pytest.importorskip("torch")  # the scripts run DataLoader workers
    (tmp_path / "toy_unfixed.py").write_text(SCRIPT)
    (tmp_path / "toy_fixed.py").write_text(fix_source(SCRIPT, "toy.py", ALL).source)
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = run_python(
        [tmp_path / "driver.py", tmp_path, "toy_unfixed:fork,spawn", "toy_fixed:fork,spawn,forkserver"],
        tmp_path, clean_env(PYTHONDONTWRITEBYTECODE="1"), 240,
        lambda out, err: "the DataLoader subprocess timed out",
    )
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["toy_fixed"] == {"fork": "same", "spawn": "same", "forkserver": "same"}
    unfixed = res["toy_unfixed"]
    assert unfixed["fork"] == "same"  # fork hides the bug
    assert unfixed["spawn"].startswith(("AttributeError", "PicklingError", "TypeError")), unfixed["spawn"]
    assert "pickle" in unfixed["spawn"] and "lambda" in unfixed["spawn"], unfixed["spawn"]


def test_setstate_recreating_the_lambda_is_the_safe_pattern():
    src = """
        from torch.utils.data import DataLoader, Dataset

        class DS(Dataset):
            def __getstate__(self):
                state = self.__dict__.copy()
                state.pop("f", None)
                return state

            def __setstate__(self, state):
                self.__dict__.update(state)
                self.f = lambda x: x

            def __getitem__(self, i):
                return self.f(i)

        loader = DataLoader(DS(), num_workers=2)
        """
    assert findings(src) == []


def test_doc_example_is_fixed_as_documented():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "rules" / "FRK201.md").read_text(encoding="utf-8")
    example, use_instead = re.findall(r"```python\n(.*?)```", doc, re.S)[:2]
    assert fix_source(example, "t.py", CFG).source == use_instead


SAMPLER_PROGRAM = """\
from torch.utils.data import BatchSampler, DataLoader, Sampler


class Sorted(Sampler):
    def __init__(self, n, key):
        self.n, self.key = n, key

    def __iter__(self):
        return iter(sorted(range(self.n), key=self.key))

    def __len__(self):
        return self.n


if __name__ == "__main__":
    for ctx in ("spawn", "forkserver"):
        one = DataLoader(list(range(6)), sampler=Sorted(6, key=lambda i: -i), batch_size=3, num_workers=2,
                         multiprocessing_context=ctx)
        batches = BatchSampler(Sorted(6, key=lambda i: i % 2), batch_size=3, drop_last=False)
        two = DataLoader(list(range(6)), batch_sampler=batches, num_workers=2, multiprocessing_context=ctx)
        print(ctx, [b.tolist() for b in one], [b.tolist() for b in two])
"""


def test_a_lambda_in_a_sampler_is_not_flagged_and_runs_under_spawn(tmp_path):
    """A loader's sampler and batch_sampler run in the parent: a lambda there never reaches a worker."""
    assert check_source(SAMPLER_PROGRAM, "m.py", Config(select=("FRK201", "FRK202"))) == []
    pytest.importorskip("torch")
    import subprocess
    import sys

    prog = tmp_path / "samplers.py"
    prog.write_text(SAMPLER_PROGRAM, encoding="utf-8")
    r = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "spawn [[5, 4, 3], [2, 1, 0]] [[0, 2, 4], [1, 3, 5]]",
        "forkserver [[5, 4, 3], [2, 1, 0]] [[0, 2, 4], [1, 3, 5]]",
    ]


def test_a_lambda_kept_by_a_same_file_mixin_init_the_dataset_calls():
    """``class DS(Base, IterableDataset)`` whose own ``__init__`` calls ``super().__init__(cfg)``:
    the mixin's ``__init__`` runs on the parent side and keeps the lambda on the dataset, though
    ``DS.__init__`` overrides it (deeptrees' augmentation default, a miss of session 13's holdout:
    seen, then fixed)."""
    src = """
        from abc import ABC
        from torch.utils.data import IterableDataset
        from torchvision.transforms import v2

        class Base(ABC):
            def __init__(self, cfg):
                joint = []
                for key, val in cfg.items():
                    if key == "Resize":
                        joint.append(v2.Resize(**val))
                if len(joint) == 0:
                    lc = lambda x: x
                    joint.append(v2.Lambda(lc))
                self.augment = v2.Compose(joint)

        class DS(Base, IterableDataset):
            def __init__(self, cfg, n):
                super().__init__(cfg)
                self.n = n

            def __iter__(self):
                yield self.augment(self.n)
        """
    assert findings(src) == [("FRK201", 13, 17, "safe")]
    out = fixed(src)
    assert "\n\ndef _lc_lambda(x):\n    return x\n" in out and "            lc = _lc_lambda\n" in out, out
    assert findings(out) == []
