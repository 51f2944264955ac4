"""FRK602: a worker_init_fn that seeds the RNGs from constants and the worker id only."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst

from flake8_forksafe.analysis import (
    Analysis,
    CallSite,
    FuncInfo,
    callable_target,
    calls_within,
    keyword,
    kwarg_value,
    positional,
)
from flake8_forksafe.edit import ensure_imports, module_level_names
from flake8_forksafe.knowledge import worker_init_like
from flake8_forksafe.model import UNSAFE, Example, Report, Rule

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory,
#            drop_last, timeout, worker_init_fn, ...)
WORKER_INIT_INDEX = 10
# Builtins that turn a constant into a constant (`int(args.seed) + worker_id`).
PURE_BUILTINS = frozenset({"int", "abs", "hash", "str", "float", "min", "max", "sum", "pow", "round", "len"})
# Parameters of a loader-building function that hold the run's configuration, not a per-epoch value.
RUN_CONSTANT_PARAM = re.compile(r"seed|rank|world_size|num_workers|workers_per|num_gpu|num_replicas", re.I)
PER_CALL_PARAM = re.compile(r"epoch|iter|step|round|count|time", re.I)
# Where a seeder takes its seed: the first positional argument or one of these keywords.
SEED_KEYWORDS = ("seed", "a", "entropy")

Target = Union[FuncInfo, cst.Lambda]


@dataclass(eq=False)
class ConstantSeed:
    call: cst.Call  # the seeding call (or the call of a same-module helper that seeds from an argument)
    arg: cst.Arg  # the seed argument
    torch_seeder: bool  # torch.manual_seed & co: no `% 2**32` needed
    with_worker_id: bool  # the seed involves the worker id
    local_value: Optional[cst.BaseExpression] = None  # `worker_seed = 1000 + worker_id`: rewritten instead
    via: str = ""  # a seeding helper of another module of the project: " (set_seed seeds in utils.py:5)"


def _seed_arg(call: cst.Call) -> Optional[cst.Arg]:
    for kw in SEED_KEYWORDS:
        arg = keyword(call, kw)
        if arg is not None:
            return arg
    pos = positional(call)
    return pos[0] if pos else None


class _Constness:
    """Is an expression made only of constants, names that do not change between epochs
    (module-level names, parameters, attributes like ``args.seed``) and the worker id?"""

    def __init__(
        self,
        a: Analysis,
        scope: Optional[FuncInfo],
        worker_id: Optional[str],
        locals_: Dict[str, List[cst.BaseExpression]],
        varying: FrozenSet[str] = frozenset(),
    ):
        self.a = a
        self.scope = scope
        self.worker_id = worker_id
        self.locals = locals_
        self.varying = varying  # parameters every loader binds to a value that changes per call
        self.uses_worker_id = False

    def const(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > 8:
            return False
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return not isinstance(node, cst.FormattedString) or all(
                self.const(p.expression, depth + 1)
                for p in node.parts
                if isinstance(p, cst.FormattedStringExpression)
            )
        if isinstance(node, cst.Name):
            if node.value in ("True", "False"):
                return True
            if node.value == "None":
                return False  # seed(None): fresh entropy from the OS
            if node.value == self.worker_id:
                self.uses_worker_id = True
                return True
            if node.value in self.locals:
                values = self.locals[node.value]
                return bool(values) and all(self.const(v, depth + 1) for v in values)
            if node.value in self.varying:
                return False  # `partial(init, base_seed=epoch + seed)`: a new value per loader
            return True  # a parameter, a module-level constant, a global like `args`
        if isinstance(node, cst.Attribute):
            return self.const(node.value, depth + 1)  # args.seed, cfg.train.seed, self.seed
        if isinstance(node, cst.Subscript):
            return self.const(node.value, depth + 1) and all(
                isinstance(el.slice, cst.Index) and self.const(el.slice.value, depth + 1) for el in node.slice
            )
        if isinstance(node, cst.BinaryOperation):
            return self.const(node.left, depth + 1) and self.const(node.right, depth + 1)
        if isinstance(node, cst.UnaryOperation):
            return self.const(node.expression, depth + 1)
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Name) and node.func.value in PURE_BUILTINS and node.func.value not in self.locals:
                return all(self.const(arg.value, depth + 1) for arg in node.args)
            return False  # torch.initial_seed(), get_worker_info(), time.time(), os.getpid(), np.random...
        return False


class ConstantWorkerSeed(Rule):
    """A ``worker_init_fn`` that seeds numpy / random / torch from constants and the worker id only
    (``np.random.seed(worker_id)``, ``random.seed(1000 + worker_id)``, ``seed(args.seed + worker_id)``):
    the DataLoader already gives every worker a different seed that changes every epoch
    (``torch.initial_seed()``, ``get_worker_info().seed``); reseeding from constants throws that away,
    so every epoch replays the same augmentations (and ``seed(0)`` makes all workers identical)."""

    code = "FRK602"
    ANCHORS = ("loader call", "dataset class")  # what the pre-filter must find for this rule (prefilter.ANCHORS)
    name = "constant-worker-seed"
    fix_applicability = UNSAFE
    fix_title = "Seed from torch.initial_seed() % 2**32 (different per worker and per epoch)"

    VALID = [
        # the PyTorch documentation's seed_worker
        """
import random
import numpy as np
import torch
from torch.utils.data import DataLoader

def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)

def make(ds):
    return DataLoader(ds, num_workers=4, worker_init_fn=seed_worker)
""",
        # a worker_init_fn never runs with num_workers=0
        """
import numpy as np
from torch.utils.data import DataLoader

def init_fn(worker_id):
    np.random.seed(0)

def make(ds):
    return DataLoader(ds, num_workers=0, worker_init_fn=init_fn)
""",
    ]
    INVALID = [
        Example(
            """
import numpy as np
import torch
from torch.utils.data import DataLoader

def worker_init_fn(worker_id):
    np.random.seed(1000 + worker_id)  # FRK602: 4

def make(ds):
    return DataLoader(ds, num_workers=4, worker_init_fn=worker_init_fn)
""",
            expected_fix="""
import numpy as np
import torch
from torch.utils.data import DataLoader

def worker_init_fn(worker_id):
    np.random.seed(torch.initial_seed() % 2**32)  # FRK602: 4

def make(ds):
    return DataLoader(ds, num_workers=4, worker_init_fn=worker_init_fn)
""",
        ),
    ]

    def check(self, a: Analysis) -> Iterator[Report]:
        # one finding per worker_init_fn, on its first constant seeding call; the fix rewrites them all
        for target, worker_id, persistent, varying in worker_init_fns(a):
            hits = [
                hit
                for hit in constant_seeds(a, target, worker_id, varying)
                if not (persistent and hit.with_worker_id)  # persistent workers: streams go on across epochs
            ]
            if hits:
                yield self.report(hits[0].call, self.message(target, hits), fixable=True, data=hits)

    @staticmethod
    def message(target: Target, hits: List[ConstantSeed]) -> str:
        name = f"worker_init_fn {target.name}()" if isinstance(target, FuncInfo) else "worker_init_fn lambda"
        # one constant-only seed makes every worker identical: the message names the worst of them
        hit = ConstantSeed(hits[0].call, hits[0].arg, False, all(h.with_worker_id for h in hits))
        calls = f" ({len(hits)} seeding calls)" if len(hits) > 1 else ""
        calls += hits[0].via
        if hit.with_worker_id:
            why = "every epoch replays the same random augmentations"
        else:
            why = "every worker and every epoch replay the same random augmentations"
        return (
            f"{name} seeds from constants{' and the worker id' if hit.with_worker_id else ''} only{calls}: {why} "
            f"(the DataLoader already gives each worker a fresh seed every epoch); seed from "
            f"torch.initial_seed() % 2**32 instead"
        )

    def fix(self, a: Analysis, reports: List[Report]) -> cst.Module:
        initial_seed, need_torch = _initial_seed_expr(a)
        new: Dict[int, str] = {}  # the seed expression (or the local's value) -> its replacement
        for hit in (h for r in reports for h in r.data):
            if hit.local_value is not None:  # one local may feed numpy too: always below 2**32
                new[id(hit.local_value)] = f"{initial_seed}() % 2**32"
            else:
                new[id(hit.arg.value)] = f"{initial_seed}()" if hit.torch_seeder else f"{initial_seed}() % 2**32"

        class T(cst.CSTTransformer):
            def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
                code = new.get(id(original_node))
                if code is None or not isinstance(original_node, cst.BaseExpression):
                    return super().on_leave(original_node, updated_node)
                expr = cst.parse_expression(code)
                # keep parentheses written around the old expression
                return expr.with_changes(lpar=original_node.lpar, rpar=original_node.rpar) if original_node.lpar else expr

        module = a.module.visit(T())
        return ensure_imports(module, ["torch"]) if need_torch else module


def _initial_seed_expr(a: Analysis) -> Tuple[str, bool]:
    """How module-level code spells ``torch.initial_seed``, and whether ``import torch`` is needed."""
    known = module_level_names(a.module)
    for local, full in sorted(a.aliases.items()):
        if local in known and full == "torch.initial_seed":
            return local, False
    for local, full in sorted(a.aliases.items()):
        if local in known and full == "torch":
            return f"{local}.initial_seed", False
    return "torch.initial_seed", True


def worker_init_fns(a: Analysis) -> Iterator[Tuple[Target, Optional[str], bool, FrozenSet[str]]]:
    """(function, the name of its worker-id parameter, every loader using it has persistent_workers=True,
    the parameters every such loader binds with ``functools.partial`` to a value that changes from call
    to call) for each worker_init_fn given to a DataLoader of this module that starts workers."""
    uses: Dict[int, List[Tuple[Target, Optional[cst.Call], bool, bool, Optional[FuncInfo]]]] = {}
    order: List[Target] = []
    for lc in a.loader_calls:
        given = lc.arg("worker_init_fn", WORKER_INIT_INDEX)
        if given is None:  # `DataLoader(**loader_args)` with `loader_args["worker_init_fn"] = partial(...)`
            given = kwarg_value(a, lc.node, "worker_init_fn")
        target, partial = callable_target(a, given, lc.site.func)
        if target is None:
            continue
        pers = lc.arg("persistent_workers")
        persistent = isinstance(pers, cst.Name) and pers.value == "True"
        if id(target) not in uses:
            order.append(target)
        uses.setdefault(id(target), []).append((target, partial, lc.workers != "zero", persistent, lc.site.func))
    for target in order:
        entries = uses[id(target)]
        starting = [e for e in entries if e[2]]
        if not starting:
            continue  # only loaders with num_workers=0: a worker_init_fn never runs
        worker_id = _worker_id_param(target, starting[0][1])
        varying: Optional[Set[str]] = None
        for e in starting:
            v = _varying_bindings(a, target, e[1], e[4])
            varying = v if varying is None else varying & v
        yield target, worker_id, all(e[3] for e in starting), frozenset(varying or ())
    # a library's worker_init_fn that no loader of this module uses: the project's loaders (another
    # module, a runner) or its users pass it, bound with functools.partial to the run's settings
    for fn in a.module_functions.values():
        if id(fn) not in uses and _is_worker_init_fn(fn):
            params = _params_of(fn)
            varying = {p for p in params[1:] if not RUN_CONSTANT_PARAM.search(p) or PER_CALL_PARAM.search(p)}
            yield fn, params[0], False, frozenset(varying)


def _is_worker_init_fn(fn: FuncInfo) -> bool:
    """A module-level function written as a DataLoader ``worker_init_fn`` (``knowledge.worker_init_like``)."""
    if fn.cls is not None or fn.self_name:
        return False
    p = fn.node.params
    first = (*p.posonly_params, *p.params)[:1]
    return worker_init_like(fn.name, first[0].name.value if first else None)


def _params_of(target: Target) -> List[str]:
    if isinstance(target, cst.Lambda):
        return [p.name.value for p in (*target.params.posonly_params, *target.params.params)]
    p = target.node.params
    params = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    if target.self_name and params and params[0] == target.self_name:
        params = params[1:]
    return params


def _varying_bindings(a: Analysis, target: Target, partial: Optional[cst.Call], scope: Optional[FuncInfo]) -> Set[str]:
    """The target's parameters that ``functools.partial`` binds to a value that changes from one
    call of the loader-building function to the next (``base_seed=epoch + self.seed``: ``epoch`` is
    a parameter of the function that builds the loader, so each loader gets a new seed). A literal,
    a module-level name and configuration read from attributes (``args.seed``, ``self.seed``) do
    not change: seeding from them replays the same stream every epoch."""
    if partial is None:
        return set()
    params = _params_of(target)
    out: Set[str] = set()
    pos = positional(partial)[1:]
    for name, arg in zip(params, pos):
        if _varies(a, arg.value, scope):
            out.add(name)
    for arg in partial.args:
        if arg.keyword is not None and arg.keyword.value in params and _varies(a, arg.value, scope):
            out.add(arg.keyword.value)
    return out


def _varies(a: Analysis, node: cst.BaseExpression, scope: Optional[FuncInfo], depth: int = 0) -> bool:
    """Does the value of ``node`` (in the function that builds the loader) change between calls?"""
    if depth > 8:
        return False
    if isinstance(node, cst.Name):
        if scope is None:
            return False  # module level: built once
        if node.value in scope.local_assigns:
            return any(_varies(a, v, scope, depth + 1) for v in scope.local_assigns[node.value])
        if node.value not in scope.params or node.value == scope.self_name:
            return False
        # a parameter of the loader-building function may get a new value per call (`epoch`); one
        # named as configuration (`seed`, `rank`, `num_workers`) is the run's setting, the same each epoch
        return not RUN_CONSTANT_PARAM.search(node.value) or bool(PER_CALL_PARAM.search(node.value))
    if isinstance(node, cst.BinaryOperation):
        return _varies(a, node.left, scope, depth + 1) or _varies(a, node.right, scope, depth + 1)
    if isinstance(node, cst.UnaryOperation):
        return _varies(a, node.expression, scope, depth + 1)
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Name) and node.func.value in PURE_BUILTINS:
            return any(_varies(a, arg.value, scope, depth + 1) for arg in node.args)
        return scope is not None  # time.time(), random.randint(...), a helper: not a known constant
    return False  # literals; attributes (args.seed, self.seed): configuration, the same every epoch


def _worker_id_param(target: Target, partial: Optional[cst.Call]) -> Optional[str]:
    if isinstance(target, cst.Lambda):
        params = [p.name.value for p in (*target.params.posonly_params, *target.params.params)]
    else:
        p = target.node.params
        params = [x.name.value for x in (*p.posonly_params, *p.params)]
        if target.self_name and params and params[0] == target.self_name:
            params = params[1:]
    if partial is not None:
        bound_pos = len(positional(partial)) - 1  # the first is the function
        bound_kw = {arg.keyword.value for arg in partial.args if arg.keyword is not None}
        params = [x for x in params[max(bound_pos, 0):] if x not in bound_kw]
    return params[0] if params else None


def _sites(a: Analysis, target: Target) -> Tuple[List[CallSite], Optional[FuncInfo]]:
    if isinstance(target, cst.Lambda):
        return calls_within(a, target.body), None
    return list(target.calls), target


def constant_seeds(
    a: Analysis, target: Target, worker_id: Optional[str], varying: FrozenSet[str] = frozenset()
) -> List[ConstantSeed]:
    k = a.knowledge
    sites, scope = _sites(a, target)
    locals_ = scope.local_assigns if scope is not None else {}
    out: List[ConstantSeed] = []
    helpers = _seeding_helpers(a)
    for site in sites:
        q = site.qname or ""
        helper_param: Optional[str] = None
        via = ""
        if q in k.seeders:
            arg = _seed_arg(site.node)
        elif isinstance(site.node.func, cst.Name) and site.node.func.value in helpers:
            fn, helper_param = helpers[site.node.func.value]
            p = fn.node.params
            arg = _bound_arg(site.node, [x.name.value for x in (*p.posonly_params, *p.params)], helper_param)
        else:
            other = _project_seeding_helper(a, site)
            if other is None:
                continue
            param, params, qname, path, line = other
            arg = _bound_arg(site.node, params, param)
            via = f" ({qname.rsplit('.', 1)[-1]} seeds from it in {path}:{line})"
        if arg is None or arg.star:
            continue  # seed() without a seed: fresh OS entropy
        c = _Constness(a, scope, worker_id, locals_, varying)
        if c.const(arg.value):
            local = None
            if isinstance(arg.value, cst.Name) and len(locals_.get(arg.value.value, [])) == 1:
                local = locals_[arg.value.value][0]
            out.append(ConstantSeed(site.node, arg, q.split(".")[0] == "torch", c.uses_worker_id, local, via))
    return out


def _project_seeding_helper(a: Analysis, site: CallSite) -> Optional[Tuple[str, List[str], str, str, int]]:
    """``index.seeding_function`` of the project function ``site`` calls by name (not a method)."""
    if a.index is None or not site.qname:
        return None
    q = a.absolute(site.qname)
    if not q or q.split(".", 1)[0] in ("torch", "numpy", "random", "builtins"):
        return None
    try:
        return a.index.seeding_function(q)
    except Exception:  # noqa: BLE001 - the index cannot say
        return None


def _seeding_helpers(a: Analysis) -> Dict[str, Tuple[FuncInfo, str]]:
    """Module-level functions that pass one of their parameters straight to a seeder
    (``def set_seed(seed): np.random.seed(seed); torch.manual_seed(seed)``)."""
    out: Dict[str, Tuple[FuncInfo, str]] = {}
    k = a.knowledge
    for name, fn in a.module_functions.items():
        for site in fn.calls:
            if (site.qname or "") in k.seeders:
                arg = _seed_arg(site.node)
                if arg is not None and isinstance(arg.value, cst.Name) and arg.value.value in fn.params:
                    if arg.value.value not in fn.local_assigns:
                        out[name] = (fn, arg.value.value)
                        break
    return out


def _bound_arg(call: cst.Call, params: List[str], param: str) -> Optional[cst.Arg]:
    """The argument of ``call`` that binds ``param`` of a function with these (positional) ``params``."""
    kw = keyword(call, param)
    if kw is not None:
        return kw
    if param not in params:
        return None
    i = params.index(param)
    pos = positional(call)
    return pos[i] if i < len(pos) else None
