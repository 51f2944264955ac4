"""Benchmark flake8-forksafe against parser baselines, flake8 and TorchFix on real code.

Prints figures; it is not a test and asserts nothing about timings (PASS/FAIL labels only
compare the figures with the project's targets).  See benchmarks/README.md.

    python benchmarks/bench.py                               # full corpus, TorchFix on a sample
    python benchmarks/bench.py --only torch --skip-torchfix  # quicker
    python benchmarks/bench.py --corpus-limit 300 --repeat 3 --json out.json
    python benchmarks/bench.py --fuzz 2000                   # also the long hypothesmith run
    python benchmarks/bench.py --profile 15                  # cProfile of `forksafe check`

Every tool runs in its own subprocess, started by a tiny wrapper process that reports the wall
time, the CPU time and the peak RSS (``ru_maxrss`` of its waited-for children) of that one
measurement, so the figures of one tool never leak into another's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ALL_SOURCES, CORPUS_DIR, Corpus, _spread, build_corpus  # noqa: E402

HERE = Path(__file__).resolve().parent
FLAKE8_VENV = HERE / ".venv-flake8"
TORCHFIX_VENV = HERE / ".venv-torchfix"
TORCHFIX_VERSION = "0.7.0"
FLAKE8_STACK = ("flake8", "pycodestyle", "pyflakes", "mccabe")

# Targets (issue): compared with the measured figures, never asserted.
TARGET_AST_RATIO = 1.5  # forksafe check, 1 process  <= 1.5 x  bare ast.parse loop
TARGET_TORCHFIX_SPEEDUP = 50.0  # TorchFix / forksafe check (1 process) >= 50
TARGET_FLAKE8_OVERHEAD = 1.15  # flake8 + FRK  <=  1.15 x  flake8 defaults (-j 1)
TARGET_PEAK_MB = 150.0  # forksafe check peak RSS < 150 MB

# --------------------------------------------------------------------------------------------
# Subprocess measurement
# --------------------------------------------------------------------------------------------

# Runs one or more command lines one after the other (more than one only when the file list had
# to be split to stay under ARG_MAX) and prints one JSON line with its own children's figures.
WRAPPER = r"""
import json, os, resource, subprocess, sys, threading, time
with open(sys.argv[1], encoding="utf-8") as f:
    spec = json.load(f)
page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
tree_peak = 0
stop = threading.Event()

def _tree_rss(root):
    # Sum of RSS over `root` and all its descendants (Linux /proc only).
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open("/proc/%d/statm" % pid, "rb") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            pass
        todo.extend(children.get(pid, ()))
    return total

def _sampler(proc):
    global tree_peak
    while not stop.wait(spec["sample_interval"]):
        tree_peak = max(tree_peak, _tree_rss(proc.pid))

rcs = []
wall = 0.0
with open(spec["stdout"], "ab") as out, open(spec["stderr"], "ab") as err:
    for argv in spec["argvs"]:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=spec["cwd"], stdout=out, stderr=err)
        thread = None
        if spec["sample_tree"] and os.path.isdir("/proc"):
            thread = threading.Thread(target=_sampler, args=(proc,), daemon=True)
            thread.start()
        rcs.append(proc.wait())
        wall += time.perf_counter() - t0
        if thread is not None:
            stop.set()
            thread.join()
            stop.clear()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
scale = 1 if sys.platform == "darwin" else 1024
print(json.dumps({
    "rcs": rcs, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
    "maxrss": ru.ru_maxrss * scale, "tree_peak": tree_peak,
}))
"""

# The bare parser loops: read each file as bytes and parse it; count the files that fail.
PARSE_LOOP = r"""
import json, sys
mode, listfile = sys.argv[1], sys.argv[2]
if mode == "ast":
    import ast
    def parse(data, path):
        ast.parse(data, path)
    errors = (SyntaxError, ValueError)
else:
    import libcst
    def parse(data, path):
        libcst.parse_module(data)
    errors = (Exception,)
with open(listfile, encoding="utf-8") as f:
    paths = f.read().splitlines()
ok = failed = 0
for path in paths:
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        parse(data, path)
    except errors:
        failed += 1
    else:
        ok += 1
print(json.dumps({"ok": ok, "failed": failed}))
"""


def _arg_budget() -> int:
    try:
        arg_max = os.sysconf("SC_ARG_MAX")
    except (AttributeError, ValueError, OSError):
        arg_max = 32768 if os.name == "nt" else 262144
    # Leave room for the environment and the fixed part of the command line.
    env = sum(len(k) + len(v) + 2 for k, v in os.environ.items())
    return max(16384, min(arg_max // 2, arg_max - env - 65536))


def _chunk(prefix: list[str], files: list[str]) -> list[list[str]]:
    budget = _arg_budget() - sum(len(a) + 1 for a in prefix)
    argvs, cur, size = [], [], 0
    for f in files:
        n = len(f.encode()) + 1 + 8  # + pointer
        if cur and size + n > budget:
            argvs.append(prefix + cur)
            cur, size = [], 0
        cur.append(f)
        size += n
    argvs.append(prefix + cur)
    return argvs


@dataclass
class Result:
    tool: str
    files: int
    wall: float  # seconds (best of the repeats; extrapolated for a TorchFix sample)
    cpu: float
    peak_mb: float  # max RSS of the largest single process
    tree_peak_mb: float | None = None  # sampled sum of RSS over the process tree (parallel runs)
    walls: list[float] = field(default_factory=list)
    rcs: list[int] = field(default_factory=list)
    chunks: int = 1
    ok: bool = True
    note: str = ""
    findings: int | None = None
    extrapolated_from: int | None = None  # number of files actually run
    measured_wall: float | None = None  # wall of the sample itself

    @property
    def files_per_s(self) -> float:
        return self.files / self.wall if self.wall > 0 else float("inf")


class Runner:
    def __init__(self, workdir: Path, repeat: int, verbose: bool) -> None:
        self.workdir = workdir
        self.repeat = repeat
        self.verbose = verbose
        self.counter = 0

    def measure(
        self,
        tool: str,
        argvs: list[list[str]],
        nfiles: int,
        *,
        ok_rcs: tuple[int, ...] = (0,),
        sample_tree: bool = False,
        repeat: int | None = None,
        count=None,
    ) -> Result:
        walls, cpus, rss, trees, rcs = [], [], [], [], []
        stdout_path = None
        for _ in range(repeat or self.repeat):
            self.counter += 1
            stdout_path = self.workdir / f"run{self.counter}.out"
            stderr_path = self.workdir / f"run{self.counter}.err"
            spec = {
                "argvs": argvs, "cwd": str(CORPUS_DIR), "stdout": str(stdout_path),
                "stderr": str(stderr_path), "sample_tree": sample_tree, "sample_interval": 0.1,
            }
            spec_path = self.workdir / f"run{self.counter}.json"
            spec_path.write_text(json.dumps(spec), encoding="utf-8")
            out = subprocess.run(
                [sys.executable, "-c", WRAPPER, str(spec_path)],
                check=True, capture_output=True, text=True,
            )
            m = json.loads(out.stdout.strip().splitlines()[-1])
            walls.append(m["wall"])
            cpus.append(m["cpu"])
            rss.append(m["maxrss"])
            trees.append(m["tree_peak"])
            rcs.extend(m["rcs"])
            bad = [rc for rc in m["rcs"] if rc not in ok_rcs]
            if bad:
                err = stderr_path.read_text(errors="replace")[-2000:]
                print(f"  !! {tool}: exit status {bad} (expected {ok_rcs})\n{err}", file=sys.stderr)
            if self.verbose:
                print(f"  .. {tool}: {m['wall']:.2f}s rc={m['rcs']}", file=sys.stderr)
        best = min(range(len(walls)), key=walls.__getitem__)
        res = Result(
            tool=tool, files=nfiles, wall=walls[best], cpu=cpus[best],
            peak_mb=max(rss) / 1e6,
            tree_peak_mb=(max(trees) / 1e6) if sample_tree and max(trees) else None,
            walls=walls, rcs=rcs, chunks=len(argvs),
            ok=all(rc in ok_rcs for rc in rcs),
        )
        if not res.ok:
            res.note = f"exit status {sorted(set(rcs))}"
        if count is not None and stdout_path is not None:
            try:
                res.findings, extra = count(stdout_path)
                if extra:
                    res.note = (res.note + "; " if res.note else "") + extra
            except Exception as exc:  # a figure we could not read is not fatal
                res.note = (res.note + "; " if res.note else "") + f"count failed: {exc}"
        print(
            f"  {tool:<38} {res.wall:8.2f} s  {res.peak_mb:7.1f} MB"
            + (f"  [{res.note}]" if res.note else ""),
            file=sys.stderr, flush=True,
        )
        return res


def _count_lines(pred):
    def count(path: Path):
        n = 0
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if pred(line):
                    n += 1
        return n, ""
    return count


def _count_parse_loop(path: Path):
    lines = path.read_text().strip().splitlines()
    info = json.loads(lines[-1]) if lines else {"ok": 0, "failed": 0}
    return info["failed"], f"{info['failed']} file(s) failed to parse"


def _count_flake8_with_frk(path: Path):
    total = frk = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            total += 1
            frk += _is_frk(line)
    return total, f"{frk} FRK lines"


def _is_frk(line: str) -> bool:
    return " FRK" in line or ":FRK" in line


# --------------------------------------------------------------------------------------------
# Environments
# --------------------------------------------------------------------------------------------


def _bin(venv_or_bin: Path, name: str) -> Path:
    sub = "Scripts" if os.name == "nt" else "bin"
    return venv_or_bin / sub / (name + (".exe" if os.name == "nt" else ""))


def _dist_versions(python: str, names) -> dict[str, str | None]:
    script = (
        "import importlib.metadata as md, json, sys\n"
        "out = {}\n"
        "for n in sys.argv[1:]:\n"
        "    try: out[n] = md.version(n)\n"
        "    except md.PackageNotFoundError: out[n] = None\n"
        "print(json.dumps(out))\n"
    )
    r = subprocess.run([python, "-c", script, *names], check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


def _ensure_venv(path: Path, python: str, requirements: list[str]) -> Path:
    """Create `path` as a venv holding exactly `requirements` (cached by a marker file)."""
    marker = path / ".bench-requirements.json"
    want = {"python": python, "requirements": requirements}
    if marker.exists():
        try:
            if json.loads(marker.read_text()) == want:
                return path
        except ValueError:
            pass
    if path.exists():
        shutil.rmtree(path)
    print(f"[env] creating {path.name}: {' '.join(requirements)}", file=sys.stderr, flush=True)
    subprocess.run([python, "-m", "venv", str(path)], check=True)
    vpy = _bin(path, "python")
    subprocess.run(
        [str(vpy), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements],
        check=True,
    )
    marker.write_text(json.dumps(want))
    return path


def ensure_flake8_env(python: str) -> Path:
    """A venv with the same flake8/pycodestyle/pyflakes/mccabe versions and no other plugin.

    flake8 runs every installed plugin whatever --select says (selection only filters the
    reported codes), so "flake8 defaults without FRK" needs an environment without the plugin.
    """
    versions = _dist_versions(python, FLAKE8_STACK)
    if versions["flake8"] is None:
        raise SystemExit(f"flake8 is not installed for {python}")
    reqs = [f"{n}=={v}" for n, v in versions.items() if v]
    return _ensure_venv(FLAKE8_VENV, python, reqs)


def ensure_torchfix_env(python: str) -> Path:
    return _ensure_venv(TORCHFIX_VENV, python, [f"torchfix=={TORCHFIX_VERSION}"])


def _flake8_cmd(python: str) -> list[str]:
    exe = Path(python).parent / ("flake8" + (".exe" if os.name == "nt" else ""))
    return [str(exe)] if exe.exists() else [python, "-m", "flake8"]


def _forksafe_cmd(python: str) -> list[str]:
    exe = Path(python).parent / ("forksafe" + (".exe" if os.name == "nt" else ""))
    return [str(exe)] if exe.exists() else [python, "-m", "flake8_forksafe"]


def _tool_version(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        return (r.stdout or r.stderr).strip().replace("\n", " ")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def _fmt_table(results: list[Result], base: Result | None) -> str:
    head = ("tool", "files", "wall s", "files/s", "cpu s", "peak MB", "x ast.parse",
            "cpu x ast", "notes")
    rows = []
    for r in results:
        same_files = base is not None and r.files == base.files and base.wall > 0
        ratio = f"{r.wall / base.wall:.2f}" if same_files else "-"
        cpu_ratio = f"{r.cpu / base.cpu:.2f}" if same_files and base.cpu > 0 else "-"
        notes = []
        if r.extrapolated_from:
            notes.append(
                f"EXTRAPOLATED from {r.extrapolated_from} files "
                f"({r.measured_wall:.1f} s measured); cpu extrapolated too, peak of the sample"
            )
        if r.tree_peak_mb:
            notes.append(f"process tree peak {r.tree_peak_mb:.0f} MB (sampled)")
        if r.chunks > 1:
            notes.append(f"{r.chunks} invocations (ARG_MAX)")
        if r.findings is not None and "parse" not in r.note:
            notes.append(f"{r.findings} output lines")
        if r.note:
            notes.append(r.note)
        if len(r.walls) > 1:
            notes.append("best of " + "/".join(f"{w:.2f}" for w in r.walls))
        rows.append((
            r.tool, str(r.files), f"{r.wall:.2f}", f"{r.files_per_s:.1f}", f"{r.cpu:.2f}",
            f"{r.peak_mb:.1f}", ratio, cpu_ratio, "; ".join(notes),
        ))
    widths = [max(len(head[i]), *(len(row[i]) for row in rows)) for i in range(len(head) - 1)]
    right = {1, 2, 3, 4, 5, 6, 7}

    def line(cells):
        parts = [
            (c.rjust(widths[i]) if i in right else c.ljust(widths[i]))
            for i, c in enumerate(cells[:-1])
        ]
        return "  ".join(parts) + "  " + cells[-1]

    sep = "  ".join("-" * w for w in widths) + "  " + "-" * 5
    return "\n".join([line(head), sep, *(line(r) for r in rows)])


def _loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "-"


def _verdict(ok: bool | None) -> str:
    return "n/a " if ok is None else ("PASS" if ok else "FAIL")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter whose torch, flake8 and flake8-forksafe are benchmarked "
                         "(default: this one)")
    ap.add_argument("--only", default="",
                    help=f"comma-separated corpus sources out of {','.join(ALL_SOURCES)}")
    ap.add_argument("--corpus-limit", type=int, default=0,
                    help="use an evenly spaced sample of N corpus files (0 = all)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure each tool N times; report the best wall time (default 1)")
    ap.add_argument("--skip-torchfix", action="store_true")
    ap.add_argument("--torchfix-limit", type=int, default=150,
                    help="run TorchFix on an evenly spaced sample of N files and extrapolate "
                         "its per-file rate to the corpus (0 = the whole corpus; default 150)")
    ap.add_argument("--skip-flake8", action="store_true")
    ap.add_argument("--skip-libcst", action="store_true")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--fuzz", type=int, default=0, metavar="N",
                    help="afterwards run benchmarks/fuzz.py with N hypothesmith examples")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="afterwards profile `forksafe check --jobs 1` over the corpus and print "
                         "the top N flake8_forksafe functions by cumulative time")
    ap.add_argument("--by", choices=("wall", "cpu"), default="wall",
                    help="time the PASS/FAIL verdicts compare (default wall; cpu is steadier on "
                         "a machine busy with other work)")
    ap.add_argument("--keep-output", action="store_true",
                    help="keep the tools' stdout/stderr (the path is printed)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)

    python = os.path.abspath(args.python) if os.sep in args.python else shutil.which(args.python)
    if not python:
        raise SystemExit(f"interpreter not found: {args.python}")
    only = [s.strip() for s in args.only.split(",") if s.strip()] or None

    corpus: Corpus = build_corpus(python, only, args.corpus_limit)
    files = corpus.files
    if not files:
        raise SystemExit("empty corpus")
    src = ", ".join(f"{k} {v}" for k, v in corpus.sources.items())
    print(f"corpus: {len(files)} files, {corpus.total_mb:.1f} MB ({src})")
    print(f"        under {corpus.root}")
    ncpu = os.cpu_count() or 1
    print(f"machine: {platform.platform()}, {ncpu} CPU(s), Python {platform.python_version()} "
          f"(tools run with {python})")

    load_before = _loadavg()
    if load_before is not None and load_before > 0.5 * ncpu:
        print(f"!! load average {load_before:.1f} on {ncpu} CPU(s): the machine is busy, wall "
              "times will be inflated; compare the cpu columns (or --by cpu)")
    workdir = Path(tempfile.mkdtemp(prefix="forksafe-bench-"))
    listfile = workdir / "files.txt"
    listfile.write_text("\n".join(files) + "\n", encoding="utf-8")

    # Warm the page cache so that the first tool does not pay for the disk.
    for f in files:
        with open(corpus.root / f, "rb") as fh:
            fh.read()

    flake8_env = None if args.skip_flake8 else ensure_flake8_env(python)
    torchfix_env = None if args.skip_torchfix else ensure_torchfix_env(python)

    forksafe = _forksafe_cmd(python)
    flake8_plugin = _flake8_cmd(python)
    flake8_plain = [str(_bin(flake8_env, "flake8"))] if flake8_env else None
    torchfix = [str(_bin(torchfix_env, "torchfix"))] if torchfix_env else None

    versions = {"forksafe": _tool_version([*forksafe, "--version"])}
    if flake8_env:
        versions["flake8 (defaults env)"] = _tool_version([*flake8_plain, "--version"])
        versions["flake8 (plugin env)"] = _tool_version([*flake8_plugin, "--version"])
    if torchfix_env:
        versions["torchfix"] = _tool_version([*torchfix, "--version"])
    for k, v in versions.items():
        print(f"  {k}: {v}")
    if flake8_env and "FRK" not in versions.get("flake8 (plugin env)", "") and \
            "forksafe" not in versions.get("flake8 (plugin env)", ""):
        print("  !! the FRK plugin does not show in `flake8 --version` of the plugin env",
              file=sys.stderr)

    runner = Runner(workdir, args.repeat, args.verbose)

    # Warm-up (imports, .pyc files) on a few files; not recorded.
    warm = files[:5]
    warmups = [[*forksafe, "check", "--jobs", "1", "--no-cache", *warm]]
    if flake8_env:
        warmups += [[*flake8_plain, "--isolated", "-j", "1", *warm],
                    [*flake8_plugin, "--isolated", "-j", "1", *warm]]
    for w in warmups:
        subprocess.run(w, cwd=CORPUS_DIR, capture_output=True)

    jobs_default = f"default jobs={ncpu}"
    results: list[Result] = []
    print("measuring ...", file=sys.stderr, flush=True)
    base = runner.measure("ast.parse loop", [[python, "-c", PARSE_LOOP, "ast", str(listfile)]],
                          len(files), count=_count_parse_loop)
    results.append(base)
    if not args.skip_libcst:
        results.append(runner.measure(
            "libcst.parse_module loop", [[python, "-c", PARSE_LOOP, "libcst", str(listfile)]],
            len(files), count=_count_parse_loop))
    frk1 = runner.measure(
        "forksafe check --jobs 1", _chunk([*forksafe, "check", "--jobs", "1", "--no-cache"], files),
        len(files), ok_rcs=(0, 1), count=_count_lines(_is_frk))
    results.append(frk1)
    results.append(runner.measure(
        f"forksafe check ({jobs_default})", _chunk([*forksafe, "check", "--no-cache"], files),
        len(files), ok_rcs=(0, 1), sample_tree=True, count=_count_lines(_is_frk)))
    trivial = workdir / "trivial.py"
    trivial.write_text("x = 1\n")
    results.append(runner.measure(
        "forksafe check, 1 trivial file (start-up)",
        [[*forksafe, "check", "--jobs", "1", "--no-cache", str(trivial)]], 1, ok_rcs=(0, 1)))
    f8_plain = f8_plugin = None
    if flake8_env:
        f8_plain = runner.measure(
            "flake8 defaults -j 1", _chunk([*flake8_plain, "--isolated", "-j", "1"], files),
            len(files), ok_rcs=(0, 1), count=_count_lines(lambda s: True))
        f8_plugin = runner.measure(
            "flake8 defaults + FRK -j 1", _chunk([*flake8_plugin, "--isolated", "-j", "1"], files),
            len(files), ok_rcs=(0, 1), count=_count_flake8_with_frk)
        results += [f8_plain, f8_plugin]
        results.append(runner.measure(
            f"flake8 defaults ({jobs_default})", _chunk([*flake8_plain, "--isolated"], files),
            len(files), ok_rcs=(0, 1), sample_tree=True, count=_count_lines(lambda s: True)))
        results.append(runner.measure(
            f"flake8 defaults + FRK ({jobs_default})",
            _chunk([*flake8_plugin, "--isolated"], files),
            len(files), ok_rcs=(0, 1), sample_tree=True, count=_count_lines(lambda s: True)))

    tf = tf_sample_frk = None
    tf_sample_cpu = 0.0
    if torchfix_env:
        sample = files if args.torchfix_limit <= 0 else _spread(files, args.torchfix_limit)
        tf = runner.measure(
            "TorchFix -j 1", _chunk([*torchfix, "-j", "1"], sample), len(sample),
            ok_rcs=(0, 1), repeat=1, count=_count_lines(lambda s: s.startswith("+++")))
        if 1 in tf.rcs:
            tf.note = (tf.note + "; " if tf.note else "") + "exit 1: TorchFix failed on some files"
        if len(sample) < len(files):
            tf.extrapolated_from = len(sample)
            tf.measured_wall = tf.wall
            tf.wall = tf.wall / len(sample) * len(files)
            tf_sample_cpu = tf.cpu
            tf.cpu = tf.cpu / len(sample) * len(files)
            tf.files = len(files)
            tf.findings = None
            tf_sample_frk = runner.measure(
                "forksafe check --jobs 1 (TorchFix sample)",
                _chunk([*forksafe, "check", "--jobs", "1", "--no-cache"], sample),
                len(sample), ok_rcs=(0, 1), count=_count_lines(_is_frk))
        results.append(tf)
        if tf_sample_frk:
            results.append(tf_sample_frk)

    print()
    print(_fmt_table(results, base))
    print()
    print("  files/s = files / wall; cpu s = user+sys of the tool's processes; peak MB = max RSS")
    print("  of the largest single process (ru_maxrss); x ast.parse = wall / ast.parse loop wall;")
    print("  cpu x ast = the same with cpu s (less sensitive to other load on the machine).")

    load_after = _loadavg()
    if load_after is not None and load_after > 0.5 * ncpu:
        print(f"!! load average {load_after:.1f} on {ncpu} CPU(s) at the end: wall times are "
              "inflated by other work on the machine; the cpu columns are steadier")

    # Targets
    targets = []

    def target(name, value, ok, detail):
        targets.append({"target": name, "value": value, "pass": ok, "detail": detail,
                        "by": args.by})

    by = args.by  # which time the verdicts use: "wall" (default) or "cpu"
    other = "cpu" if by == "wall" else "wall"

    def t_(r: Result, which: str) -> float:
        return r.cpu if which == "cpu" else r.wall

    def describe(a: float, b: float, a_other: float, b_other: float, extra: str = "") -> str:
        return (f"{by} {a:.2f} s vs {b:.2f} s{extra}; {other}: {_ratio(a_other, b_other)}")

    r = t_(frk1, by) / t_(base, by) if frk1.ok and t_(base, by) > 0 else None
    target("forksafe check (1 process) <= 1.5x ast.parse loop",
           r, None if r is None else r <= TARGET_AST_RATIO,
           describe(t_(frk1, by), t_(base, by), t_(frk1, other), t_(base, other)))
    if tf:
        sp = t_(tf, by) / t_(frk1, by) if frk1.ok and tf.ok else None
        label = "extrapolated" if tf.extrapolated_from else "measured"
        target(f"TorchFix / forksafe check (1 process) >= 50x [{label}]",
               sp, None if sp is None else sp >= TARGET_TORCHFIX_SPEEDUP,
               describe(t_(tf, by), t_(frk1, by), t_(tf, other), t_(frk1, other),
                        f" over {len(files)} files"))
        if tf_sample_frk:
            tf_sample = {"wall": tf.measured_wall, "cpu": tf_sample_cpu}
            sp2 = (tf_sample[by] / t_(tf_sample_frk, by)
                   if tf_sample_frk.ok and tf.ok else None)
            target(f"TorchFix / forksafe check (1 process) >= 50x [same {tf.extrapolated_from} "
                   f"files, measured]", sp2,
                   None if sp2 is None else sp2 >= TARGET_TORCHFIX_SPEEDUP,
                   describe(tf_sample[by], t_(tf_sample_frk, by), tf_sample[other],
                            t_(tf_sample_frk, other), " (start-up included)"))
    if f8_plain and f8_plugin:
        o = (t_(f8_plugin, by) / t_(f8_plain, by)
             if f8_plain.ok and f8_plugin.ok else None)
        target("flake8 + FRK <= 1.15x flake8 defaults (-j 1)",
               o, None if o is None else o <= TARGET_FLAKE8_OVERHEAD,
               describe(t_(f8_plugin, by), t_(f8_plain, by), t_(f8_plugin, other),
                        t_(f8_plain, other)))
    target("forksafe check (1 process) peak memory < 150 MB",
           frk1.peak_mb, frk1.peak_mb < TARGET_PEAK_MB if frk1.ok else None,
           f"{frk1.peak_mb:.1f} MB")

    print()
    print(f"targets (verdicts on {by} time; --by {other} for the other):")
    for t in targets:
        v = t["value"]
        vs = "-" if v is None else (f"{v:.1f} MB" if "MB" in t["target"] else f"{v:.2f}x")
        print(f"  [{_verdict(t['pass'])}] {t['target']:<72} {vs:>10}   ({t['detail']})")

    if args.json:
        payload = {
            "corpus": {"files": len(files), "mb": corpus.total_mb, "sources": corpus.sources,
                       "limit": args.corpus_limit},
            "machine": {"platform": platform.platform(), "cpus": ncpu,
                        "loadavg_before": load_before, "loadavg_after": _loadavg(),
                        "python": python, "python_version": platform.python_version()},
            "versions": versions,
            "repeat": args.repeat,
            "results": [
                {**asdict(r), "files_per_s": r.files_per_s,
                 "ratio_vs_ast": (r.wall / base.wall
                                  if base.wall and r.files == base.files else None)}
                for r in results
            ],
            "targets": targets,
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
        print(f"\nwrote {args.json}")

    status = 0
    if args.profile:
        _profile(python, forksafe, files, workdir, args.profile)
    if args.fuzz:
        print(f"\nfuzzing: {args.fuzz} hypothesmith examples (benchmarks/fuzz.py)", flush=True)
        fuzz_cmd = [python, str(HERE / "fuzz.py"), "--examples", str(args.fuzz)]
        rc = subprocess.run(fuzz_cmd).returncode
        print(f"fuzz: {'OK' if rc == 0 else f'FAILED (exit {rc})'}")
        status = status or rc

    if args.keep_output:
        print(f"\ntool output kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    bad = [r.tool for r in results if not r.ok]
    if bad:
        print(f"\nerrors in: {', '.join(bad)}", file=sys.stderr)
        status = status or 2
    return status


def _profile(python: str, forksafe: list[str], files: list[str], workdir: Path, top: int) -> None:
    prof = workdir / "check.prof"
    print(f"\nprofiling `forksafe check --jobs 1 --no-cache` over {len(files)} files ...",
          flush=True)
    listfile = workdir / "profile-files.txt"
    listfile.write_text("\n".join(files) + "\n")
    # cProfile the CLI in-process; the file list comes from a file to avoid ARG_MAX.
    script = (
        "import cProfile, contextlib, io, runpy, sys\n"
        "listfile, prof_path = sys.argv[1], sys.argv[2]\n"
        "files = open(listfile, encoding='utf-8').read().splitlines()\n"
        "sys.argv = ['forksafe', 'check', '--jobs', '1', '--no-cache', *files]\n"
        "prof = cProfile.Profile()\n"
        "try:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        prof.runcall(runpy.run_module, 'flake8_forksafe', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "prof.dump_stats(prof_path)\n"
    )
    subprocess.run([python, "-c", script, str(listfile), str(prof)], cwd=CORPUS_DIR)
    import pstats

    if not prof.exists():
        print("profile failed")
        return
    st = pstats.Stats(str(prof))
    st.sort_stats("cumulative")
    print(f"top {top} flake8_forksafe functions by cumulative time:")
    st.print_stats("flake8_forksafe", top)
    print("top 15 functions overall by internal time:")
    st.sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    raise SystemExit(main())
