"""FRK301 and a project class or function given ``device=<CUDA>``: reported only when the callee
(in another module of the project) lets the device reach CUDA work on the parent side; a callee
that only stores the device string and loads its model lazily is not a finding (tmp-dir projects,
checked with the real CLI)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

from tests.helpers import ran
from tests.test_index import forksafe, write

DATASET = """\
    from torch.utils.data import Dataset

    from {mod} import {name}


    class Clips(Dataset):
        def __init__(self, root):
            self.root = root
            self.tool = {name}({args})

        def __len__(self):
            return 10

        def __getitem__(self, i):
            return self.tool.run(i)
    """

LAZY = """\
    import torch


    class Aligner:
        def __init__(self, model=None, device=None, frame=0.02):
            self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
            self.frame = frame
            self.model = model
            self.loaded = False

        def _load(self):
            if self.device == "cuda":
                print("loading on", self.device)
            self.model = torch.load("m.pt", map_location=torch.device(self.device))
            self.loaded = True

        def run(self, i):
            if not self.loaded:
                self._load()
            return self.model(i)
    """

EAGER = """\
    import torch


    class Embedder:
        def __init__(self, path, device="cpu"):
            self.device = device
            self._build(path)

        def _build(self, path):
            net = torch.load(path)
            self.net = net.to(self.device)

        def run(self, i):
            return self.net(i)
    """

PASSING = """\
    import torch

    from tools.nets import make_net


    class Wrapper:
        def __init__(self, device):
            self.net = make_net("m.pt", dev=device)

        def run(self, i):
            return self.net(i)
    """

NETS = """\
    import torch


    def make_net(path, dev="cpu"):
        return torch.load(path, map_location=dev)


    def describe(path, dev="cpu"):
        return f"{path} on {dev}"
    """

EXTERNAL = """\
    from somelib import Model


    class Remote:
        def __init__(self, device="cpu"):
            self.model = Model(device=device)

        def run(self, i):
            return self.model(i)
    """


def _findings(tmp_path: Path, files: Dict[str, str], target: str = "data/clips.py") -> List[str]:
    write(tmp_path, {"pyproject.toml": "", "data/__init__.py": "", "tools/__init__.py": "", **files})
    r = forksafe(tmp_path, target, "--no-cache", "--select", "FRK301")
    ran(r)
    return [line for line in r.stdout.splitlines() if " FRK" in line]


def _clips(mod: str, name: str, args: str) -> str:
    return DATASET.replace("{mod}", mod).replace("{name}", name).replace("{args}", args)


def test_project_class_that_only_stores_the_device_is_not_reported(tmp_path: Path) -> None:
    out = _findings(tmp_path, {"tools/align.py": LAZY,
                               "data/clips.py": _clips("tools.align", "Aligner", 'device="cuda", frame=0.04')})
    assert out == []


def test_project_class_that_moves_a_model_to_the_device_is_reported_naming_the_module(tmp_path: Path) -> None:
    out = _findings(tmp_path, {"tools/embed.py": EAGER,
                               "data/clips.py": _clips("tools.embed", "Embedder", '"w.pt", device="cuda"')})
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('data/clips.py')}:9:21:", "FRK301"]]
    assert f"(the device is used in Embedder._build, {Path('tools/embed.py')}:11)" in out[0]


def test_device_passed_on_to_a_project_function_that_loads_onto_it(tmp_path: Path) -> None:
    out = _findings(tmp_path, {"tools/nets.py": NETS, "tools/wrap.py": PASSING,
                               "data/clips.py": _clips("tools.wrap", "Wrapper", "device='cuda:0'")})
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('data/clips.py')}:9:21:", "FRK301"]]
    assert f"(the device is used in tools.nets.make_net, {Path('tools/nets.py')}:5)" in out[0]


def test_project_function_that_only_formats_the_device_is_not_reported(tmp_path: Path) -> None:
    ds = _clips("tools.nets", "describe", '"m.pt", dev="cuda"').replace("dev=", "device=").replace(
        "def describe(path, dev", "def describe(path, device")
    nets = NETS.replace('def describe(path, dev="cpu"):\n        return f"{path} on {dev}"',
                        'def describe(path, device="cpu"):\n        return f"{path} on {device}"')
    assert nets != NETS
    out = _findings(tmp_path, {"tools/nets.py": nets, "data/clips.py": ds})
    assert out == []


def test_callee_passing_the_device_into_an_installed_package_keeps_the_finding(tmp_path: Path) -> None:
    out = _findings(tmp_path, {"tools/remote.py": EXTERNAL,
                               "data/clips.py": _clips("tools.remote", "Remote", 'device="cuda"')})
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('data/clips.py')}:9:21:", "FRK301"]]
    assert "the device is used in" not in out[0]


def test_unresolvable_callee_keeps_the_finding(tmp_path: Path) -> None:
    out = _findings(tmp_path, {"data/clips.py": _clips("somelib.align", "Aligner", 'device="cuda"')})
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('data/clips.py')}:9:21:", "FRK301"]]


def test_lazy_class_whose_init_reaches_the_device_through_a_self_method_is_reported(tmp_path: Path) -> None:
    lazy = LAZY.replace("            self.loaded = False\n",
                        "            self.loaded = False\n            self._load()\n", 1)
    assert lazy != LAZY
    out = _findings(tmp_path, {"tools/align.py": lazy,
                               "data/clips.py": _clips("tools.align", "Aligner", 'device="cuda"')})
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('data/clips.py')}:9:21:", "FRK301"]]
    assert f"(the device is used in Aligner._load, {Path('tools/align.py')}:15)" in out[0]
