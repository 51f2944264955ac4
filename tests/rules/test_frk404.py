"""FRK404: exact findings, the CUDA condition, exact fixes."""

from __future__ import annotations

import textwrap

import pytest

from flake8_forksafe.config import Config
from tests.rules._support import check_dedented, fix_dedented

CFG = Config(select=("FRK404",))


def check(src, cfg=CFG):
    return check_dedented(src, "train.py", cfg)


def fixed(src):
    return fix_dedented(src, "train.py", CFG)


def test_message_and_position_of_keyword():
    src = """
    import torch
    from torch.utils.data import DataLoader

    def make(ds):
        torch.ones(1).cuda()
        return DataLoader(ds, num_workers=2, multiprocessing_context="fork")
    """
    (f,) = check(src)
    assert (f.line, f.col, f.fix) == (7, 41, "unsafe")
    assert f.message == (
        "multiprocessing_context=\"fork\" chooses the fork start method in a module that uses CUDA: a forked "
        "child cannot use the CUDA the parent initialised ('Cannot re-initialize CUDA in forked subprocess'); "
        "use \"spawn\" (or \"forkserver\"), with a picklable dataset and an if __name__ == \"__main__\": guard"
    )


@pytest.mark.parametrize(
    "cuda",
    [
        "torch.cuda.is_available()",
        "model.to('cuda:0')",
        "torch.zeros(1, device=DEV)",
        "torch.load('m.pt', map_location=0)",
        "torch.cuda.set_device(0)",
    ],
)
def test_any_cuda_use_in_the_module_counts(cuda):
    src = f"""
    import multiprocessing as mp
    import torch

    DEV = torch.device("cuda")

    def run(model):
        return {cuda}

    if __name__ == "__main__":
        mp.set_start_method("fork", force=True)
    """
    assert [(f.line, f.col) for f in check(src)] == [(11, 4)]


def test_no_cuda_no_finding():
    src = """
    import multiprocessing as mp
    import torch

    DEV = torch.device("cpu")

    def run(model):
        return model.to(DEV), torch.zeros(2, device="cpu")

    if __name__ == "__main__":
        mp.set_start_method("fork", force=True)
        ctx = mp.get_context("fork")
    """
    assert check(src) == []


def test_forms_and_fix():
    src = '''
    import multiprocessing
    import torch.multiprocessing as tmp
    from multiprocessing import get_context, set_start_method

    def go(ds):
        model = torch_model().cuda()
        a = get_context("fork")
        b = tmp.get_context(method='fork')
        c = multiprocessing.get_context("""fork""")
        d = get_context("spawn")
        set_start_method(method="fork")
    '''
    assert [(f.line, f.col) for f in check(src)] == [(8, 8), (9, 8), (10, 8), (12, 4)]
    assert fixed(src) == textwrap.dedent(
        '''
        import multiprocessing
        import torch.multiprocessing as tmp
        from multiprocessing import get_context, set_start_method

        def go(ds):
            model = torch_model().cuda()
            a = get_context("spawn")
            b = tmp.get_context(method='spawn')
            c = multiprocessing.get_context("""spawn""")
            d = get_context("spawn")
            set_start_method(method="spawn")
        '''
    )


def test_name_bound_to_fork_is_reported_without_fix():
    src = """
    import torch
    import torch.multiprocessing as mp

    METHOD = "fork"

    if __name__ == "__main__":
        torch.cuda.init()
        mp.set_start_method(METHOD, force=True)
    """
    assert [(f.line, f.col, f.fix) for f in check(src)] == [(9, 4, None)]
    assert fixed(src) == textwrap.dedent(src)
