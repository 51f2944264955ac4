"""Setup shared by the rule tests: the configuration with every rule, checking and fixing dedented
sources, and running Python in a subprocess (real DataLoader workers) that is killed, workers
included, when it overruns."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Sequence, Tuple, Union

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.model import Finding
from flake8_forksafe.fix import fix_source

# every rule, FRK501 (off by default) included: what a fixed file must be clean of
ALL = Config(select=("FRK", "FRK501"))


def check_dedented(src: str, path: str, cfg: Config, head: str = "", **kw) -> List[Finding]:
    """The findings for ``head`` + the dedented ``src``."""
    return check_source(head + textwrap.dedent(src), path, cfg, **kw)


def fix_dedented(src: str, path: str, cfg: Config, head: str = "", unsafe: bool = True) -> str:
    """``head`` + the dedented ``src``, fixed (the fix must not fail), without ``head``."""
    res = fix_source(head + textwrap.dedent(src), path, cfg, unsafe=unsafe)
    assert not res.errors, res.errors
    return res.source[len(head):]


def run_python(
    args: Sequence[Union[str, Path]],
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    timeout_message: Callable[[str, str], str],
) -> subprocess.CompletedProcess:
    """``python ARGS`` in a session of its own; past ``timeout`` seconds the whole process group
    (DataLoader workers included) is killed and the test fails with ``timeout_message(out, err)``."""
    proc = subprocess.Popen(
        [sys.executable, *(str(a) for a in args)], cwd=str(cwd), env=dict(env), start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(timeout_message(out, err))
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def clean_env(**extra: str) -> Dict[str, str]:
    """This environment plus ``extra``, without PYTHONPATH."""
    env = dict(os.environ, **extra)
    env.pop("PYTHONPATH", None)
    return env


def run_script(path: Path, timeout: float = 150) -> Tuple[int, str, str]:
    """``python path`` in its folder, as a user runs a script: (returncode, stdout, stderr)."""
    proc = run_python(
        [path], path.parent, clean_env(), timeout,
        lambda out, err: f"{path.name} did not finish in {timeout}s:\n{err[-2000:]}",
    )
    return proc.returncode, proc.stdout, proc.stderr


def run_with_modules(
    tmp_path: Path, modules: Mapping[str, str], runner: str, *args: Union[str, Path], timeout: float
) -> subprocess.CompletedProcess:
    """Write each of ``modules`` as ``tmp_path/NAME.py`` and ``runner`` as ``tmp_path/runner.py``, then
    run ``python runner.py ARGS`` there, ``tmp_path`` on PYTHONPATH, one OpenMP thread a process."""
    for name, src in modules.items():
        (tmp_path / f"{name}.py").write_text(src)
    (tmp_path / "runner.py").write_text(runner)
    env = dict(os.environ, PYTHONPATH=str(tmp_path), OMP_NUM_THREADS="1")
    return run_python(
        [tmp_path / "runner.py", *args], tmp_path, env, timeout,
        lambda out, err: f"DataLoader run timed out:\n{out}\n{err[-3000:]}",
    )
