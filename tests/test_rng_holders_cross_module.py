"""FRK601 across modules: a helper class whose ``__init__`` keeps an RNG object, whose objects a
dataset of another module of the project keeps on the parent side and calls in its workers
(pytorch3dunet's ``RandomScaler``, kept by ``AbstractHDF5Dataset.random_scaler``: a miss of session
13's second holdout, seen, then fixed). Reported at the RNG constructor in the helper's module, naming
the dataset, as FRK101 reports a handle holder. tmp-dir projects checked with the real CLI."""

from __future__ import annotations

from pathlib import Path

from tests.test_index import forksafe, write

SCALER = """\
    import numpy as np
    {extra}

    class RandomScaler:
        def __init__(self, scale_range, seed=47):
            self.scale_range = scale_range
            self.rs = np.random.RandomState(seed)

        def randomize(self, idx):
            return idx + self.rs.randint(self.scale_range)
    """

CONFIG_DATASET = """
    from torch.utils.data import Dataset


    class ConfigDataset(Dataset):
        def __getitem__(self, i):
            return i
    """

HDF5 = """\
    from torch.utils.data import Dataset

    from vol.utils import RandomScaler


    class VolumeDataset(Dataset):
        def __init__(self, n, random_scale=None):
            self.n = n
            self.random_scaler = RandomScaler(random_scale) if random_scale else None

        def __getitem__(self, i):
            if self.random_scaler is not None:
                i = self.random_scaler.randomize(i)
            return i
    """


def _run(tmp_path: Path, files: dict) -> list:
    write(tmp_path, {"pyproject.toml": "", "vol/__init__.py": "", **files})
    r = forksafe(tmp_path, ".", "--no-cache", "--select", "FRK601")
    return [line for line in r.stdout.splitlines() if " FRK601 " in line]


def test_an_rng_kept_by_a_helper_a_dataset_of_another_module_keeps(tmp_path: Path) -> None:
    out = _run(tmp_path, {"vol/utils.py": SCALER.format(extra=""), "vol/hdf5.py": HDF5})
    assert len(out) == 1 and out[0].startswith(f"{Path('vol/utils.py')}:7:19: FRK601 "), out
    assert "RandomState() created in RandomScaler.__init__ and kept in self.rs (RandomScaler is not a dataset, but" in out[0]
    assert "dataset VolumeDataset keeps its objects in self.random_scaler" in out[0]


def test_the_same_when_the_helpers_module_has_a_dataset_of_its_own(tmp_path: Path) -> None:
    """The gate passes such a module (its own dataset class): the slicer keeps the helper too."""
    out = _run(tmp_path, {"vol/utils.py": SCALER.format(extra=CONFIG_DATASET), "vol/hdf5.py": HDF5})
    assert len(out) == 1 and "RandomScaler is not a dataset" in out[0], out


def test_a_helper_no_dataset_keeps_is_quiet(tmp_path: Path) -> None:
    hdf5 = HDF5.replace("RandomScaler(random_scale) if random_scale else None", "None")
    assert _run(tmp_path, {"vol/utils.py": SCALER.format(extra=CONFIG_DATASET), "vol/hdf5.py": hdf5}) == []
