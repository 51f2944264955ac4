"""The analysis index walks the libcst tree directly (``_Indexer.walk``) instead of through libcst's
visitor (``module.visit``): both must collect the same facts, in the same order, from the same nodes.
Compared on every fixture, held-out corpus file, rule example and generated program."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings

from flake8_forksafe import analysis
from flake8_forksafe.analysis import Analysis, _Indexer
from flake8_forksafe.config import Config
from flake8_forksafe.source import decode
from tests.helpers import fixture_files
from tests.test_prefilter import CORPUS, programs

K = Config().knowledge


def _sources():
    out = [(f"{p.parent.name}/{p.name}", decode(p.read_bytes())) for p in fixture_files() + CORPUS]
    from flake8_forksafe.checks import ALL_RULES

    for rule in ALL_RULES:
        for i, ex in enumerate((*rule.VALID, *rule.INVALID)):
            out.append((f"{rule.code}-example-{i}", textwrap.dedent(ex if isinstance(ex, str) else ex.code)))
    return out


def _i(node):
    return None if node is None else id(node)


def _func(f):
    return (
        _i(f.node), f.name, _i(f.cls.node) if f.cls else None, _i(f.parent.node) if f.parent else None,
        f.params, f.self_name, [_i(c.node) for c in f.calls], sorted(f.name_calls), sorted(f.self_calls),
        f.super_init, sorted(f.explicit_base_inits), sorted(f.closed),
        [(s.attr, _i(s.value), _i(s.stmt), s.kind) for s in f.self_assigns], sorted(f.self_reads),
        {k: [_i(v) for v in vs] for k, vs in f.local_assigns.items()}, sorted(f.with_names),
        [_i(t) for t in f.tests], [_i(x) for x in f.lambdas], f.is_generator, f.getpid,
        [_i(n.node) for n in f.nested],
    )


def summary(a: Analysis):
    return (
        dict(a.aliases), sorted(a.module_aliases), list(a.star_imports),
        [(_i(c.node), c.name, [_i(b) for b in c.bases], c.base_qnames, _i(c.in_function.node) if c.in_function else None,
          sorted(c.methods), sorted(c.properties), c.defines_reduce) for c in a.classes],
        sorted(a.module_classes), sorted(a.module_functions),
        [_func(f) for f in a.functions], [_i(f.node) for f in a.nested_functions],
        [(_i(s.node), s.qname, _i(s.func.node) if s.func else None, _i(s.stmt), _i(s.top)) for s in a.calls],
        [(_i(node), _i(fn.node) if fn else None, _i(stmt)) for node, fn, stmt in a.lambdas],
        {k: [_i(v) for v in vs] for k, vs in a.module_assigns.items()},
    )


def both(text: str):
    module = cst.parse_module(text)
    direct = summary(Analysis(module, K))
    real = _Indexer.walk
    _Indexer.walk = lambda self, node: node.visit(self)  # libcst's own visitor dispatch
    try:
        visited = summary(Analysis(module, K))
    finally:
        _Indexer.walk = real
    return direct, visited


SOURCES = _sources()


@pytest.mark.parametrize("name,text", SOURCES, ids=[n for n, _ in SOURCES])
def test_direct_walk_equals_libcst_visit(name, text):
    try:
        cst.parse_module(text)
    except Exception:
        pytest.skip("does not parse")
    direct, visited = both(text)
    assert direct == visited


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=programs())
def test_generated_programs_direct_walk_equals_libcst_visit(src):
    direct, visited = both(src)
    assert direct == visited


def test_every_hooked_node_is_seen_in_order():
    src = textwrap.dedent(
        """\
        import os as o
        from torch.utils.data import DataLoader


        @deco(lambda: 1)
        def f(a, *b, c=g(), **d) -> h():
            async with x() as y, z() as w:
                pass
            del self.k
            q = [i for i in range(3) if p(i)]
            yield f"{s(1)}"


        class C(Base, metaclass=M):
            def m(self):
                self.x = open(self.p)
                super().__init__()
                self.items.append(k())
                return lambda: self.x if t() else u()
        """
    )
    direct, visited = both(src)
    assert direct == visited
    calls = [qname for _, qname, *_ in direct[8]]
    # source order, an outer call before the calls inside it (``super().__init__()``: no qualified name)
    assert calls == ["deco", "g", "h", "x", "z", "range", "p", "s", "open", None, "super", "self.items.append",
                     "k", "t", "u"]
    order = analysis._TYPES[cst.FunctionDef].order
    assert order.index("decorators") < order.index("params") < order.index("returns") < order.index("body")
