"""FRK101 across modules: a class whose ``__init__`` keeps a handle (a "handle holder"), built and
kept on the parent side by a dataset of another module of the project (directly, through project
functions and static/class methods that return its objects, in containers), is reported on the
handle-factory call in the holder's module, naming the dataset and where it keeps them; a helper of
another module that returns a handle kept by a dataset is reported on the dataset (tmp-dir projects,
checked with the real CLI over the whole tree: one finding per hazard)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

from tests.helpers import ran
from tests.test_index import forksafe, write

READER = """\
    import h5py


    class SlideReader:
        def __init__(self, path):
            self.path = path
            self.f = h5py.File(path, "r")

        def read(self, i):
            return self.f["x"][i]
    """

BUILD = """\
    from slides.readers import SlideReader


    def load_readers(paths):
        readers = [SlideReader(p) for p in paths]
        return readers
    """

DATA = """\
    from torch.utils.data import Dataset

    from slides.build import load_readers


    class Slides(Dataset):
        def __init__(self, paths):
            self.paths = paths
            self.readers = load_readers(paths)

        def __len__(self):
            return len(self.paths)

        def __getitem__(self, i):
            return self.readers[i].read(0)
    """

# a second shape: the holder opens its handle in a method its __init__ calls; a static method of a
# manifest class returns a dict of what a module-level function returns; the dataset keeps it in a
# method its __init__ calls
TIFF = """\
    import tifffile


    class TiffVideo:
        def __init__(self, path, name=None):
            self.name = name
            self._open(path)

        def _open(self, path):
            self.tif = tifffile.TiffFile(path)

        def frame(self, i):
            return self.tif.pages[i].asarray()
    """

PICK = """\
    def pick(kind):
        if kind == "tiff":
            from clips.tiff import TiffVideo

            cls_ = TiffVideo
        else:
            cls_ = None
        return cls_


    def make_video(path, kind="tiff"):
        video_cls = pick(kind)
        return video_cls(path, name=path)
    """

MANIFEST = """\
    from clips.pick import make_video


    class Manifest:
        @staticmethod
        def load(rows):
            return {row[0]: make_video(row[1]) for row in rows}
    """

CLIPS = """\
    import torch

    from clips.manifest import Manifest


    class Clips(torch.utils.data.Dataset):
        def __init__(self, rows):
            self.rows = rows
            self._setup()

        def _setup(self):
            self.videos = Manifest.load(self.rows)

        def __len__(self):
            return len(self.rows)

        def __getitem__(self, i):
            return self.videos[self.rows[i][0]].frame(0)
    """


def _run(tmp_path: Path, files: Dict[str, str]) -> List[str]:
    write(tmp_path, {"pyproject.toml": "", **files})
    r = forksafe(tmp_path, ".", "--no-cache", "--select", "FRK1")
    ran(r)
    return [line for line in r.stdout.splitlines() if " FRK" in line]


SLIDES = {"slides/__init__.py": "", "slides/readers.py": READER, "slides/build.py": BUILD, "slides/data.py": DATA}
CLIPS_FILES = {"clips/__init__.py": "", "clips/tiff.py": TIFF, "clips/pick.py": PICK,
               "clips/manifest.py": MANIFEST, "clips/data.py": CLIPS}


def test_holder_built_by_a_project_function_and_kept_by_a_dataset(tmp_path: Path) -> None:
    out = _run(tmp_path, SLIDES)
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('slides/readers.py')}:7:18:", "FRK101"]]
    assert out[0].split(" ", 2)[2].startswith(
        "[*] h5py.File() opened in SlideReader.__init__ and kept in self.f (SlideReader is not a dataset, but "
        f"dataset Slides keeps its objects in self.readers, {Path('slides/data.py')}:9)"
    )


def test_holder_through_a_static_method_a_picked_class_and_a_dict(tmp_path: Path) -> None:
    out = _run(tmp_path, CLIPS_FILES)
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('clips/tiff.py')}:10:20:", "FRK101"]]
    assert (f"(TiffVideo is not a dataset, but dataset Clips keeps its objects in self.videos, "
            f"{Path('clips/data.py')}:12)") in out[0]


def test_holder_that_opens_lazily_is_not_reported(tmp_path: Path) -> None:
    lazy = READER.replace('self.f = h5py.File(path, "r")', "self.f = None").replace(
        'return self.f["x"][i]', 'if self.f is None:\n                self.f = h5py.File(self.path, "r")\n'
        '            return self.f["x"][i]')
    assert lazy != READER
    assert _run(tmp_path, {**SLIDES, "slides/readers.py": lazy}) == []


def test_holder_built_on_the_worker_side_is_not_reported(tmp_path: Path) -> None:
    data = DATA.replace("self.readers = load_readers(paths)", "self.readers = None").replace(
        "return self.readers[i].read(0)", "readers = load_readers(self.paths)\n            return readers[i].read(0)")
    assert data != DATA
    assert _run(tmp_path, {**SLIDES, "slides/data.py": data}) == []


def test_holder_used_in_a_with_block_in_init_is_not_reported(tmp_path: Path) -> None:
    reader = READER + """
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()
    """
    data = DATA.replace("from slides.build import load_readers", "from slides.readers import SlideReader").replace(
        "self.readers = load_readers(paths)",
        "with SlideReader(paths[0]) as r:\n                self.n = len(r.f)\n            self.readers = None")
    assert data != DATA
    assert _run(tmp_path, {**SLIDES, "slides/readers.py": reader, "slides/data.py": data}) == []


def test_holder_kept_by_a_class_that_is_not_a_dataset_is_not_reported(tmp_path: Path) -> None:
    data = DATA.replace("from torch.utils.data import Dataset\n", "").replace("class Slides(Dataset):", "class Slides:")
    assert data != DATA
    assert _run(tmp_path, {**SLIDES, "slides/data.py": data}) == []


def test_holder_reported_when_only_its_module_is_checked(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "", **CLIPS_FILES})
    r = forksafe(tmp_path, "clips/tiff.py", "--no-cache", "--select", "FRK101")
    assert r.returncode == 1, r.stderr
    assert [line.split(" ", 2)[:2] for line in r.stdout.splitlines() if " FRK" in line] == [
        [f"{Path('clips/tiff.py')}:10:20:", "FRK101"]]


def test_helper_of_another_module_returning_a_handle_is_reported_on_the_dataset(tmp_path: Path) -> None:
    helpers = """\
        import lmdb
        import h5py


        def open_env(path):
            return lmdb.open(path, readonly=True)


        def open_table(path):
            f = h5py.File(path, "r")
            return f
        """
    data = """\
        from torch.utils.data import Dataset

        from store import io


        class Records(Dataset):
            def __init__(self, path):
                self.env = io.open_env(path)
                self.table = io.open_table(path)

            def __len__(self):
                return 1

            def __getitem__(self, i):
                return self.env, self.table
        """
    out = _run(tmp_path, {"store/__init__.py": "", "store/io.py": helpers, "store/data.py": data})
    assert [line.split(" ", 2)[:2] for line in out] == [
        [f"{Path('store/data.py')}:8:20:", "FRK101"], [f"{Path('store/data.py')}:9:22:", "FRK101"]]
    assert f"lmdb.open() returned by store.io.open_env ({Path('store/io.py')}:5) is kept in self.env of Records" in out[0]
    assert f"h5py.File() returned by store.io.open_table ({Path('store/io.py')}:9) is kept in self.table" in out[1]


def test_helper_handle_closed_in_init_or_kept_worker_side_is_not_reported(tmp_path: Path) -> None:
    helpers = """\
        import lmdb


        class Stores:
            @staticmethod
            def open_env(path):
                return lmdb.open(path, readonly=True)
        """
    data = """\
        from torch.utils.data import Dataset

        from store.io import Stores


        class Records(Dataset):
            def __init__(self, path):
                self.path = path
                self.env = Stores.open_env(path)
                self.n = self.env.stat()["entries"]
                self.env.close()

            def __len__(self):
                return self.n

            def __getitem__(self, i):
                self.worker_env = Stores.open_env(self.path)
                return i
        """
    assert _run(tmp_path, {"store/__init__.py": "", "store/io.py": helpers, "store/data.py": data}) == []
    kept = data.replace("                self.env.close()\n", "")
    assert kept != data
    out = _run(tmp_path, {"store/data.py": kept})
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('store/data.py')}:9:20:", "FRK101"]]
    assert "lmdb.open() returned by store.io.Stores.open_env" in out[0]


def test_warm_cache_sees_a_dataset_start_keeping_a_holder(tmp_path: Path) -> None:
    """The holder's finding depends on modules that import it (the dataset that keeps its objects),
    not only on what it imports: an edit there must reach a warm run's cached result for the
    holder's (unchanged) file, whose message names the keeping line."""
    unkept = DATA.replace("self.readers = load_readers(paths)", "self.readers = []")
    write(tmp_path, {"pyproject.toml": "", **SLIDES, "slides/data.py": unkept})
    first = forksafe(tmp_path, ".", "--select", "FRK1")
    assert first.returncode == 0 and first.stdout == "", first.stdout + first.stderr
    assert list((tmp_path / ".forksafe_cache").rglob("*.json"))  # the cache is in use
    write(tmp_path, {"slides/data.py": DATA})
    second = forksafe(tmp_path, ".", "--select", "FRK1")
    assert [line.split(" ", 2)[:2] for line in second.stdout.splitlines() if " FRK" in line] == [
        [f"{Path('slides/readers.py')}:7:18:", "FRK101"]
    ], second.stdout + second.stderr
    assert f"keeps its objects in self.readers, {Path('slides/data.py')}:9)" in second.stdout
    # the dataset's module changes, the holder's does not: the message follows the keeping line
    moved = DATA.replace("        self.paths = paths\n", "        self.paths = paths\n        # cached\n        # below\n")
    write(tmp_path, {"slides/data.py": moved})
    third = forksafe(tmp_path, ".", "--select", "FRK1")
    assert f"keeps its objects in self.readers, {Path('slides/data.py')}:11)" in third.stdout, third.stdout
    write(tmp_path, {"slides/data.py": unkept})
    fourth = forksafe(tmp_path, ".", "--select", "FRK1")
    assert fourth.stdout == "", fourth.stdout


def test_holder_search_skips_a_package_over_the_size_cap(tmp_path: Path, monkeypatch) -> None:
    """A package whose files add up to more than ``MAX_HOLDER_PACKAGE_BYTES`` is not searched for
    datasets keeping a holder's objects (torch's 46 MB made every holder question read all of it):
    the same project is found just under the cap and not just over it."""
    from flake8_forksafe import index as ix_mod
    from flake8_forksafe.config import Config

    write(tmp_path, {"pyproject.toml": "", **SLIDES})
    total = sum(p.stat().st_size for p in (tmp_path / "slides").rglob("*.py"))
    k = Config().knowledge
    for cap, found in ((total, True), (total - 1, False)):
        monkeypatch.setattr(ix_mod, "MAX_HOLDER_PACKAGE_BYTES", cap)
        ix = ix_mod.ProjectIndex(tmp_path, k)
        got = ix.keepers("slides.readers.SlideReader")
        assert (got is not None) is found, (cap, got)
        if found:
            assert got[:2] == ("Slides", "readers")
        text = (tmp_path / "slides" / "readers.py").read_text()
        assert ix_mod.has_kept_holder(ix, str(tmp_path / "slides" / "readers.py"), k, text) is found


# the torcheeg shape: the dataset fills a local dict with IO objects item by item and keeps it; each
# IO object keeps a backend object that opens an LMDB environment, drops it when pickled and opens it
# again when unpickled (spawn works; forked workers share the parent's environment)
BACKEND = """\
    import lmdb


    class LMDBBackend:
        def __init__(self, path):
            self.path = path
            self._env = lmdb.open(path, lock=False)

        def __getstate__(self):
            state = self.__dict__.copy()
            del state["_env"]
            return state

        def __setstate__(self, state):
            self.__dict__.update(state)
            self._env = lmdb.open(self.path, lock=False)

        def read(self, key):
            with self._env.begin() as txn:
                return txn.get(key)


    class SignalIO:
        def __init__(self, path, mode="lmdb"):
            if mode == "lmdb":
                self._io = LMDBBackend(path)
            else:
                self._io = None

        def read(self, key):
            return self._io.read(key)
    """

ROUTED = """\
    from torch.utils.data import Dataset

    from eeg.io import SignalIO


    class Records(Dataset):
        def __init__(self, paths):
            router = {}
            for p in paths:
                io = SignalIO(p)
                router[p] = io
            self.router = router
            self.keys = list(paths)

        def __len__(self):
            return len(self.keys)

        def __getitem__(self, i):
            return self.router[self.keys[i]].read(b"0")
    """


def test_holder_of_a_holder_kept_in_a_dict_filled_item_by_item(tmp_path: Path) -> None:
    files = {"eeg/__init__.py": "", "eeg/io.py": BACKEND, "eeg/data.py": ROUTED}
    out = _run(tmp_path, files)
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('eeg/io.py')}:7:21:", "FRK101"]]
    assert (f"(LMDBBackend is not a dataset, but dataset Records keeps SignalIO objects, which keep its "
            f"objects, in self.router, {Path('eeg/data.py')}:12)") in out[0]
    # the dataset keeps nothing: no finding
    quiet = ROUTED.replace("self.router = router", "self.router = None")
    assert _run(tmp_path, {**files, "eeg/data.py": quiet}) == []
    # reopened in each process (a PID check): no finding
    pid = BACKEND.replace("        def read(self, key):\n            with self._env", "        def read(self, key):\n"
                          "            if os.getpid() != self._pid:\n                self._env = lmdb.open(self.path)\n"
                          "                self._pid = os.getpid()\n            with self._env").replace(
        "import lmdb\n", "import os\n\n    import lmdb\n").replace(
        "self._env = lmdb.open(path, lock=False)\n", "self._env = lmdb.open(path, lock=False)\n            self._pid = os.getpid()\n", 1)
    assert pid != BACKEND
    assert _run(tmp_path, {**files, "eeg/io.py": pid}) == []


SUBCLASS_READER = """\
    import io


    class IndexedIterator:
        def __init__(self, path):
            self.file = io.open(path, "rb")

        def __getitem__(self, i):
            self.file.seek(i)
            return self.file.read(1)


    class ExampleIterator(IndexedIterator):
        def __init__(self, path, description=None):
            super().__init__(path)
            self.description = description
    """

SUBCLASS_DATA = """\
    from torch.utils.data import Dataset

    from records import reader


    class Records(Dataset):
        def __init__(self, path):
            self.reader = reader.ExampleIterator(path)

        def __getitem__(self, i):
            return self.reader[i]
    """


def test_holder_whose_subclass_a_dataset_keeps(tmp_path: Path) -> None:
    """The dataset keeps objects of a subclass whose inherited ``__init__`` opens the file (slideflow's
    ``IndexedExampleIterator``, session 11's third holdout, seen: a miss there): reported at the base's
    open call, naming the subclass; a subclass that does not call the base ``__init__`` keeps nothing."""
    files = {"records/__init__.py": "", "records/reader.py": SUBCLASS_READER, "records/data.py": SUBCLASS_DATA}
    out = _run(tmp_path, files)
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('records/reader.py')}:6:21:", "FRK101"]]
    assert (
        "(IndexedIterator is not a dataset, but dataset Records keeps objects of its subclass ExampleIterator "
        f"in self.reader, {Path('records/data.py')}:8)"
    ) in out[0]
    own_init = SUBCLASS_READER.replace("super().__init__(path)", "self.path = path")
    assert _run(tmp_path, {**files, "records/reader.py": own_init}) == []


APPENDING_READER = """\
    import lmdb


    class Database:
        def __init__(self, path, readonly=True):
            self.env = lmdb.open(path, readonly=readonly, lock=False)
            self.txn = self.env.begin(write=False)

        def get(self, key):
            return self.txn.get(key)


    class Rows:
        def __init__(self, paths):
            self.dbs = []
            self.load(paths)

        def load(self, paths):
            for p in paths:
                try:
                    self.dbs.append(self.connect(p))
                except ValueError:
                    pass

        @staticmethod
        def connect(path):
            return Database(path, readonly=True)
    """

APPENDING_DATA = """\
    from torch.utils.data import Dataset

    from rows.tools import Rows


    class RowDataset(Dataset):
        def __init__(self, paths):
            self.rows = Rows(paths)

        def __getitem__(self, i):
            return self.rows.dbs[0].get(b"%d" % i)
    """


def test_holder_appended_to_a_container_on_self_by_a_method_init_reaches(tmp_path: Path) -> None:
    """A class keeps holder objects by filling a container on ``self`` in a method its ``__init__``
    calls (``self.dbs.append(self.connect(p))`` inside a loop and a ``try``), and a dataset of another
    module keeps that class (mace-torch's ``AseDBDataset.dbs`` of ``LMDBDatabase``s, session 11's
    fourth holdout, seen: a miss there): reported at the holder's open call. ``self.dbs[k] = ...``
    keeps it the same way; a container filled with something else keeps no handle."""
    files = {"rows/__init__.py": "", "rows/tools.py": APPENDING_READER, "rows/data.py": APPENDING_DATA}
    out = _run(tmp_path, files)
    assert [line.split(" ", 2)[:2] for line in out] == [[f"{Path('rows/tools.py')}:6:20:", "FRK101"]]
    assert (
        "(Database is not a dataset, but dataset RowDataset keeps Rows objects, which keep its objects, "
        f"in self.rows, {Path('rows/data.py')}:8)"
    ) in out[0]
    keyed = APPENDING_READER.replace("self.dbs = []", "self.dbs = {}").replace(
        "self.dbs.append(self.connect(p))", "self.dbs[p] = self.connect(p)")
    assert keyed != APPENDING_READER
    assert [line.split(" ", 2)[:2] for line in _run(tmp_path, {**files, "rows/tools.py": keyed})] == [
        [f"{Path('rows/tools.py')}:6:20:", "FRK101"]]
    names = APPENDING_READER.replace("self.dbs.append(self.connect(p))", "self.dbs.append(str(p))")
    assert names != APPENDING_READER
    assert _run(tmp_path, {**files, "rows/tools.py": names}) == []
