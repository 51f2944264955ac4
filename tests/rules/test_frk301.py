"""FRK301: exact findings and messages, what is not reported, exact fixes."""

from __future__ import annotations

import textwrap

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.fix import fix_source
from tests.rules._support import ALL, check_dedented, fix_dedented

CFG = Config(select=("FRK301",))
HEAD = "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"


def check(body, cfg=CFG):
    return check_dedented(body, "ds.py", cfg, HEAD)


def findings(body, cfg=CFG):
    return [(f.code, f.line, f.col, f.fix) for f in check(body, cfg)]


def fixed(body, cfg=CFG):
    return fix_dedented(body, "ds.py", cfg, HEAD)


def test_message():
    (f,) = check(
        """
        class DS(Dataset):
            def __init__(self, x):
                self.x = x.cuda()

            def __getitem__(self, i):
                return self.x[i]
        """
    )
    assert (f.line, f.col, f.fix) == (6, 17, "unsafe")
    assert f.message == (
        ".cuda() in DS.__init__ puts data on the GPU in the parent process: forked DataLoader workers fail "
        "with 'Cannot re-initialize CUDA in forked subprocess' and spawn workers each create a CUDA context; "
        "keep the dataset's tensors on the CPU, pass pin_memory=True to the DataLoader and move each batch "
        "to the GPU in the training loop"
    )


def test_torch_cuda_call_message_and_no_fix():
    (f,) = check(
        """
        class DS(Dataset):
            def __init__(self, rank):
                torch.cuda.set_device(rank)

            def __getitem__(self, i):
                return i
        """
    )
    assert (f.line, f.col, f.fix) == (6, 8, None)
    assert f.message.startswith("torch.cuda.set_device() in DS.__init__ initialises CUDA in the parent process:")
    assert f.message.endswith("keep CUDA out of the dataset and set the device in the training script")


@pytest.mark.parametrize(
    "expr,col",
    [
        ('x.to("cuda:1")', 17),
        ("x.to(torch.device('cuda', 0))", 17),
        ("x.to(0)", 17),
        ('x.to(device="cuda", dtype=torch.half)', 17),
        ("torch.zeros(3, device=torch.cuda.current_device())", 17),
        ('torch.load("w.pt", map_location="cuda")', 17),
        ("x.to(DEVICE)", 17),
        ("x.to(dev)", 17),
        ("x.to(self.device)", 17),
        ('x.to(f"cuda:{dev}")', 17),
        ('x.to("cuda:" + str(1))', 17),
    ],
)
def test_cuda_values(expr, col):
    body = f"""
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

    class DS(Dataset):
        def __init__(self, x, dev="cuda"):
            self.device = dev or "cpu"
            self.x = {expr}

        def __getitem__(self, i):
            return self.x[i]
    """
    assert findings(body) == [("FRK301", 9, col, "unsafe")]


@pytest.mark.parametrize(
    "expr",
    [
        "x.to(torch.float16)",
        'x.to("cpu")',
        "x.to(dev)",  # a parameter without a default
        "torch.zeros(3, device='cpu')",
        "x.to(memory_format=torch.channels_last)",
        "torch.cuda.is_available() and x",
        "torch.cuda.manual_seed(0) or x",
    ],
)
def test_not_cuda(expr):
    body = f"""
    class DS(Dataset):
        def __init__(self, x, dev):
            self.x = {expr}

        def __getitem__(self, i):
            return self.x[i]
    """
    assert findings(body) == []


def test_base_init_helper_and_len_are_parent_side():
    got = findings(
        """
        def load(p):
            return torch.load(p).cuda()

        class Base(Dataset):
            def __init__(self, p):
                self.w = load(p)

        class DS(Base):
            def __init__(self, p):
                super().__init__(p)
                self._prepare()

            def _prepare(self):
                self.mask = torch.ones(3).to("cuda")

            def __len__(self):
                return int(torch.zeros(1, device="cuda").numel())

            def __getitem__(self, i):
                return self.w[i] * self.mask
        """
    )
    # the module-level helper is reported without a fix (the training loop may use it too)
    assert got == [
        ("FRK301", 5, 11, None),
        ("FRK301", 17, 20, "unsafe"),
        ("FRK301", 20, 19, "unsafe"),
    ]


def test_num_workers_zero_exempts_only_that_dataset():
    body = """
    class GpuDS(Dataset):
        def __init__(self, x):
            self.x = x.cuda()

        def __getitem__(self, i):
            return self.x[i]

    class OtherDS(Dataset):
        def __init__(self, x):
            self.x = x.cuda()

        def __getitem__(self, i):
            return self.x[i]

    a = DataLoader(GpuDS(1), num_workers=0)
    b = DataLoader(OtherDS(1), num_workers=2)
    """
    assert findings(body) == [("FRK301", 13, 17, "unsafe")]


def test_fix_drops_moves_and_keeps_dtype_and_comments():
    body = """
    class DS(Dataset):
        def __init__(self, x, model, device="cuda"):
            self.x = x.to(device, torch.float16)  # keep the dtype
            self.y = (x * 2).to(
                device=device,
                non_blocking=True,
            )
            self.model = model.eval().cuda()
            self.model.to(device)
            x = x.to(device)
            n = 1; model.cuda(); m = 2
            self.t = torch.tensor([1, 2], device=device)
            self.u = make(device=device)

        def __getitem__(self, i):
            return self.x[i]
    """
    assert fixed(body) == textwrap.dedent(
        """
        class DS(Dataset):
            def __init__(self, x, model, device="cuda"):
                self.x = x.to(torch.float16)  # keep the dtype
                self.y = (x * 2)
                self.model = model.eval()
                n = 1; m = 2
                self.t = torch.tensor([1, 2])
                self.u = make(device="cpu")

            def __getitem__(self, i):
                return self.x[i]
        """
    )


def test_fix_of_an_only_statement_leaves_pass_and_is_clean():
    body = """
    class DS(Dataset):
        def __init__(self, model):
            self.model = model
            if model is not None:
                self.model.cuda()

        def __getitem__(self, i):
            return self.model(i)
    """
    out = fixed(body)
    assert "        if model is not None:\n            pass\n" in out
    res = fix_source(HEAD + out, "ds.py", ALL, unsafe=True)
    assert not res.changed and res.remaining == []


def test_noqa_is_respected_by_check_and_fix():
    body = """
    class DS(Dataset):
        def __init__(self, x):
            self.x = x.cuda()  # noqa: FRK301

        def __getitem__(self, i):
            return self.x[i]
    """
    assert findings(body) == []
    assert fixed(body) == textwrap.dedent(body)
