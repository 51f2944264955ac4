"""A class with ``__getitem__`` and no dataset base (a pydantic model, a plain class) is a dataset
when a DataLoader with workers in another module of the project is given its objects: through a
field or a parameter annotated with the class (``dataset: Dataset``, ``DataLoader(self.dataset,
**kwargs)``) or a call building one. Then the lambdas and local functions its constructor calls and
its pipeline stages keep are FRK201/FRK202 there, and the message says where the loader is
(pytorch-datastream's ``Dataset``, whose only loader is ``Datastream.data_loader``: ten misses of
session 13's first holdout, seen, then fixed). A method of the class that returns an object of it
(``Dataset.from_frame(df).map(...)``) starts a pipeline too; a pipeline a test builds and uses in
its own process keeps no finding. tmp-dir projects checked with the real CLI."""

from __future__ import annotations

from pathlib import Path

from tests.test_index import forksafe, write

DATASET = """\
    from typing import Callable, Generic, TypeVar

    from pydantic import BaseModel

    T = TypeVar("T")


    class Dataset(BaseModel, Generic[T]):
        rows: list
        get_item: Callable

        def __getitem__(self, index):
            return self.get_item(self.rows, index)

        def __len__(self):
            return len(self.rows)

        @staticmethod
        def from_rows(rows) -> "Dataset[int]":
            return Dataset(rows=rows, get_item=lambda rows, index: rows[index])

        def map(self, function):
            def composed(rows, index):
                return function(self.get_item(rows, index))

            return Dataset(rows=self.rows, get_item=composed)


    def test_pipeline():
        for ds in (Dataset.from_rows([1, 2]), Dataset.from_rows([3]).map(lambda x: x + 1)):
            assert ds[0]
    """

STREAM = """\
    from typing import Optional

    import torch
    from pydantic import BaseModel

    from stream.dataset import Dataset


    class Datastream(BaseModel):
        {field}

        def data_loader(self, **kwargs):
            return torch.utils.data.DataLoader(self.dataset, {workers})
    """


def _run(tmp_path: Path, field: str = "dataset: Dataset", workers: str = "**kwargs") -> list:
    write(tmp_path, {
        "pyproject.toml": "",
        "stream/__init__.py": "",
        "stream/dataset.py": DATASET,
        "stream/datastream.py": STREAM.format(field=field, workers=workers),
    })
    r = forksafe(tmp_path, ".", "--no-cache", "--select", "FRK201,FRK202")
    return [line for line in r.stdout.splitlines() if " FRK20" in line]


def test_a_duck_dataset_given_to_a_loader_of_another_module(tmp_path: Path) -> None:
    out = _run(tmp_path)
    where = "(given to a DataLoader in Datastream.data_loader, stream/datastream.py:13)"
    assert [line.split(" ", 2)[:2] for line in out] == [
        ["stream/dataset.py:20:44:", "FRK201"],
        ["stream/dataset.py:23:9:", "FRK202"],
    ], out
    assert all(where in line for line in out), out


def test_the_field_type_may_be_quoted_optional_or_subscripted(tmp_path: Path) -> None:
    for field in ('dataset: "Dataset"', "dataset: Optional[Dataset[int]]", 'dataset: "Optional[Dataset]" = None'):
        assert len(_run(tmp_path, field=field)) == 2, field


def test_no_finding_without_a_loader_with_workers(tmp_path: Path) -> None:
    assert _run(tmp_path, workers="num_workers=0") == []
    assert _run(tmp_path, workers="") == []  # torch's default: no worker processes
    assert _run(tmp_path, field="dataset: list") == []  # the loader is not given a Dataset


def test_a_pipeline_started_by_a_method_of_the_class(tmp_path: Path) -> None:
    """``Dataset.from_rows(rows).map(lambda ...)``, returned: the stage keeps the lambda (``map``
    returns a dataset whose local function calls it)."""
    write(tmp_path, {"stream/api.py": """\
        from stream.dataset import Dataset


        def incremented(rows):
            return Dataset.from_rows(rows).map(lambda x: x + 1)
        """})
    out = _run(tmp_path)
    assert any(line.startswith("stream/api.py:5:") for line in out) is False  # another module's stage: not followed
    src = (tmp_path / "stream/dataset.py").read_text()
    (tmp_path / "stream/dataset.py").write_text(src + "\n\ndef incremented(rows):\n    return Dataset.from_rows(rows).map(lambda x: x + 1)\n")
    r = forksafe(tmp_path, ".", "--no-cache", "--select", "FRK201,FRK202")
    out = [line for line in r.stdout.splitlines() if " FRK20" in line]
    assert any(line.startswith("stream/dataset.py:35:40: FRK201") and "stage (.map()) of the dataset pipeline Dataset.from_rows(...)" in line
               for line in out), out
