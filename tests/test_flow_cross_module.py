"""Facts from a base class ``__init__`` in another module of the project reach FRK203, FRK301 and
FRK601, and the message names the other module (tmp-dir projects, checked with the real CLI)."""

from __future__ import annotations

from pathlib import Path

from tests.test_index import forksafe, write

BASE = """\
    import numpy as np
    import torch


    class SpeechBase:
        def __init__(self, root, seed=0):
            self.root = root
            self.rng = np.random.default_rng(seed)
            self.pending = (p for p in root)
            self.mean = torch.zeros(80, device="cuda")
    """

SUB = """\
    from torch.utils.data import DataLoader, Dataset

    from speech.base import SpeechBase


    class Clips(SpeechBase, Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return self.rng.normal() + float(next(self.pending))


    def make(root):
        return DataLoader(Clips(root), batch_size=2, num_workers={workers})
    """


def test_base_class_in_another_module_feeds_frk203_301_601(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "", "speech/__init__.py": "", "speech/base.py": BASE,
                     "speech/clips.py": SUB.replace("{workers}", "2")})
    r = forksafe(tmp_path, "speech/clips.py", "--no-cache", "--select", "FRK203,FRK301,FRK601")
    assert r.returncode == 1, r.stderr
    base = Path("speech/base.py")
    where = f"{Path('speech/clips.py')}:6:1:"
    out = [line for line in r.stdout.splitlines() if " FRK" in line]  # findings, not the summary
    assert [line.split(" ", 2)[:2] for line in out] == [
        [where, "FRK203"], [where, "FRK301"], [where, "FRK601"],
    ]
    assert f"self.pending is created on the parent side (in base class SpeechBase.__init__, {base}:9)" in out[0]
    assert f"self.mean is made on the parent side (in base class SpeechBase.__init__, {base}:10)" in out[1]
    assert out[2].split(" ", 2)[2].startswith(
        f"np.random.default_rng() kept in self.rng is created on the parent side (in base class "
        f"SpeechBase.__init__, {base}:8)"
    )


def test_base_class_facts_need_workers_and_the_project(tmp_path: Path, tmp_path_factory) -> None:
    write(tmp_path, {"pyproject.toml": "", "speech/__init__.py": "", "speech/base.py": BASE,
                     "speech/clips.py": SUB.replace("{workers}", "0")})
    r = forksafe(tmp_path, "speech/clips.py", "--no-cache", "--select", "FRK301,FRK601")
    assert r.returncode == 0 and r.stdout == "", r.stdout
    # the subclass alone, outside its project: the base is unknown, nothing to report
    alone = write(tmp_path_factory.mktemp("alone"), {"clips.py": SUB.replace("{workers}", "2")})
    r = forksafe(alone, "clips.py", "--no-cache")
    assert r.returncode == 0 and r.stdout == "", r.stdout


UTILS = """\
    import torch


    def apply_to_sample(f, sample):
        return {k: f(v) for k, v in sample.items()}


    def move_to_cuda(sample, device=None):
        device = device or torch.cuda.current_device()
        return apply_to_sample(lambda t: t.to(device=device, non_blocking=True), sample)


    def to_gpu(sample):
        return move_to_cuda(sample)


    def move_to_cpu(sample):
        return apply_to_sample(lambda t: t.cpu(), sample)


    def device_name():
        return "cuda" if torch.cuda.is_available() else "cpu"
    """

BACKTRANSLATE = """\
    import torch
    from torch.utils.data import Dataset

    from mt import utils
    from mt.utils import to_gpu


    def translate(samples, collate, cuda=True):
        batch = collate(samples)
        return utils.move_to_cuda(batch) if cuda else batch


    class Backtranslation(Dataset):
        def __init__(self, items):
            self.items = items
            self.device = utils.device_name()

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return utils.move_to_cpu(self.items[i])

        def collater(self, samples):
            return translate(samples, dict)

        def prefetch(self, samples):
            return to_gpu(samples)
    """


def test_cuda_in_a_helper_of_another_module_is_frk302(tmp_path: Path) -> None:
    """The CUDA call is in ``mt/utils.py``; the worker-side code (the ``collater``, by convention the
    loader's collate_fn, and a same-module function it calls) calls it: reported on the call, with
    where the CUDA call is. Helpers that only query CUDA or stay on the CPU are not, nor is a method
    no worker-side code reaches."""
    write(tmp_path, {"pyproject.toml": "", "mt/__init__.py": "", "mt/utils.py": UTILS,
                     "mt/backtranslation.py": BACKTRANSLATE})
    r = forksafe(tmp_path, "mt/backtranslation.py", "--no-cache", "--select", "FRK3")
    assert r.returncode == 1, r.stderr
    out = [line for line in r.stdout.splitlines() if " FRK" in line]
    assert len(out) == 1, out
    where, code, message = out[0].split(" ", 2)
    assert (where, code) == (f"{Path('mt/backtranslation.py')}:10:12:", "FRK302")
    assert message.startswith(
        f"utils.move_to_cuda() (CUDA: torch.cuda.current_device() in mt.utils.move_to_cuda, "
        f"{Path('mt/utils.py')}:9) in translate() (called from Backtranslation.collater) initialises CUDA"
    )


def test_cuda_helper_reached_through_another_helper_and_from_init(tmp_path: Path) -> None:
    """``to_gpu`` calls ``move_to_cuda`` (followed through the project); called in ``__init__`` it
    is FRK301, called from ``__getitem__`` FRK302; a CPU-only helper is neither."""
    sub = """\
        from torch.utils.data import Dataset

        from mt.utils import move_to_cpu, to_gpu


        class Cached(Dataset):
            def __init__(self, items):
                self.items = to_gpu(items)

            def __len__(self):
                return len(self.items)

            def __getitem__(self, i):
                return to_gpu(move_to_cpu(self.items[i]))
        """
    write(tmp_path, {"pyproject.toml": "", "mt/__init__.py": "", "mt/utils.py": UTILS, "mt/cached.py": sub})
    r = forksafe(tmp_path, "mt/cached.py", "--no-cache", "--select", "FRK3")
    assert r.returncode == 1, r.stderr
    out = [line.split(" ", 2)[:2] for line in r.stdout.splitlines() if " FRK" in line]
    assert out == [[f"{Path('mt/cached.py')}:8:22:", "FRK301"], [f"{Path('mt/cached.py')}:14:16:", "FRK302"]]
    assert "CUDA: torch.cuda.current_device() in mt.utils.move_to_cuda" in r.stdout


def test_cuda_device_stored_by_a_base_in_another_module(tmp_path: Path) -> None:
    """A base class in another module stores a CUDA device string (under a condition too); the
    subclass uses it in ``__init__`` (FRK301) and ``__getitem__`` (FRK302). A base that stores "cpu"
    gives nothing."""
    base = """\
        import torch


        class DeviceBase:
            def __init__(self):
                self.device = "cuda" if torch.cuda.is_available() else "cpu"
                self.cpu = "cpu"
        """
    sub = """\
        import torch
        from torch.utils.data import Dataset

        from gpu.base import DeviceBase


        class Feats(DeviceBase, Dataset):
            def __init__(self, data):
                super().__init__()
                self.table = torch.as_tensor(data).to(self.device)
                self.other = torch.zeros(3, device=self.cpu)

            def __len__(self):
                return 3

            def __getitem__(self, i):
                return torch.ones(2, device=self.device)
        """
    write(tmp_path, {"pyproject.toml": "", "gpu/__init__.py": "", "gpu/base.py": base, "gpu/feats.py": sub})
    r = forksafe(tmp_path, "gpu/feats.py", "--no-cache", "--select", "FRK3")
    assert r.returncode == 1, r.stderr
    out = [line.split(" ", 2)[:2] for line in r.stdout.splitlines() if " FRK" in line]
    assert out == [[f"{Path('gpu/feats.py')}:10:22:", "FRK301"], [f"{Path('gpu/feats.py')}:17:16:", "FRK302"]], r.stdout


def test_stored_on_self_and_passed_to_a_loader_by_a_base_in_another_module(tmp_path: Path) -> None:
    """A base class in another module passes ``collate_fn=self.collate_fn`` to a DataLoader with
    workers; the subclass stores a lambda (FRK201) or a local function (FRK202) there. A module-level
    function, and an attribute the base gives only to a loader with num_workers=0, are fine."""
    base = """\
        from torch.utils.data import DataLoader


        class BaseModule:
            def __init__(self, ds, workers=4):
                self.ds = ds
                self.workers = workers

            def train_dataloader(self):
                return DataLoader(self.ds, batch_size=8, num_workers=self.workers, collate_fn=self.collate_fn)

            def val_dataloader(self):
                return DataLoader(self.ds, num_workers=0, worker_init_fn=self.init_fn)
        """
    model = """\
        from tr.base import BaseModule


        def pad(batch):
            return batch


        class Model(BaseModule):
            def __init__(self, ds, pad_id=0):
                super().__init__(ds)
                self.collate_fn = lambda b: [x + [pad_id] for x in b]
                self.init_fn = lambda i: None


        class Local(BaseModule):
            def __init__(self, ds, pad_id=0):
                super().__init__(ds)

                def collate(b):
                    return [x + [pad_id] for x in b]

                self.collate_fn = collate


        class Plain(BaseModule):
            def __init__(self, ds):
                super().__init__(ds)
                self.collate_fn = pad
        """
    write(tmp_path, {"pyproject.toml": "", "tr/__init__.py": "", "tr/base.py": base, "tr/model.py": model})
    r = forksafe(tmp_path, ".", "--no-cache")
    assert r.returncode == 1, r.stderr
    out = [line.split(" ", 2) for line in r.stdout.splitlines() if " FRK" in line]
    assert [o[:2] for o in out] == [[f"{Path('tr/model.py')}:11:27:", "FRK201"], [f"{Path('tr/model.py')}:19:9:", "FRK202"]]
    assert f"which base class BaseModule.train_dataloader passes to a DataLoader with workers ({Path('tr/base.py')}:10)" in out[0][2]


def test_closure_factory_result_kept_by_a_base_in_another_module(tmp_path: Path) -> None:
    """A staticmethod / module-level closure factory returns a local def (or lambda); its result is
    passed to ``super().__init__`` of a base in another module. Flagged (at the local def or lambda,
    naming the base ``__init__`` that keeps it) only for the parameters that base stores on ``self``:
    ``sampler`` is only called there."""
    base = """\
        from torch.utils.data import Dataset


        class ClipBase(Dataset):
            def __init__(self, items, sampler, transform=None, frame_filter=None):
                self.items = items
                self.clips = sampler(items)
                self._transform = transform
                self._frame_filter = frame_filter

            def __getitem__(self, i):
                return self._transform(self._frame_filter(self.clips[i]))
        """
    rec = """\
        from vid.base import ClipBase


        def make_filter(n):
            return lambda frames: frames[::n]


        class Recognition(ClipBase):
            def __init__(self, items, transform=None, frames=None):
                super().__init__(
                    items,
                    Recognition._sampler(2),
                    Recognition._wrap(transform),
                    frame_filter=make_filter(frames) if frames else None,
                )

            @staticmethod
            def _wrap(transform):
                def transform_clip(clip):
                    return transform(clip) if transform else clip

                return transform_clip

            @staticmethod
            def _sampler(step):
                def sample(items):
                    return items[::step]

                return sample
        """
    write(tmp_path, {"pyproject.toml": "", "vid/__init__.py": "", "vid/base.py": base, "vid/rec.py": rec})
    r = forksafe(tmp_path, "vid/rec.py", "--no-cache", "--select", "FRK201,FRK202")
    assert r.returncode == 1, r.stderr
    out = [line.split(" ", 2) for line in r.stdout.splitlines() if " FRK" in line]
    assert [o[:2] for o in out] == [[f"{Path('vid/rec.py')}:5:12:", "FRK201"], [f"{Path('vid/rec.py')}:19:9:", "FRK202"]]
    kept = f"(kept by ClipBase.__init__, {Path('vid/base.py')}:5)"
    assert out[1][2] == (
        "local function transform_clip() defined inside Recognition._wrap() is passed to the base constructor "
        "of dataset Recognition " + kept
    )
    assert kept in out[0][2]
    # the base keeps nothing: nothing to report
    write(tmp_path, {"vid/base.py": base.replace("self._transform = transform", "transform(None)").replace(
        "self._frame_filter = frame_filter", "frame_filter(None)")})
    r = forksafe(tmp_path, "vid/rec.py", "--no-cache", "--select", "FRK201,FRK202")
    assert r.returncode == 0, r.stdout + r.stderr
