"""Configuration holds user options only; the knowledge is derived from them (no refresh step), and
every list of rules/*.toml can be extended from configuration."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flake8_forksafe.config import Config, ConfigError, from_mapping, load_pyproject
from flake8_forksafe.engine import check_source
from flake8_forksafe.knowledge import default_knowledge, extension_keys, knowledge_for

HANDLE_IN_INIT = """\
import lmdb
from mylib import MyBase


class Shards(MyBase):
    def __init__(self, path):
        self.env = lmdb.open(path)

    def __getitem__(self, i):
        return self.env.begin().get(i)
"""


def test_extra_dataset_bases_work_on_a_plain_config():
    """No ``: the option is seen by the gate and the analysis directly."""
    assert check_source(HANDLE_IN_INIT, "d.py", Config(select=("FRK101",))) == []
    found = check_source(HANDLE_IN_INIT, "d.py", Config(select=("FRK101",), extra_dataset_bases=("mylib.MyBase",)))
    assert [(f.code, f.line, f.col) for f in found] == [("FRK101", 7, 19)]


def test_knowledge_is_built_once_per_distinct_options():
    a = Config(extra_loaders=("mylib.Fast",))
    b = Config(extra_loaders=("mylib.Fast",), select=("FRK4",))
    assert a.knowledge is b.knowledge
    assert Config().knowledge is default_knowledge()
    assert "mylib.Fast" in a.knowledge.loaders and "mylib.Fast" not in default_knowledge().loaders


def test_every_list_of_the_rule_files_is_extensible():
    keys = extension_keys()
    assert {"datasets.bases", "handles.factory", "unpicklable.object", "unpicklable.transient.functions",
            "multiprocessing.iteration_consumers", "multiprocessing.context_keywords"} <= set(keys)
    for key in keys:  # each one builds
        knowledge_for(((key, ("mylib.extension_probe",)),))


def test_extend_knowledge_reaches_frk201s_transient_calls():
    """A call that only uses its function argument (rules/unpicklable.toml [transient]) makes a
    lambda passed to it harmless; a project's own such function is declared from configuration."""
    src = textwrap.dedent(
        """\
        from torch.utils.data import Dataset
        from mylib import apply_once


        class DS(Dataset):
            def __init__(self, xs):
                self.xs = apply_once(lambda x: x * 2, xs)

            def __getitem__(self, i):
                return self.xs[i]
        """
    )
    plain = check_source(src, "d.py", Config(select=("FRK201",)))
    assert [(f.code, f.line) for f in plain] == [("FRK201", 7)]
    cfg = from_mapping({"extend-knowledge": {"unpicklable.transient.functions": ["mylib.apply_once"]}})
    assert cfg.extend_knowledge == (("unpicklable.transient.functions", ("mylib.apply_once",)),)
    assert check_source(src, "d.py", Config(select=("FRK201",), extend_knowledge=cfg.extend_knowledge)) == []


def test_extend_knowledge_adds_a_handle_factory_by_name():
    src = HANDLE_IN_INIT.replace("lmdb.open", "mystore.connect").replace("import lmdb", "import mystore")
    cfg = Config(select=("FRK101",), extra_dataset_bases=("mylib.MyBase",))
    assert check_source(src, "d.py", cfg) == []
    ext = Config(
        select=("FRK101",),
        extra_dataset_bases=("mylib.MyBase",),
        extend_knowledge=(("handles.factory", ("mystore.connect",)),),
    )
    assert [(f.code, f.line) for f in check_source(src, "d.py", ext)] == [("FRK101", 7)]
    # a shipped entry keeps its shipped fields
    shipped = default_knowledge().factories["lmdb.open"]
    assert knowledge_for((("handles.factory", ("lmdb.open",)),)).factories["lmdb.open"] == shipped


@pytest.mark.parametrize(
    "value, message",
    [
        ({"datasets.nope": ["x"]}, "unknown knowledge list 'datasets.nope'"),
        ({"handles": ["x"]}, "'handles' is not a list"),
        (["datasets.bases"], "extend-knowledge must be a table of lists"),
        ({"datasets.bases": [1]}, "extend-knowledge.datasets.bases must be a list of strings"),
    ],
)
def test_bad_extend_knowledge_is_one_clear_error(value, message):
    with pytest.raises(ConfigError) as exc:
        from_mapping({"extend-knowledge": value}, source="pyproject.toml")
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_extend_knowledge_from_pyproject_and_the_command_line(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.flake8-forksafe]\nselect = ["FRK101"]\n'
        '[tool.flake8-forksafe.extend-knowledge]\n"datasets.bases" = ["mylib.MyBase"]\n'
    )
    cfg = load_pyproject(tmp_path / "pyproject.toml")
    assert cfg.extend_knowledge == (("datasets.bases", ("mylib.MyBase",)),)
    (tmp_path / "d.py").write_text(HANDLE_IN_INIT)
    r = subprocess.run(
        [sys.executable, "-m", "flake8_forksafe", "check", "--no-cache", "d.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("d.py:7:20: FRK101 ")  # the command prints 1-based columns
