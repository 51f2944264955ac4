"""The real-world scorer (benchmarks/realworld/score.py): matching, counting and exit statuses.

The figures of issue 11 come from this script, so it is tested like the product: a small labelled
package is written to a temporary corpus, the real `forksafe` runs on it, and the printed table,
the missed sites, the unlabelled findings and the exit status are checked exactly.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REALWORLD = ROOT / "benchmarks" / "realworld"

SOURCE = textwrap.dedent(
    """\
    import random

    from torch.utils.data import DataLoader, Dataset


    class Pairs(Dataset):
        def __init__(self, items):
            self.items = items
            self.key = lambda x: x[0]
            self.rng = random.Random(0)

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return self.key(self.items[i]), self.rng.random()


    def loader(items):
        return DataLoader(Pairs(items), num_workers=4, collate_fn=lambda b: b)
    """
)
#  line 9: FRK201 (self.key lambda); line 10: FRK601 (RNG built in __init__);
#  line 20: FRK201 (collate_fn lambda)


def _load(monkeypatch, tmp_path: Path):
    monkeypatch.syspath_prepend(str(REALWORLD))
    for name in ("fetch", "score"):
        sys.modules.pop(name, None)
    spec = importlib.util.spec_from_file_location("score", REALWORLD / "score.py")
    score = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(score)
    fetch = sys.modules["fetch"]
    monkeypatch.setattr(fetch, "PACKAGES_DIR", tmp_path / "packages")
    monkeypatch.setattr(fetch, "SRC", tmp_path / "src")
    return score


def _package(tmp_path: Path, part: str, sites: str) -> None:
    (tmp_path / "packages" / part).mkdir(parents=True)
    (tmp_path / "packages" / part / "demo.toml").write_text(
        textwrap.dedent(
            f"""\
            [package]
            name = "demo"
            version = "1.0"
            part = "{part}"
            dist = "wheel"
            root = ""
            candidates = "test"
            """
        )
        + textwrap.dedent(sites),
        encoding="utf-8",
    )
    src = tmp_path / "src" / "demo" / "demo"
    src.mkdir(parents=True)
    (src / "data.py").write_text(SOURCE, encoding="utf-8")


def _site(line: int, code: str, verdict: str, reason: str = "read") -> str:
    return f"""
[[site]]
path = "demo/data.py"
line = {line}
code = "{code}"
verdict = "{verdict}"
reason = "{reason}"
"""


def _run(score, capsys, *args: str) -> tuple[int, str]:
    cmd = f"{sys.executable} -m flake8_forksafe"
    rc = score.main(["--forksafe", cmd, *args])
    return rc, capsys.readouterr().out


def _rows(out: str) -> dict[str, list[str]]:
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and (parts[0].startswith("FRK") or parts[0] == "all") and len(parts) == 10:
            rows[parts[0]] = parts[1:]
    return rows


def test_counts_precision_recall_and_misses(monkeypatch, tmp_path, capsys):
    sites = (
        _site(9, "FRK201", "flag")
        + _site(10, "FRK601", "no-flag", "seeded per worker elsewhere")
        + _site(20, "FRK201", "debatable", "outside the catalogue")
        + _site(15, "FRK101", "flag", "a handle the tool does not see")
    )
    _package(tmp_path, "holdout", sites)
    score = _load(monkeypatch, tmp_path)
    rc, out = _run(score, capsys, "--part", "holdout", "--strict")
    assert rc == 0, out
    rows = _rows(out)
    # findings true no-flag unlab debat flag-sites found precision recall
    assert rows["FRK201"] == ["2", "1", "0", "0", "1", "1", "1", "1.000", "1.000"]
    assert rows["FRK601"] == ["1", "0", "1", "0", "0", "0", "0", "0.000", "-"]
    assert rows["FRK101"] == ["0", "0", "0", "0", "0", "1", "0", "-", "0.000"]
    assert rows["all"] == ["3", "1", "1", "0", "1", "2", "1", "0.500", "0.500"]
    assert "holdout/demo: demo/data.py:15: FRK101 a handle the tool does not see" in out


def test_unlabelled_finding_fails_strict(monkeypatch, tmp_path, capsys):
    _package(tmp_path, "work", _site(9, "FRK201", "flag") + _site(10, "FRK601", "flag"))
    score = _load(monkeypatch, tmp_path)
    rc, out = _run(score, capsys, "--part", "work", "--strict")
    assert rc == 1
    assert "work/demo: demo/data.py:20: FRK201" in out
    rows = _rows(out)
    assert rows["all"][:4] == ["3", "2", "0", "1"]
    # without --strict the same run succeeds
    rc, _ = _run(score, capsys, "--part", "work")
    assert rc == 0


@pytest.mark.parametrize(
    "site, problem",
    [
        (_site(9, "FRK201", "maybe"), "verdict 'maybe' is not one of"),
        (_site(9, "FRK201", "flag", ""), "no reason"),
        (_site(99, "FRK201", "flag"), "line outside 1..20"),
        (_site(9, "FRK201", "flag") + _site(9, "FRK201", "no-flag"), "duplicate site"),
    ],
)
def test_malformed_sites_fail_strict(monkeypatch, tmp_path, capsys, site, problem):
    _package(tmp_path, "work", site)
    score = _load(monkeypatch, tmp_path)
    rc, out = _run(score, capsys, "--part", "work", "--strict")
    assert rc == 1
    assert problem in out


def test_unfetched_and_empty_parts_exit_2(monkeypatch, tmp_path, capsys):
    _package(tmp_path, "work", _site(9, "FRK201", "flag"))
    score = _load(monkeypatch, tmp_path)
    rc, out = _run(score, capsys, "--part", "holdout")
    assert rc == 2
    assert "no package in part 'holdout'" in out
    import shutil

    shutil.rmtree(tmp_path / "src")
    rc, out = _run(score, capsys, "--part", "work")
    assert rc == 2
    assert "demo: not fetched" in out
