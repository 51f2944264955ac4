"""FRK401 across modules: unguarded module-level code iterates, or hands to a training framework's
``.fit`` / ``.train`` / ..., a DataLoader that a function of another module of the project returns
(the index's ``Method.returns`` "loader:<workers>"): ``DataLoader(ds, **params)`` (any
``num_workers``, as in one module), ``num_workers=workers`` with the call's argument or the
parameter's default deciding, ``num_workers=0`` never (super-gradients' example scripts, session 12's
holdout, seen: four misses there). tmp-dir projects checked with the real CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

from tests.helpers import ran
from tests.test_index import forksafe, write

LOADERS = """\
    from torch.utils.data import DataLoader


    def get_data_loader(dataset, dataloader_params):
        loader = DataLoader(dataset=dataset, **dataloader_params)
        return loader


    def cifar_train(dataset_params=None, dataloader_params=None):
        return get_data_loader(list(range(10)), dataloader_params or {})


    def get_loader(ds, batch_size=4, workers=2):
        return DataLoader(ds, batch_size=batch_size, num_workers=workers)


    def quiet_loader(ds, workers=0):
        return DataLoader(ds, num_workers=workers)


    def serial_loader(ds):
        return DataLoader(ds, batch_size=2)
    """

SCRIPT = """\
    from tools import Trainer
    from proj import loaders
    from proj.loaders import get_loader

    trainer = Trainer("run")
    trainer.train(model=None, train_loader=loaders.cifar_train())
    """


def _run(tmp_path: Path, files: Dict[str, str]) -> List[str]:
    write(tmp_path, {"pyproject.toml": "", "proj/__init__.py": "", "proj/loaders.py": LOADERS, **files})
    r = forksafe(tmp_path, ".", "--no-cache", "--select", "FRK401")
    ran(r)
    return [line for line in r.stdout.splitlines() if " FRK" in line]


def test_unguarded_script_passing_a_project_loader_to_train(tmp_path: Path) -> None:
    out = _run(tmp_path, {"scripts/run.py": SCRIPT})
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('scripts/run.py')}:6:1:", "FRK401"]]
    assert "passes `loaders.cifar_train()`, a DataLoader with worker processes, to .train()" in out[0]
    guarded = SCRIPT.replace('trainer = Trainer("run")\n', 'if __name__ == "__main__":\n    trainer = Trainer("run")\n    ').replace(
        "\ntrainer.train(", "\n    trainer.train(")
    assert _run(tmp_path, {"scripts/run.py": guarded}) == []


def test_the_argument_or_the_default_of_the_workers_parameter_decides(tmp_path: Path) -> None:
    cases = {
        "for b in get_loader([1, 2]):\n    pass\n": True,  # default workers=2
        "for b in get_loader([1, 2], workers=0):\n    pass\n": False,
        "for b in get_loader([1, 2], 4, 0):\n    pass\n": False,  # positional
        "for b in get_loader([1, 2], workers=3):\n    pass\n": True,
        "from proj.loaders import quiet_loader\nfor b in quiet_loader([1, 2]):\n    pass\n": False,
        "from proj.loaders import serial_loader\nfor b in serial_loader([1, 2]):\n    pass\n": False,
        "from proj.loaders import cifar_train\nfor b in cifar_train():\n    pass\n": True,
    }
    for body, expected in cases.items():
        script = "from proj.loaders import get_loader\n" + body
        out = _run(tmp_path, {"scripts/run.py": script})
        assert bool(out) is expected, (body, out)
