"""FRK602 follows a seeding helper of another module of the project (the index's ``Method.seeds``):
``worker_init_fn=partial(_init, initial_seed=seed)`` whose ``_init`` calls
``set_global_seed(initial_seed + worker_id)`` from ``utils/misc.py``, which passes its parameter to
``random.seed`` / ``np.random.seed``. The catalyst shape, from the labelled real-world corpus."""

from __future__ import annotations

from pathlib import Path

import subprocess
import sys

import pytest

from tests.test_index import forksafe, write

MISC = """\
    import random

    import numpy as np


    def set_global_seed(seed):
        random.seed(seed)
        np.random.seed(seed)


    def set_shifted_seed(seed):
        seed = seed + 1
        np.random.seed(seed)


    def set_fresh_seed(seed):
        import torch

        np.random.seed(torch.initial_seed() % 2**32)
    """

LOADERS = """\
    from functools import partial

    from torch.utils.data import DataLoader

    from proj.misc import {helper}


    def _worker_init_fn(x, *, initial_seed):
        return {helper}(initial_seed + x)


    def get_loader(ds, initial_seed=42):
        init = partial(_worker_init_fn, initial_seed=initial_seed)
        return DataLoader(ds, num_workers=4, worker_init_fn=init)
    """


def _run(tmp_path: Path, helper: str):
    write(tmp_path, {"pyproject.toml": "", "proj/__init__.py": "", "proj/misc.py": MISC,
                     "proj/loaders.py": LOADERS.replace("{helper}", helper)})
    return forksafe(tmp_path, "proj/loaders.py", "--no-cache", "--select", "FRK602")


def test_a_seeding_helper_of_another_module(tmp_path: Path) -> None:
    r = _run(tmp_path, "set_global_seed")
    assert r.returncode == 1, r.stderr
    (line,) = [x for x in r.stdout.splitlines() if " FRK602 " in x]
    misc = Path("proj/misc.py")
    assert line == (f"{Path('proj/loaders.py')}:9:12: FRK602 [~] worker_init_fn _worker_init_fn() seeds from "
                    f"constants and the worker id only (set_global_seed seeds from it in {misc}:6)")
    fixed = subprocess.run([sys.executable, "-m", "flake8_forksafe", "fix", "--no-cache", "--select", "FRK602",
                            "--unsafe-fixes", "proj/loaders.py"], cwd=tmp_path, capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "return set_global_seed(torch.initial_seed() % 2**32)" in (tmp_path / "proj/loaders.py").read_text()


@pytest.mark.parametrize("helper", ["set_shifted_seed", "set_fresh_seed"])
def test_a_helper_that_does_not_seed_from_its_parameter_as_given(tmp_path: Path, helper: str) -> None:
    r = _run(tmp_path, helper)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " FRK602 " not in r.stdout
