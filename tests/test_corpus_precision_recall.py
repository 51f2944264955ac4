"""Precision and recall of ``forksafe check`` on a held-out corpus of realistic training code.

The corpus (``tests/corpus/``, see its README) was written and annotated by an independent reviewer
from ``RULES.md`` alone, without reading the checks or the fixtures. Every expected finding is a
trailing comment ``# FRKnnn: COL`` (COL 0-based) on the line RULES.md says the finding points at;
several on one line read ``# FRK101: 19 # FRK601: 8``.

One real ``forksafe check --select FRK,FRK501 --format json`` subprocess runs over the corpus; the
findings are matched against the annotations at the level of (file, code, line) and precision and
recall must both be >= 0.9. Column disagreements (same file, code and line, different column) are
reported too, and must stay at or below 10% of the matched findings.

Run ``python tests/test_corpus_precision_recall.py`` for the full per-code report.
"""
from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tokenize
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
THRESHOLD = 0.9
ANNOTATION = re.compile(r"#\s*(FRK\d{3}):\s*(\d+)\b")


def _forksafe() -> str:
    p = Path(sys.executable).parent / "forksafe"
    return str(p) if p.exists() else "forksafe"


def expected_findings() -> Counter:
    """(file, code, line, col) from the annotation comments (never from strings/docstrings)."""
    out: Counter = Counter()
    for path in sorted(CORPUS.rglob("*.py")):
        rel = path.relative_to(CORPUS).as_posix()
        src = path.read_text(encoding="utf-8")
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type != tokenize.COMMENT:
                continue
            for code, col in ANNOTATION.findall(tok.string):
                out[(rel, code, tok.start[0], int(col))] += 1
    return out


def actual_findings() -> tuple[Counter, str]:
    # --exclude replaces the project's exclude list, so the corpus is checked even once the project
    # excludes it from its own `forksafe check .` (it is deliberately hazardous).
    cmd = [_forksafe(), "check", "--no-cache", "--select", "FRK,FRK501", "--format", "json",
           "--exclude", "__corpus_excludes_nothing__", "--exit-zero", str(CORPUS.relative_to(ROOT))]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, f"forksafe failed ({r.returncode}):\n{r.stderr}\n{r.stdout[-2000:]}"
    assert "no Python files" not in r.stderr, r.stderr
    out: Counter = Counter()
    for f in json.loads(r.stdout or "[]"):
        rel = (ROOT / f["path"]).resolve().relative_to(CORPUS).as_posix()
        out[(rel, f["code"], f["line"], f["column"] - 1)] += 1  # JSON columns are 1-based
    return out, r.stderr


def _line_of(rel: str, line: int) -> str:
    try:
        return (CORPUS / rel).read_text(encoding="utf-8").splitlines()[line - 1].strip()[:110]
    except (OSError, IndexError):
        return "?"


def compare(expected: Counter, actual: Counter) -> dict:
    """Match on (file, code, line) as multisets; report columns of matched pairs separately."""
    exp_by_key: dict = defaultdict(list)
    act_by_key: dict = defaultdict(list)
    for (rel, code, line, col), n in expected.items():
        exp_by_key[(rel, code, line)] += [col] * n
    for (rel, code, line, col), n in actual.items():
        act_by_key[(rel, code, line)] += [col] * n
    tp: Counter = Counter()
    fp: list = []
    fn: list = []
    wrong_col: list = []
    per_code = defaultdict(lambda: Counter(tp=0, fp=0, fn=0))
    for key in sorted(set(exp_by_key) | set(act_by_key)):
        rel, code, line = key
        e = sorted(exp_by_key.get(key, []))
        a = sorted(act_by_key.get(key, []))
        # pair equal columns first, then the rest in order
        common = list((Counter(e) & Counter(a)).elements())
        e_rest = list((Counter(e) - Counter(common)).elements())
        a_rest = list((Counter(a) - Counter(common)).elements())
        n_pairs = len(common) + min(len(e_rest), len(a_rest))
        for ec, ac in zip(e_rest, a_rest):
            wrong_col.append((rel, code, line, ec, ac))
        tp[code] += n_pairs
        per_code[code]["tp"] += n_pairs
        for ec in e_rest[len(a_rest):]:
            fn.append((rel, code, line, ec))
            per_code[code]["fn"] += 1
        for ac in a_rest[len(e_rest):]:
            fp.append((rel, code, line, ac))
            per_code[code]["fp"] += 1
    n_tp = sum(tp.values())
    precision = n_tp / (n_tp + len(fp)) if n_tp + len(fp) else 1.0
    recall = n_tp / (n_tp + len(fn)) if n_tp + len(fn) else 1.0
    return dict(tp=n_tp, fp=fp, fn=fn, wrong_col=wrong_col, per_code=per_code,
                precision=precision, recall=recall)


def report(res: dict) -> str:
    lines = [f"corpus: {len(list(CORPUS.rglob('*.py')))} files; TP={res['tp']} FP={len(res['fp'])} "
             f"FN={len(res['fn'])} wrong-column={len(res['wrong_col'])}",
             f"precision={res['precision']:.3f} recall={res['recall']:.3f}", "",
             f"{'code':8} {'TP':>4} {'FP':>4} {'FN':>4} {'prec':>6} {'recall':>6}"]
    for code in sorted(res["per_code"]):
        c = res["per_code"][code]
        p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 1.0
        r = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 1.0
        lines.append(f"{code:8} {c['tp']:>4} {c['fp']:>4} {c['fn']:>4} {p:>6.2f} {r:>6.2f}")
    if res["fp"]:
        lines += ["", "false positives (reported, not annotated):"]
        lines += [f"  {rel}:{line}:{col} {code}  | {_line_of(rel, line)}" for rel, code, line, col in res["fp"]]
    if res["fn"]:
        lines += ["", "false negatives (annotated, not reported):"]
        lines += [f"  {rel}:{line}:{col} {code}  | {_line_of(rel, line)}" for rel, code, line, col in res["fn"]]
    if res["wrong_col"]:
        lines += ["", "wrong column (0-based: annotated -> reported):"]
        lines += [f"  {rel}:{line} {code} {ec} -> {ac}  | {_line_of(rel, line)}"
                  for rel, code, line, ec, ac in res["wrong_col"]]
    return "\n".join(lines)


def test_corpus_precision_recall():
    expected = expected_findings()
    assert sum(expected.values()) >= 50, "the corpus annotations went missing"
    actual, _ = actual_findings()
    res = compare(expected, actual)
    text = report(res)
    print(text)
    assert res["precision"] >= THRESHOLD and res["recall"] >= THRESHOLD, text
    assert len(res["wrong_col"]) <= 0.1 * max(res["tp"], 1), text


if __name__ == "__main__":
    actual, stderr = actual_findings()
    if stderr.strip():
        print(stderr, file=sys.stderr)
    print(report(compare(expected_findings(), actual)))
