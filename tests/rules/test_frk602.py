"""FRK602: what counts as a constant seed, where the finding points, exact fixes."""

from __future__ import annotations

import textwrap

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source

CFG = Config(select=("FRK602",))
HEAD = "import random\nimport numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, get_worker_info\n"


def check(body, tail="", cfg=CFG):
    return check_source(HEAD + textwrap.dedent(body) + tail, "train.py", cfg)


def fixed(body, tail=""):
    res = fix_source(HEAD + textwrap.dedent(body) + tail, "train.py", CFG, unsafe=True)
    assert not res.errors
    assert res.source.startswith(HEAD)
    return res.source[len(HEAD):]


def loader(init="wif", extra=""):
    return f"\n\ndef make(ds):\n    return DataLoader(ds, num_workers=4, worker_init_fn={init}{extra})\n"


def test_message_constant_and_worker_id():
    body = """
    def wif(worker_id):
        np.random.seed(0)
        random.seed(worker_id)
    """
    (a,) = check(body, loader())  # one finding per worker_init_fn, on its first seeding call
    assert (a.line, a.col, a.fix) == (7, 4, "unsafe")
    assert a.message == (
        "worker_init_fn wif() seeds from constants only (2 seeding calls): every worker and every epoch replay "
        "the same random augmentations (the DataLoader already gives each worker a fresh seed every epoch); "
        "seed from torch.initial_seed() % 2**32 instead"
    )
    (b,) = check("""
    def wif(worker_id):
        random.seed(worker_id)
    """, loader())
    assert b.message.startswith(
        "worker_init_fn wif() seeds from constants and the worker id only: every epoch replays the same"
    )


@pytest.mark.parametrize(
    "seed",
    [
        "0",
        "worker_id",
        "1000 + worker_id",
        "SEED + worker_id * 7",
        "args.seed + worker_id",
        "int(cfg['seed']) + worker_id",
        "base",
        "local_seed",
    ],
)
def test_constant_seeds(seed):
    body = f"""
    SEED = 3

    def wif(worker_id, base=0):
        local_seed = base + worker_id
        np.random.seed({seed})
    """
    assert [(f.line, f.col) for f in check(body, loader())] == [(10, 4)]


@pytest.mark.parametrize(
    "seed",
    [
        "torch.initial_seed() % 2**32",
        "get_worker_info().seed % 2**32",
        "info.seed",
        "derived",
        "np.random.get_state()[1][0] + worker_id",
        "None",
        "",
    ],
)
def test_seeds_from_the_worker_seed_are_fine(seed):
    body = f"""
    def wif(worker_id):
        info = get_worker_info()
        derived = (torch.initial_seed() + worker_id) % 2**32
        np.random.seed({seed})
    """
    assert check(body, loader()) == []


def test_which_functions_are_worker_init_fns():
    body = """
    import functools

    def partial_init(base, worker_id):
        np.random.seed(base + worker_id)

    def not_given(worker_id):
        np.random.seed(worker_id)

    def zero_only(worker_id):
        np.random.seed(worker_id)

    def persistent(worker_id):
        np.random.seed(100 + worker_id)

    def persistent_constant(worker_id):
        np.random.seed(100)

    class DM:
        def _init(self, worker_id):
            torch.manual_seed(worker_id)

        def loaders(self, ds):
            return [
                DataLoader(ds, num_workers=2, worker_init_fn=functools.partial(partial_init, 7)),
                DataLoader(ds, num_workers=0, worker_init_fn=zero_only),
                DataLoader(ds, num_workers=2, worker_init_fn=persistent, persistent_workers=True),
                DataLoader(ds, num_workers=2, worker_init_fn=persistent_constant, persistent_workers=True),
                DataLoader(ds, num_workers=2, worker_init_fn=self._init),
                DataLoader(ds, num_workers=2, worker_init_fn=lambda wid: random.seed(wid)),
            ]
    """
    got = [(f.line, f.col) for f in check(body)]
    assert got == [(9, 4), (21, 4), (25, 8), (34, 69)]


def test_seeding_helper_is_followed_one_level():
    body = """
    def set_seed(seed):
        random.seed(seed)
        np.random.seed(seed)

    def wif(worker_id):
        set_seed(42 + worker_id)
    """
    assert [(f.line, f.col) for f in check(body, loader())] == [(11, 4)]


def test_fix_forms():
    body = """
    def wif(worker_id):
        torch.manual_seed(worker_id)
        torch.cuda.manual_seed_all(worker_id)
        random.seed(a=(worker_id + 1))
        s = 10 * worker_id
        np.random.seed(s)
        random.seed(s)
    """
    assert fixed(body, loader(extra=", persistent_workers=False")) == textwrap.dedent(
        """
        def wif(worker_id):
            torch.manual_seed(torch.initial_seed())
            torch.cuda.manual_seed_all(torch.initial_seed())
            random.seed(a=(torch.initial_seed() % 2**32))
            s = torch.initial_seed() % 2**32
            np.random.seed(s)
            random.seed(s)
        """
    ) + loader(extra=", persistent_workers=False")


def test_fix_adds_import_torch_and_uses_existing_spelling():
    src = textwrap.dedent(
        """\
        from __future__ import annotations
        import numpy as np
        from torch.utils.data import DataLoader


        def wif(worker_id):
            np.random.seed(worker_id)


        loader = DataLoader([1], num_workers=2, worker_init_fn=wif)
        """
    )
    out = fix_source(src, "t.py", CFG, unsafe=True).source
    # isort's place: plain imports before `from` imports in the third-party group
    assert out == src.replace("import numpy as np\n", "import numpy as np\nimport torch\n").replace(
        "np.random.seed(worker_id)", "np.random.seed(torch.initial_seed() % 2**32)"
    )
    src2 = src.replace("import numpy as np\n", "import numpy as np\nfrom torch import initial_seed\n")
    out2 = fix_source(src2, "t.py", CFG, unsafe=True).source
    assert "np.random.seed(initial_seed() % 2**32)" in out2 and "import torch\n" not in out2


def test_partial_bound_run_configuration_through_kwargs_dict():
    """``loader_args["worker_init_fn"] = partial(init, seed=seed, rank=rank)`` then
    ``DataLoader(**loader_args)``: the builder's configuration parameters are the same every epoch
    (flagged); an ``epoch`` parameter, or a seed named for it, changes per call (not flagged)."""
    body = """
    from functools import partial

    def init(worker_id, num_workers, rank, seed):
        worker_seed = num_workers * rank + worker_id + seed
        np.random.seed(worker_seed)

    def build(ds, opt, rank, seed=None):
        args = dict(dataset=ds, num_workers=opt["workers"])
        args["worker_init_fn"] = partial(init, num_workers=opt["workers"], rank=rank, seed=seed) if seed else None
        return DataLoader(**args)
    """
    (f,) = check(body)
    assert (f.code, f.line, f.col) == ("FRK602", 10, 4)
    for varying in ("epoch", "epoch_seed"):
        assert check(body.replace("seed=None):", f"seed=None, {varying}=0):").replace("seed=seed)", f"seed={varying})")) == []


def test_a_library_worker_init_fn_that_no_loader_of_its_file_uses():
    """mmengine/lhotse: ``def worker_init_fn(worker_id, num_workers, rank, seed)`` is given to loaders
    by a runner in another module (or by users) through ``functools.partial`` with the run's
    settings: reported on its own, with no loader in the file (the gate lets the file through)."""
    src = textwrap.dedent("""\
        import random

        import numpy as np
        import torch


        def worker_init_fn(worker_id, num_workers, rank, seed):
            worker_seed = num_workers * rank + worker_id + seed
            np.random.seed(worker_seed)
            random.seed(worker_seed)
            torch.manual_seed(worker_seed)


        def epoch_worker_init(worker_id, epoch):
            np.random.seed(epoch + worker_id)  # a new base per epoch: not constant


        def seed_worker_init(worker_id):
            np.random.seed(torch.initial_seed() % 2**32)


        def seed_everything(worker_id):
            np.random.seed(worker_id)  # not named as a worker_init_fn


        def worker_init_helper(rank, worker_id):
            np.random.seed(rank + worker_id)  # worker_id is not its first parameter
        """)
    got = [(f.line, f.col, f.fix) for f in check_source(src, "utils.py", CFG)]
    assert got == [(9, 4, "unsafe")]
    out = fix_source(src, "utils.py", CFG, unsafe=True).source
    assert "    worker_seed = torch.initial_seed() % 2**32\n    np.random.seed(worker_seed)\n" in out, out
    assert out.replace("worker_seed = torch.initial_seed() % 2**32", "worker_seed = num_workers * rank + worker_id + seed") == src
    assert check_source(out, "utils.py", CFG) == []


def test_a_worker_init_fn_used_only_by_loaders_without_workers_stays_quiet():
    body = """
    def worker_init_fn(worker_id):
        np.random.seed(worker_id)


    def make(ds):
        return DataLoader(ds, num_workers=0, worker_init_fn=worker_init_fn)
    """
    assert check(body) == []


def test_a_worker_init_fn_named_without_fn_passes_the_text_gate():
    """No dataset or loader word in the file: the gate's text stage lets ``worker_init`` through."""
    src = "import numpy as np\n\n\ndef seed_worker_init(worker_id, seed=7):\n    np.random.seed(seed + worker_id)\n"
    assert [(f.line, f.col) for f in check_source(src, "seeding.py", CFG)] == [(5, 4)]
