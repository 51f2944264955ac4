"""The release: ``python -m build`` makes an sdist and a wheel that ``twine check --strict`` accepts,
with the version of ``flake8_forksafe/__init__.py``; the wheel installed into a fresh virtual
environment gives a working ``forksafe`` command and flake8 plugin.

The build runs without isolation (hatchling comes with the test extra), so it works offline. The
fresh environment installs the wheel's dependencies (libcst, flake8) with pip from the configured
index (PyPI in CI); without one the install test is skipped with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from flake8_forksafe import __version__
from tests.integrations._util import HAZARD, ROOT

pytestmark = pytest.mark.slow


def run(cmd, cwd, timeout=600):
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    r = run([sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", out, ROOT], ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def test_build_makes_the_versioned_sdist_and_wheel_that_twine_accepts(dist):
    names = sorted(p.name for p in dist.iterdir())
    assert names == [f"flake8_forksafe-{__version__}-py3-none-any.whl", f"flake8_forksafe-{__version__}.tar.gz"]
    r = run([sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir())], dist)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PASSED") == 2


def test_wheel_metadata_and_contents(dist):
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(f"flake8_forksafe-{__version__}.dist-info/METADATA").decode()
        entry_points = z.read(f"flake8_forksafe-{__version__}.dist-info/entry_points.txt").decode()
    assert f"Version: {__version__}\n" in meta
    for minor in range(9, 15):
        assert f"Classifier: Programming Language :: Python :: 3.{minor}\n" in meta
    assert "License-Expression: MIT" in meta or "License: MIT" in meta
    assert "Project-URL: Changelog, https://github.com/flake8-forksafe/flake8-forksafe/blob/main/CHANGELOG.md" in meta
    assert "FRK = flake8_forksafe.frontends.flake8_plugin:ForkSafeChecker" in entry_points
    assert "forksafe = flake8_forksafe.frontends.cli:main" in entry_points
    for needed in (
        "flake8_forksafe/notebook.py",
        "flake8_forksafe/checks/frk405.py",
        "flake8_forksafe/_docs/FRK405.md",
        "flake8_forksafe/_fixtures/runtime/notebooks/defined_in_notebook.ipynb",
    ):
        assert needed in names, needed
    assert any(n.startswith("flake8_forksafe/_rules/") and n.endswith(".toml") for n in names)


def test_wheel_installed_in_a_fresh_venv_works(dist, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / ("Scripts" if sys.platform == "win32" else "bin")
    (wheel,) = dist.glob("*.whl")
    r = run([bin_dir / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel], tmp_path)
    if r.returncode != 0:
        if "No matching distribution" in r.stderr or "Could not find a version" in r.stderr:
            pytest.skip(f"cannot install the wheel's dependencies without a package index: {r.stderr.strip()[-300:]}")
        pytest.fail(r.stdout[-2000:] + r.stderr[-2000:])
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "data.py").write_text(HAZARD, encoding="utf-8")

    r = run([bin_dir / "forksafe", "--version"], proj)
    assert r.stdout.strip() == f"flake8-forksafe {__version__}"
    r = run([bin_dir / "forksafe", "check", "--no-cache", "--format", "json", "data.py"], proj)
    assert r.returncode == 1, r.stderr
    checked = sorted((f["code"], f["line"], f["column"]) for f in json.loads(r.stdout))
    assert checked and all(code.startswith("FRK1") for code, _, _ in checked)
    r = run([bin_dir / "flake8", "--isolated", "--select", "FRK", "--format", "%(code)s:%(row)d:%(col)d", "data.py"], proj)
    assert r.returncode == 1, r.stderr
    assert sorted((c, int(row), int(col)) for c, row, col in (line.split(":") for line in r.stdout.split())) == checked
    r = run([bin_dir / "forksafe", "explain", "FRK405"], proj)
    assert r.returncode == 0 and r.stdout.startswith("# FRK405: notebook-definition-reaches-workers")
    # the installed package checks a notebook too, and finds the runtime fixtures it ships
    nb = proj / "explore.ipynb"
    nb.write_bytes((ROOT / "fixtures" / "runtime" / "notebooks" / "defined_in_notebook.ipynb").read_bytes())
    r = run([bin_dir / "forksafe", "check", "--no-cache", "explore.ipynb"], proj)
    assert r.returncode == 1 and r.stdout.startswith("explore.ipynb:cell 3:1:1: FRK405 class Squares")
