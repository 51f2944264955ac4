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


def scoped(src: str):
    import ast
    import textwrap

    from flake8_forksafe.index import lambda_scope_calls

    text = textwrap.dedent(src)
    got = lambda_scope_calls(ast.parse(text), text)
    return None if got is None else sorted(got)


def test_only_the_statements_holding_a_lambda_or_a_nested_def_are_followed() -> None:
    """What the gate's question resolves for a file without a dataset of its own: the names called in
    the top-level statements that hold a lambda or a def/class nested in a function (a local, a
    ``self.x`` of another method of the class, a method returning a lambda are all in that statement);
    every call when a module-level statement holds a lambda."""
    src = """
        from cl.tasks import TaskSet, describe, other


        def plain(x):
            '''Calls TaskSet(x) -- a class of the project, see the def and class keywords.'''
            return TaskSet(x), describe(x)


        class Scenario:
            def setup(self):
                self.label = lambda v: v

            def make(self, x):
                return TaskSet(x, target_trsf=self.label)


        def nested(x):
            def fmt(v):
                return str(v)

            return other(x, fmt)
        """
    assert scoped(src) == ["TaskSet", "other", "str"]
    assert scoped(src.rstrip(" ") + "        SHARED = lambda v: v\n") is None  # a module-level lambda may go anywhere
    assert scoped(src.replace("self.label = lambda v: v", "self.label = None")) == ["other", "str"]


def test_a_call_far_from_any_lambda_is_not_resolved(tmp_path: Path) -> None:
    """A file whose only lambda sits in another top-level function than its call of a project dataset
    class is rejected without resolving that class; the same file with the lambda passed is checked."""
    far = """\
        from cl.tasks import ArrayTaskSet


        def build(x):
            return ArrayTaskSet(x)


        def key(items):
            return sorted(items, key=lambda v: -v)
        """
    write(tmp_path, {"pyproject.toml": "", "cl/__init__.py": "", "cl/tasks.py": TASKS, "cl/far.py": far})
    from flake8_forksafe.config import Config
    from flake8_forksafe.engine import gate, project_anchor
    from flake8_forksafe.index import index_for

    cfg = Config(select=("FRK201", "FRK202"))
    path = str(tmp_path / "cl" / "far.py")
    for text, expected in ((far, False), (far.replace("ArrayTaskSet(x)", "ArrayTaskSet(x, trsf=lambda v: v)"), True)):
        import textwrap

        text = textwrap.dedent(text)
        (tmp_path / "cl" / "far.py").write_text(text)
        index = index_for(path, cfg.knowledge, use_cache=False, roots={})
        assert not gate(text, cfg).passes
        assert project_anchor(index, path, cfg, text) is expected
        assert ("cl.tasks" in index.summaries) is expected  # the class is resolved only when it may matter
    r = forksafe(tmp_path, "cl/far.py", "--no-cache", "--select", "FRK201,FRK202")
    assert [line.split(" ", 2)[1] for line in r.stdout.splitlines() if " FRK" in line] == ["FRK201"]


def test_flake8_plugin_reports_a_lambda_given_to_a_project_dataset_factory(tmp_path: Path) -> None:
    """The same finding from the flake8 plugin for a file without a class (the plugin used to stop
    at a rejected file without ``class ``: the CLI found it, flake8 did not)."""
    import subprocess
    import sys

    script = """\
        from cl.tasks import TaskSet


        def make(x):
            return TaskSet(x, target_trsf=lambda v: v + 1)
        """
    write(tmp_path, {"pyproject.toml": "", "cl/__init__.py": "", "cl/tasks.py": TASKS, "cl/make.py": script})
    r = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "FRK", "cl/make.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert r.returncode == 1, r.stderr
    assert [line.split(" ", 2)[:2] for line in r.stdout.splitlines()] == [[f"{Path('cl/make.py')}:5:35:", "FRK201"]]
    cli = forksafe(tmp_path, "cl/make.py", "--no-cache", "--select", "FRK")
    assert [line.split(" ", 2)[:2] for line in cli.stdout.splitlines() if " FRK" in line] == [
        [f"{Path('cl/make.py')}:5:35:", "FRK201"]
    ]


def test_names_the_package_text_proves_no_dataset_are_not_resolved(tmp_path: Path) -> None:
    """Before a name called near a lambda is resolved (a summary of its module, its bases', its
    returns'), the text of its package is read once: a class no class chain there ties to a dataset
    base name, a function whose body names no such class (nor returns a function that does), a name
    bound to a call's result: no summary is made, the file is not even parsed. A dataset class
    reached through an alias (``Dataset as TorchDataset``, ``X = a.Y``), a dataset base itself, a
    factory three calls deep and a function defined under an ``if`` are resolved as before."""
    util = """\
        import torch
        from torch.utils.data import Dataset as TorchDataset


        class Helper:
            def __init__(self, fn):
                self.fn = fn


        class Frames(TorchDataset):
            def __init__(self, fn):
                self.fn = fn

            def __getitem__(self, i):
                return self.fn(i)


        class Clips(Frames):
            pass


        Alias = Clips
        made = torch.compile(Helper)


        def pipeline(fn):
            return Helper(fn)


        def direct(fn):
            return Clips(fn)


        def outer(fn):
            return middle(fn)


        def middle(fn):
            return direct(fn)


        if torch.cuda.is_available():
            def maybe(fn):
                return Clips(fn)
        """
    write(tmp_path, {"pyproject.toml": "", "vid/__init__.py": "", "vid/util.py": util})
    from flake8_forksafe.config import Config
    from flake8_forksafe.index import index_for

    cfg = Config(select=("FRK201", "FRK202"))
    index = index_for(str(tmp_path / "vid" / "util.py"), cfg.knowledge, use_cache=False, roots={})
    index.module_for(str(tmp_path / "vid" / "util.py"))
    verdicts = {n: index.may_make_dataset(f"vid.util.{n}") for n in (
        "Helper", "Frames", "Clips", "Alias", "made", "pipeline", "direct", "outer", "middle", "maybe", "TorchDataset",
        "nowhere")}
    assert verdicts == {
        "Helper": False, "Frames": True, "Clips": True, "Alias": True, "made": False, "pipeline": False,
        "direct": True, "outer": True, "middle": True, "maybe": True, "TorchDataset": True, "nowhere": False,
    }
    assert "vid.util" not in index.summaries  # the text alone answered
    caller = """\
        from vid.util import Helper, pipeline, Clips


        def build(x):
            return Helper(lambda v: v), pipeline(lambda v: v)
        """
    write(tmp_path, {"vid/caller.py": caller})
    r = forksafe(tmp_path, "vid/caller.py", "--no-cache", "--select", "FRK201,FRK202")
    assert r.returncode == 0 and " FRK" not in r.stdout, r.stdout
    write(tmp_path, {"vid/caller.py": caller.replace("pipeline(lambda v: v)", "Clips(lambda v: v)")})
    r = forksafe(tmp_path, "vid/caller.py", "--no-cache", "--select", "FRK201,FRK202")
    assert [line.split(" ", 2)[1] for line in r.stdout.splitlines() if " FRK" in line] == ["FRK201"]


GRAPHS = """\
    from torch.utils.data import Dataset


    class GraphDataset(Dataset):
        def __init__(self, graphs):
            self.graphs = graphs

        def filter(self, filter_fn, deep_copy=False):
            kept = [g for g in self.graphs if filter_fn(g)]
            return GraphDataset(list(kept) if deep_copy else kept)

        def map(self, fn):
            out = GraphDataset(self.graphs)
            out.fn = fn
            return out

        def __getitem__(self, i):
            return self.graphs[i]
    """

STAGES = """\
    from torch.utils.data import DataLoader

    from gl.dataset import GraphDataset


    def build(graphs, size):
        ds = GraphDataset(graphs).filter(lambda g: len(g) < size, deep_copy=False)
        ds = ds.map(lambda g: g * 2)
        return DataLoader(ds, num_workers=2)
    """


def test_a_stage_of_a_project_dataset_that_only_calls_its_function(tmp_path: Path) -> None:
    """``.filter(fn)`` of a dataset class in another module calls ``fn`` while filtering and keeps
    nothing (the index: the stage's parameter is transient): its lambda is not reported; ``.map(fn)``
    stores ``fn`` on the dataset it returns: reported."""
    write(tmp_path, {"pyproject.toml": "", "gl/__init__.py": "", "gl/dataset.py": GRAPHS, "gl/stages.py": STAGES})
    r = forksafe(tmp_path, "gl/stages.py", "--no-cache", "--select", "FRK201")
    out = [line.split(" ", 2)[:2] for line in r.stdout.splitlines() if " FRK" in line]
    where = str(Path("gl/stages.py"))
    assert out == [[f"{where}:8:17:", "FRK201"]], r.stdout + r.stderr


def test_a_dataset_keeps_what_a_project_dataset_factory_makes_of_its_arguments(tmp_path: Path) -> None:
    """``self.dataset = make_folder(root, is_valid_file=local_fn)`` where ``make_folder`` (another
    module) gives ``is_valid_file`` to ``ImageFolder``, which only scans with it: nothing kept, no
    finding (lightly's ``_load_dataset_from_folder``, a false alarm seen in the work corpus once its
    ``LightlyDataset`` was known as a dataset); neither does the project's ``Videos``, which only
    filters with it. An argument a dataset of the factory keeps (``transform``) is."""
    write(tmp_path, {
        "pyproject.toml": "",
        "lib/__init__.py": "",
        "lib/helpers.py": """\
            from torch.utils.data import Dataset
            from torchvision import datasets


            class Videos(Dataset):
                def __init__(self, root, transform=None, is_valid_file=None):
                    self.transform = transform
                    self.files = [f for f in root if is_valid_file is None or is_valid_file(f)]

                def __getitem__(self, i):
                    return self.transform(self.files[i])


            def make_folder(root, transform=None, is_valid_file=None, videos=False):
                if videos:
                    return Videos(root, transform=transform, is_valid_file=is_valid_file)
                return datasets.ImageFolder(root, transform=transform, is_valid_file=is_valid_file)
            """,
        "lib/dataset.py": """\
            from torch.utils.data import Dataset

            from lib.helpers import make_folder


            class Wrapped(Dataset):
                def __init__(self, root, names):
                    def is_valid_file(path):
                        return path in names

                    self.dataset = make_folder(root, is_valid_file=is_valid_file)
                    self.other = make_folder(root, lambda img: img)

                def __getitem__(self, i):
                    return self.dataset[i]
            """,
    })
    r = forksafe(tmp_path, ".", "--no-cache", "--select", "FRK201,FRK202")
    out = [line.split(" ", 2)[:2] for line in r.stdout.splitlines() if " FRK20" in line]
    assert out == [[str(Path("lib/dataset.py")) + ":12:40:", "FRK201"]], r.stdout
