"""Hostile input: every file gets its one-line outcome, every other file's findings are reported,
and nothing crashes or hangs, under a 2 GB address-space limit (issue 13).

The inputs are generated here (100,000-deep chains are not committed)."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from flake8_forksafe.guard import MAX_EXPRESSION_DEPTH, expression_depth, too_deep
from tests.conftest import tool

AS_LIMIT = 2 << 30
N = 100_000

GOOD = (
    "from torch.utils.data import Dataset\n\nclass D(Dataset):\n"
    "    def __init__(self, p):\n        self.f = open(p)\n"
)
# a dataset class: the gate lets every deep file through to the guard (a file the gate turns away
# never reaches a parser that could crash: CPython 3.11+ parses these chains or raises)
HEAD = "from torch.utils.data import Dataset, DataLoader\n\nclass Items(Dataset):\n    pass\n\n"

# kind -> (statement of depth N, the depth the guard reports)
CHAINS = {
    "attribute": ("x = y" + ".a" * N, N),
    "call": ("x = f" + "()" * N, N),
    "subscript": ("x = f" + "[0]" * N, N),
    "binary": ("x = " + " - ".join(["a"] * N), N - 1),
    "power": ("x = " + " ** ".join(["a"] * N), N - 1),
    "boolean": ("x = " + " and ".join(["a"] * N), N - 1),
    "comparison": ("x = " + " < ".join(["a"] * N), N - 1),
    "conditional": ("x = " + "1 if x else " * N + "1", N),
    "unary": ("x = " + "-" * N + "1", N),
    "not": ("x = " + "not " * N + "1", N),
    "in_init": ("class E(Dataset):\n    def __init__(self):\n        self.v = " + " - ".join(["a"] * 8000), 7999),
}


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def run(*cmd, cwd, env=None, timeout=600):
    return subprocess.run(
        list(cmd), cwd=cwd, capture_output=True, text=True, timeout=timeout, preexec_fn=limited,
        env={**os.environ, **(env or {})}, errors="replace",
    )


# ----------------------------------------------------------------------------------- the guard


@pytest.mark.parametrize(
    "src,depth",
    [
        ("x = y.a.b.c", 3),
        ("f()()()", 3),
        ("x = a - b - c", 2),
        ("x = [1, 2, 3, 4, 5, 6]", 1),  # commas end a chain
        ("f(a=b.c.d, e=g.h)", 3),
        ("x = 1 if a else 2 if b else 3", 2),
        ("x = not not not a", 3),
        ("s = 'a.b.c(((('  # x.y.z.w", 0),  # strings and comments are not code
        ("s = '''\n.a.a.a\n'''", 0),
        ("x = a.b\ny = c.d", 1),  # a new logical line ends the chain
        ("x = (a.b +\n     c.d)", 4),
    ],
)
def test_expression_depth(src, depth):
    assert expression_depth(src) == depth


def test_real_code_is_far_below_the_limit():
    import flake8_forksafe

    deepest = max(
        expression_depth(p.read_text(encoding="utf-8")) for p in Path(flake8_forksafe.__file__).parent.rglob("*.py")
    )
    assert 5 < deepest < MAX_EXPRESSION_DEPTH // 4


@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_every_chain_kind_is_refused_before_parsing(kind):
    src, depth = CHAINS[kind]
    assert too_deep(HEAD + src + "\n") == f"expression nested {depth} deep; skipped"


# ------------------------------------------------------------------------------ the corpus


def outcomes(d: Path):
    """Write the hostile corpus into ``d``; return {file name: expected stderr line or None},
    and the names of the good files (each with one FRK101 at line 5)."""
    expected = {}
    good = []
    for i in range(4):
        (d / f"good{i}.py").write_text(GOOD)
        good.append(f"good{i}.py")
    for kind, (src, depth) in CHAINS.items():
        name = f"deep_{kind}.py"
        (d / name).write_text(HEAD + src + "\n")
        if len(src) < 1_000_000:
            expected[name] = f"forksafe: {name}: expression nested {depth} deep; skipped"
        else:  # over the size that is analysed: skipped for that before the guard looks
            expected[name] = re.compile(rf"forksafe: {name}: (expression nested {depth} deep; skipped|skipped: .* MB .*)")
    # huge literals: over the analysed size, or more memory than the cap allows -- one line either way
    (d / "huge_list.py").write_text(GOOD + "T = [" + "0, " * 1_000_000 + "]\n")
    expected["huge_list.py"] = re.compile(r"forksafe: huge_list\.py: skipped: .*(MB|memory).*")
    (d / "huge_str.py").write_text(GOOD + 'B = "' + "a" * 5_000_000 + '"\n')
    expected["huge_str.py"] = re.compile(r"forksafe: huge_str\.py: skipped: .*(MB|memory).*")
    # a form feed in indentation: libcst rejects what CPython accepts
    (d / "formfeed.py").write_text(GOOD.replace("    def __init__", "\f    def __init__") + "\f\nx = 1\n")
    expected["formfeed.py"] = re.compile(r"forksafe: formfeed\.py: skipped: syntax not supported by the parser at line \d+: .*")
    # mixed tabs and spaces, valid for CPython: checked as usual (its finding is asserted below)
    (d / "mixed.py").write_text(GOOD.replace("        self.f", "    \tself.f"))
    os.mkfifo(d / "fifo.py")
    os.symlink("loop_b.py", d / "loop_a.py")
    os.symlink("loop_a.py", d / "loop_b.py")
    os.symlink(".", d / "dirloop")
    (d / os.fsdecode(b"bad\xff.py")).write_text(GOOD)
    return expected, good


def assert_survived(r, expected, good, tmp):
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr[-3000:]
    lines = r.stderr.splitlines()
    for name, want in expected.items():
        hits = [ln for ln in lines if ln.startswith(f"forksafe: {name}:")]
        assert len(hits) == 1, (name, lines)
        if isinstance(want, str):
            assert hits[0] == want
        else:
            assert want.fullmatch(hits[0]), hits[0]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    expected, good = outcomes(d)
    return d, expected, good


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_reports_every_other_file_under_2gb(corpus, jobs):
    d, expected, good = corpus
    r = run(tool("forksafe"), "check", "--no-cache", "-j", jobs, ".", cwd=d)
    assert r.returncode == 1, r.stderr[-2000:]
    assert_survived(r, expected, good, d)
    lines = [line for line in r.stdout.splitlines() if " FRK" in line]  # findings, not the summary
    found = sorted(line.split(":")[0] for line in lines)
    assert found == sorted(good + ["bad\\xff.py", "mixed.py"])
    heads = sorted(line.split(" FRK101 ")[0] for line in lines)
    assert heads == sorted([f"{n}:5:18:" for n in good + ["bad\\xff.py"]] + ["mixed.py:5:15:"])
    assert not any(("fifo" in ln or "loop" in ln) for ln in r.stderr.splitlines())  # silent inside a directory


def test_fix_survives_and_fixes_the_good_files(tmp_path):
    expected, good = outcomes(tmp_path)
    r = run(tool("forksafe"), "fix", "--no-cache", ".", cwd=tmp_path)
    assert "Traceback" not in r.stderr
    assert_survived(r, expected, good, tmp_path)
    for name in good + ["mixed.py"]:
        text = (tmp_path / name).read_text()
        assert text != GOOD and "self.f = open(p)" not in text, name
    again = run(tool("forksafe"), "check", "--no-cache", ".", cwd=tmp_path)
    assert again.returncode == 0, again.stdout


def _cpython_parses(path: Path) -> bool:
    """flake8 builds its own ``ast`` tree before any plugin runs and does not catch a RecursionError
    there: a file CPython's parser cannot take crashes flake8 itself, with or without this plugin."""
    r = run(sys.executable, "-c", "import ast, sys; ast.parse(open(sys.argv[1], 'rb').read())", str(path), cwd=path.parent)
    return r.returncode == 0


def test_flake8_survives(corpus):
    d, _, good = corpus
    names = [n for n in os.listdir(d) if n.endswith(".py") and n not in ("fifo.py", "loop_a.py", "loop_b.py")]
    # flake8's own failures, with or without this plugin, are left out: a file CPython cannot parse
    # (see above), and a file name that is not UTF-8 (flake8's formatter cannot print it).
    names = [n for n in names if n.isprintable() and (not n.startswith("deep_") or _cpython_parses(d / n))]
    # The multi-megabyte literals cost flake8's own pycodestyle about 100 CPU seconds each, with or
    # without this plugin (measured); the plugin's side of big files is tested below on smaller ones.
    names = [n for n in names if not n.startswith("huge_")]
    good = [n for n in good if n in names]
    r = run(sys.executable, "-m", "flake8", "--select", "FRK", *sorted(names), cwd=d)
    assert "Traceback" not in r.stderr
    for name in good:
        assert f"{name}:5:18: FRK101" in r.stdout


def test_flake8_on_big_files(tmp_path):
    """Files over the size from which the slicer reduces them (200 KB): the finding is still reported
    at its line, with a big literal before and after the dataset class."""
    (tmp_path / "big_list.py").write_text(GOOD + "T = [" + "0, " * 80_000 + "]\n")
    (tmp_path / "big_str.py").write_text('B = "' + "a" * 250_000 + '"\n\n' + GOOD)
    r = run(sys.executable, "-m", "flake8", "--select", "FRK", "big_list.py", "big_str.py", cwd=tmp_path)
    assert "Traceback" not in r.stderr
    assert r.stdout.splitlines() == [
        "big_list.py:5:18: FRK101 open() opened in D.__init__ and kept in self.f",
        "big_str.py:7:18: FRK101 open() opened in D.__init__ and kept in self.f",
    ]


def test_a_crashing_worker_costs_one_file():
    from flake8_forksafe.frontends.isolation import run_isolated

    items = [1, 2, -signal.SIGSEGV, 3, 4, -signal.SIGKILL, 5, "oom", 6]
    got = run_isolated(items, _work, lambda item, why: f"{item}: {why}", jobs=2, batch=3)
    assert got == [
        "ok 1", "ok 2", f"{-signal.SIGSEGV}: crashed (SIGSEGV)", "ok 3", "ok 4",
        f"{-signal.SIGKILL}: was killed (SIGKILL, out of memory?)", "ok 5", "oom: ran out of memory", "ok 6",
    ]


def _work(item):
    if item == "oom":
        raise MemoryError
    if item < 0:
        os.kill(os.getpid(), -item)
    return f"ok {item}"


def test_a_worker_that_dies_in_check_costs_its_file_only(tmp_path, monkeypatch):
    """The whole path from a worker's death to the outcomes: the analysis of one file kills its
    process (as libcst's native parser did on deep chains before the guard)."""
    import multiprocessing

    from flake8_forksafe.frontends import cli

    if multiprocessing.get_start_method() != "fork":
        pytest.skip("the patched analysis reaches the workers only through fork")
    real = cli.check_file

    def check_file(path, *args, **kw):
        if path.endswith("crash.py"):
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(path, *args, **kw)

    monkeypatch.setattr(cli, "check_file", check_file)
    for i in range(16):
        (tmp_path / f"good{i}.py").write_text(GOOD)
    (tmp_path / "crash.py").write_text(GOOD)
    files = sorted(str(p) for p in tmp_path.iterdir())
    cfg = cli.merge_cli(cli.Config(), jobs=2)
    outcomes = dict(zip(files, cli.run_check(files, cfg, use_cache=False)))
    crash = outcomes.pop(str(tmp_path / "crash.py"))
    assert crash == ([], None, f"{tmp_path / 'crash.py'}: skipped: the analysis crashed (SIGSEGV)")
    assert len(outcomes) == 16
    for found, err, skipped in outcomes.values():
        assert [f.code for f in found] == ["FRK101"] and err is None and skipped is None


# ------------------------------------------------------------------------------- discovery


def test_named_fifo_and_symlink_loop_are_one_line_each(tmp_path):
    os.mkfifo(tmp_path / "x.py")
    os.symlink("l2.py", tmp_path / "l1.py")
    os.symlink("l1.py", tmp_path / "l2.py")
    (tmp_path / "ok.py").write_text(GOOD)
    for cmd in ("check", "fix"):
        r = run(tool("forksafe"), cmd, "--no-cache", "x.py", "l1.py", "ok.py", cwd=tmp_path, timeout=120)
        assert r.returncode == 2
        assert "forksafe: error: x.py: not a regular file (a FIFO); skipped" in r.stderr.splitlines()
        assert "forksafe: error: l1.py: symlink loop; skipped" in r.stderr.splitlines()
        assert "Traceback" not in r.stderr


def test_non_utf8_names_in_every_format(tmp_path):
    name = os.fsdecode(b"bad\xff.py")
    (tmp_path / name).write_text(GOOD)
    r = run(tool("forksafe"), "check", "--no-cache", "--format", "sarif", "-o", "out.sarif", ".", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr == ""
    doc = json.loads((tmp_path / "out.sarif").read_text(encoding="utf-8"))
    uris = [res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for res in doc["runs"][0]["results"]]
    assert uris == ["bad%FF.py"]
    r = run(tool("forksafe"), "check", "--no-cache", "--format", "json", "-o", "out.json", ".", cwd=tmp_path)
    assert r.returncode == 1 and json.loads((tmp_path / "out.json").read_text())[0]["path"] == "bad\\xff.py"
    r = run(tool("forksafe"), "check", "--no-cache", ".", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.startswith("bad\\xff.py:5:18: FRK101 ")


def test_non_utf8_config_is_one_line(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.flake8-forksafe]\nselect = ["FRK\xff"]\n')
    (tmp_path / "ok.py").write_text(GOOD)
    r = run(tool("forksafe"), "check", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"forksafe: error: {tmp_path / 'pyproject.toml'}: cannot read config: not UTF-8 (byte 0xff at offset 37)"
    ]


# ------------------------------------------------------------------------------ unknown codes


@pytest.mark.parametrize("code,closest", [("FKR101", "FRK101"), ("FRK1011", "FRK101"), ("E501", "FRK501"), ("XYZ", None)])
def test_unknown_codes_are_an_error_naming_the_closest(tmp_path, code, closest):
    (tmp_path / "ok.py").write_text(GOOD)
    for args, where in ((("--select", code), "select"), (("--ignore", code), "ignore")):
        r = run(tool("forksafe"), "check", *args, ".", cwd=tmp_path)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
        assert r.stderr.startswith(f"forksafe: error: unknown rule code or prefix in {where}: {code}; did you mean FRK")
        if closest:
            assert f"did you mean {closest}?" in r.stderr
    (tmp_path / "pyproject.toml").write_text(f'[tool.flake8-forksafe]\nextend-select = ["{code}"]\n')
    r = run(tool("forksafe"), "check", ".", cwd=tmp_path)
    assert r.returncode == 2 and "unknown rule code or prefix in extend-select" in r.stderr
    (tmp_path / "pyproject.toml").unlink()


def test_flake8_keeps_its_own_behaviour_for_unknown_codes(tmp_path):
    (tmp_path / "ok.py").write_text(GOOD)
    r = run(sys.executable, "-m", "flake8", "--select", "FKR101", "ok.py", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == ""


# ------------------------------------------------------------------------------------ cache


def _entry(d: Path):
    files = [p for p in (d / ".forksafe_cache").rglob("*.json") if not any(part.startswith("index-v") for part in p.parts)]  # findings, not summaries
    assert len(files) == 1
    return files[0]


@pytest.mark.parametrize(
    "alter",
    [
        lambda e: {**e, "findings": []},  # valid-looking, drops the finding
        lambda e: {**e, "findings": [{**e["findings"][0], "col": None}]},
        lambda e: {**e, "findings": [{**e["findings"][0], "line": "5"}]},
        lambda e: {**e, "findings": [{**e["findings"][0], "line": 0}]},
        lambda e: {**e, "findings": [{**e["findings"][0], "code": "FRK999"}]},
        lambda e: {**e, "findings": [{**e["findings"][0], "fix": "always"}]},
        lambda e: {**e, "findings": [{k: v for k, v in e["findings"][0].items() if k != "message"}]},
        lambda e: {**e, "findings": [{**e["findings"][0], "extra": 1}]},
        lambda e: {**e, "findings": [{**e["findings"][0], "line": 6}]},  # moved: checksum fails
        lambda e: {**e, "schema": 1},
        lambda e: {**e, "checksum": "0" * 64},
        lambda e: e["findings"],  # the old layout
        lambda e: None,
        lambda e: "x",
    ],
)
def test_an_altered_cache_entry_is_recomputed(tmp_path, alter):
    (tmp_path / "ok.py").write_text(GOOD)
    first = run(tool("forksafe"), "check", "ok.py", cwd=tmp_path)
    assert first.returncode == 1
    path = _entry(tmp_path)
    path.write_text(json.dumps(alter(json.loads(path.read_text()))))
    r = run(tool("forksafe"), "check", "ok.py", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (1, first.stdout, "")


@pytest.mark.parametrize("raw", [b"", b"{", b"\xff\xfe", b"[" * 100_000])
def test_a_corrupt_cache_file_is_recomputed(tmp_path, raw):
    (tmp_path / "ok.py").write_text(GOOD)
    first = run(tool("forksafe"), "check", "ok.py", cwd=tmp_path)
    _entry(tmp_path).write_bytes(raw)
    r = run(tool("forksafe"), "check", "ok.py", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (1, first.stdout, "")


def test_a_valid_entry_is_served(tmp_path):
    """The cache really serves files with findings: an entry rewritten with a valid checksum is what the
    second run prints (every row carries the notebook ``cell`` field; an entry layout without it was
    never valid, so findings were recomputed on every run)."""
    from flake8_forksafe.frontends.cache import _checksum

    (tmp_path / "ok.py").write_text(GOOD)
    first = run(tool("forksafe"), "check", "ok.py", cwd=tmp_path)
    assert first.returncode == 1
    path = _entry(tmp_path)
    entry = json.loads(path.read_text())
    assert set(entry["findings"][0]) >= {"cell", "fix", "message"}
    entry["findings"][0]["message"] = "served from the cache"
    entry["checksum"] = _checksum(entry["findings"], path.stem)
    path.write_text(json.dumps(entry))
    r = run(tool("forksafe"), "check", "ok.py", cwd=tmp_path)
    assert "served from the cache" in r.stdout and r.returncode == 1
