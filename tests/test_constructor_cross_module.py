"""FRK201/FRK202: a lambda or local function passed into a dataset constructor of another module of
the project: a dataset class imported from there, or a function there that makes datasets of its
arguments (continuum's ``TaskSet(x, y, t, trsf, target_trsf, ...)`` picks a task-set class by data
type). The file calling it has no dataset class and no loader of its own: the gate lets it through
because the index resolves the imported name (tmp-dir projects, checked with the real CLI)."""

from __future__ import annotations

from pathlib import Path

from tests.test_index import forksafe, write

TASKS = """\
    from torch.utils.data import Dataset


    class BaseTaskSet(Dataset):
        def __init__(self, x, trsf=None, target_trsf=None, label_fn=None):
            self.x = x
            self.trsf = trsf
            self.target_trsf = target_trsf
            self.names = [label_fn(v) for v in x]

        def __getitem__(self, i):
            return self.target_trsf(self.x[i])


    class ArrayTaskSet(BaseTaskSet):
        pass


    def TaskSet(x, trsf=None, target_trsf=None, label_fn=None, kind="array"):
        if kind == "array":
            task_set = ArrayTaskSet(x, trsf=trsf, target_trsf=target_trsf, label_fn=label_fn)
        else:
            task_set = BaseTaskSet(x, trsf=trsf, target_trsf=target_trsf, label_fn=label_fn)
        return task_set


    def describe(x, fmt=None):
        return [fmt(v) for v in x]
    """

SCENARIO = """\
    from torchvision import transforms

    from cl.tasks import ArrayTaskSet, TaskSet, describe


    class Scenario:
        def __init__(self, increments):
            self.increments = increments

        def _label_trsf(self, k):
            return transforms.Lambda(lambda v: v + sum(self.increments[:k]))

        def imported_class(self, x):
            return ArrayTaskSet(x, target_trsf=lambda v: v + 1)

        def factory(self, x, k):
            return TaskSet(x, target_trsf=self._label_trsf(k))

        def only_used_while_constructing(self, x):
            return TaskSet(x, label_fn=lambda v: str(v))

        def not_a_dataset(self, x):
            return describe(x, fmt=lambda v: f"{v:.2f}")
    """


def test_dataset_classes_and_dataset_factories_of_another_module(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "", "cl/__init__.py": "", "cl/tasks.py": TASKS, "cl/scenario.py": SCENARIO})
    r = forksafe(tmp_path, "cl/scenario.py", "--no-cache", "--select", "FRK201,FRK202")
    assert r.returncode == 1, r.stderr
    out = [line for line in r.stdout.splitlines() if " FRK" in line]
    where = str(Path("cl/scenario.py"))
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{where}:11:34:", "FRK201"], [f"{where}:14:44:", "FRK201"]]
    assert out[0].endswith("lambda passed to the dataset constructor TaskSet()")
    assert out[1].split(" ", 2)[2].startswith("[*] lambda passed to the dataset constructor ArrayTaskSet()")


def test_without_the_project_the_file_is_quiet(tmp_path: Path) -> None:
    """The same file alone (its imports unresolved): nothing says TaskSet makes datasets."""
    write(tmp_path, {"pyproject.toml": "", "cl/__init__.py": "", "cl/scenario.py": SCENARIO})
    r = forksafe(tmp_path, "cl/scenario.py", "--no-cache", "--select", "FRK201,FRK202")
    assert r.returncode == 0 and r.stdout.strip() == "", r.stdout + r.stderr
