"""CUDA use in the data pipeline (FRK301, FRK302): finding it in a function, and keeping data on the CPU.

``cuda_uses(a, fn)`` lists the calls of one function that put data on a GPU or initialise CUDA:

- ``method``: ``x.cuda(...)``;
- ``move``: ``x.to(<CUDA device>, ...)`` / ``x.to(device=<CUDA device>)``;
- ``keyword``: any call given ``device=<CUDA device>`` or ``map_location=<CUDA device>``
  (tensor factories, ``torch.load``, module constructors);
- ``torch_cuda``: a ``torch.cuda.*`` call other than the queries of ``rules/cuda.toml``
  (``set_device``, ``current_device``, ``Stream``, ``FloatTensor``...);
- ``default_device``: ``torch.set_default_device(<CUDA>)`` / ``set_default_tensor_type(torch.cuda.*)``
  (worker side only);
- ``helper``: a call of a function defined in another module of the project that does one of the
  above itself or through the project functions it calls (the project index's summaries:
  ``utils.move_to_cuda(sample)`` whose body calls ``torch.cuda.current_device()``).

A CUDA device is whatever ``Analysis.is_cuda_value`` says may be CUDA.

``keep_on_cpu(a, uses)`` is the (unsafe) fix: ``.cuda()`` and CUDA ``.to(...)`` are dropped (``x.cuda()``
becomes ``x``; ``x.to("cuda", torch.half)`` becomes ``x.to(torch.half)``), a statement that only
moved something (``self.model.cuda()``, ``x = x.to(device)``) is removed, ``device=`` is removed from
``torch.*`` calls (their default is the CPU) and becomes ``"cpu"`` elsewhere, ``map_location=``
becomes ``"cpu"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from flake8_forksafe.analysis import (
    Analysis,
    CallSite,
    ClassInfo,
    FuncInfo,
    call_ids,
    dotted,
    keyword,
    positional,
    self_attr,
    string_value,
)

# keyword arguments of `.to()` that only make sense together with the device being dropped
_MOVE_ONLY = ("non_blocking", "copy")


@dataclass(eq=False)
class CudaUse:
    call: cst.Call
    kind: str  # "method", "move", "keyword", "torch_cuda", "default_device", "helper"
    arg: Optional[cst.Arg] = None  # the device argument (move, keyword, default_device)
    qname: Optional[str] = None
    via: Optional[Tuple[str, str, str, int]] = None  # helper: (CUDA call, function, path, line)
    # the device is a module-level name of another module of the project: (name, path, line)
    origin: Optional[Tuple[str, str, int]] = None

    @property
    def fixable_kind(self) -> bool:
        return self.kind in ("method", "move", "keyword")

    def describe(self) -> str:
        """A short rendering of the offending call for messages: ``.cuda()``, ``.to("cuda")``..."""
        f = self.call.func
        if self.kind == "method" and isinstance(f, cst.Attribute):
            return f".{f.attr.value}()"
        if self.kind == "move" and self.arg is not None:
            inner = _short(self.arg.value)
            if self.arg.keyword is not None:
                inner = f"{self.arg.keyword.value}={inner}"
            return f".to({inner})" + self._origin()
        if self.kind == "keyword" and self.arg is not None and self.arg.keyword is not None:
            name = dotted(f) or "..."
            text = f"{name}({self.arg.keyword.value}={_short(self.arg.value)})" + self._origin()
            if self.via is not None:  # a project class/function that moves to the device it is given
                _, func, path, line = self.via
                text += f" (the device is used in {func}, {path}:{line})"
            return text
        if self.kind == "default_device" and self.arg is not None:
            return f"{self.qname}({_short(self.arg.value)})"
        if self.kind == "helper" and self.via is not None:
            what, func, path, line = self.via
            return f"{dotted(f) or 'call'}() (CUDA: {what} in {func}, {path}:{line})"
        return f"{self.qname or dotted(f) or 'call'}()"

    def _origin(self) -> str:
        if self.origin is None:
            return ""
        name, path, line = self.origin
        return f" ({name} may be a CUDA device: {path}:{line})"


def _elsewhere(got: Tuple[str, str, int]) -> Optional[Tuple[str, str, int]]:
    """What ``Analysis.cuda_value`` found, when another module of the project decided it."""
    return got if got[1] else None


def _project_device(a: Analysis, site: CallSite, key: str) -> Optional[Tuple[str, str, int]]:
    """For a call of a class or function defined in the project (not a method of an object):
    whether its ``key`` argument reaches CUDA work there (``ProjectIndex.device_param``)."""
    f = site.node.func
    base = _init_of_base(a, site)
    if base is not None:
        return a.index.device_param(base, key)
    if not site.qname or isinstance(f, cst.Attribute) and self_attr(f.value) is not None:
        return None
    q = a.absolute(site.qname)
    if not q or q.split(".", 1)[0] in ("torch", "numpy", "builtins"):
        return None
    return a.index.device_param(q, key)


def _init_of_base(a: Analysis, site: CallSite) -> Optional[str]:
    """The project class whose ``__init__`` a ``super().__init__(...)`` (the first base of the
    class the call is in) or a ``Base.__init__(self, ...)`` call runs, qualified; None for another
    call or a class outside the project."""
    f = site.node.func
    if not (isinstance(f, cst.Attribute) and f.attr.value == "__init__"):
        return None
    if isinstance(f.value, cst.Call) and dotted(f.value.func) == "super":
        cls = a.owner_class(site.func)
        if cls is None or not cls.bases:
            return None
        local = a.local_base(cls.bases[0])
        q = a.class_qname(local) if local is not None else a.absolute(cls.base_qnames[0])
    else:
        q = a.absolute(a.qualify(f.value))
    if not q or q.split(".", 1)[0] in ("torch", "numpy", "builtins"):
        return None
    return q


def _short(node: cst.CSTNode, limit: int = 40) -> str:
    text = " ".join(cst.Module(body=[]).code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _device_arg(call: cst.Call) -> Optional[cst.Arg]:
    kw = keyword(call, "device")
    if kw is not None:
        return kw
    pos = positional(call)
    return pos[0] if pos else None


def _is_cuda_type(a: Analysis, node: cst.BaseExpression) -> bool:
    """``torch.cuda.FloatTensor`` or ``"torch.cuda.FloatTensor"`` (set_default_tensor_type)."""
    text = string_value(node)
    if text is None:
        text = a.qualify(node) if dotted(node) else None
    return bool(text) and text.startswith("torch.cuda.")


def cuda_uses(
    a: Analysis, fn: Optional[FuncInfo], worker: bool = False, sites: Optional[Sequence[CallSite]] = None
) -> List[CudaUse]:
    """The calls of ``fn`` (not of functions nested in it), or the given call sites, that use CUDA,
    in source order. ``worker``: also ``torch.set_default_device(<CUDA>)``."""
    k = a.knowledge
    out: List[CudaUse] = []
    inside_device_args: Set[int] = set()
    for site in sites if sites is not None else (fn.calls if fn is not None else []):
        call = site.node
        fn = site.func
        f = call.func
        q = site.qname or ""
        use: Optional[CudaUse] = None
        if isinstance(f, cst.Attribute) and f.attr.value in k.cuda_methods and not a.is_module_object(f.value):
            if not q.startswith("torch.cuda"):
                use = CudaUse(call, "method")
        elif isinstance(f, cst.Attribute) and f.attr.value in k.move_methods and not a.is_module_object(f.value):
            arg = _device_arg(call)
            got = a.cuda_value(arg.value, fn) if arg is not None else None
            if got is not None:
                use = CudaUse(call, "move", arg, origin=_elsewhere(got))
        if use is None and q in k.default_device_setters and call.args:
            arg = keyword(call, "device") or call.args[0]
            if worker and (a.is_cuda_value(arg.value, fn) or _is_cuda_type(a, arg.value)):
                use = CudaUse(call, "default_device", arg, q)
            elif not worker:
                continue
        if use is None:
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value in k.device_keywords:
                    got = a.cuda_value(arg.value, fn)
                    if got is not None:
                        use = CudaUse(call, "keyword", arg, q, origin=_elsewhere(got))
                        break
            if use is not None and a.index is not None:
                goes = _project_device(a, site, use.arg.keyword.value)  # type: ignore[union-attr]
                if goes is not None and not goes[0]:
                    continue  # a project class/function that only stores the device (lazy model load)
                if goes is not None and goes[0] != "?":
                    use.via = ("device", goes[0], goes[1], goes[2])
        if use is None and q.startswith("torch.cuda.") and q not in k.cuda_queries:
            use = CudaUse(call, "torch_cuda", None, q)
        if use is None and a.index is not None:
            via = a.project_call_cuda(site)
            if via is not None:
                use = CudaUse(call, "helper", None, q, via)
        if use is None:
            continue
        if use.arg is not None:
            inside_device_args |= call_ids(use.arg.value)
        out.append(use)
    # `torch.zeros(3, device=torch.cuda.current_device())`: one finding, on the outer call
    return [u for u in out if id(u.call) not in inside_device_args]


# --------------------------------------------------------------------------------------------------
# the fix


def _without(args: Sequence[cst.Arg], drop: Set[int]) -> List[cst.Arg]:
    """``args`` less the ones in ``drop``, the last one keeping the original last comma."""
    kept = [arg for arg in args if id(arg) not in drop]
    if kept and args and kept[-1] is not args[-1]:
        kept[-1] = kept[-1].with_changes(comma=args[-1].comma)
    return kept


class _KeepOnCpu(cst.CSTTransformer):
    def __init__(self, a: Analysis, uses: Sequence[CudaUse]) -> None:
        self.a = a
        self.drop: Set[int] = set()  # calls replaced by their receiver
        self.edit: Dict[int, List[int]] = {}  # call -> ids of args to remove
        self.to_cpu: Set[int] = set()  # args whose value becomes "cpu"
        for u in uses:
            call = u.call
            if u.kind == "method":
                self.drop.add(id(call))
            elif u.kind == "move" and u.arg is not None:
                gone = {id(u.arg)} | {
                    id(arg) for arg in call.args if arg.keyword is not None and arg.keyword.value in _MOVE_ONLY
                }
                if all(id(arg) in gone for arg in call.args):
                    self.drop.add(id(call))
                else:
                    self.edit[id(call)] = list(gone)
            elif u.kind == "keyword" and u.arg is not None:
                q = u.qname or ""
                if u.arg.keyword is not None and u.arg.keyword.value == "device" and q.split(".")[0] == "torch":
                    self.edit.setdefault(id(call), []).append(id(u.arg))
                else:
                    self.to_cpu.add(id(u.arg))

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        if id(original_node) in self.to_cpu:
            return updated_node.with_changes(value=cst.SimpleString('"cpu"'))
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        key = id(original_node)
        if key in self.drop and isinstance(updated_node.func, cst.Attribute):
            receiver = updated_node.func.value
            # parentheses around the whole call stay around what is left of it
            if updated_node.lpar and not receiver.lpar:
                receiver = receiver.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
            return receiver
        if key in self.edit:
            # map original arg ids to the updated args by position
            gone = set(self.edit[key])
            drop_ids = {id(u) for o, u in zip(original_node.args, updated_node.args) if id(o) in gone}
            return updated_node.with_changes(args=_without(updated_node.args, drop_ids))
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ):
        body = []
        changed = False
        for orig, small in zip(original_node.body, updated_node.body):
            if self._only_moved(orig, small):
                changed = True
                continue
            body.append(small)
        if not changed:
            return updated_node
        if not body:
            return cst.RemoveFromParent()
        last = body[-1]
        if isinstance(last, (cst.Expr, cst.Assign, cst.AnnAssign, cst.AugAssign)) and last.semicolon != cst.MaybeSentinel.DEFAULT:
            body[-1] = last.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(body=body)

    def _only_moved(self, orig: cst.BaseSmallStatement, small: cst.BaseSmallStatement) -> bool:
        """``model.cuda()`` alone, or ``x = x.to(device)``: nothing left to do once the move is gone."""
        if isinstance(orig, cst.Expr) and isinstance(orig.value, cst.Call) and id(orig.value) in self.drop:
            return True
        if (
            isinstance(orig, cst.Assign)
            and isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(orig.value, cst.Call)
            and id(orig.value) in self.drop
        ):
            code = cst.Module(body=[]).code_for_node
            return code(small.targets[0].target).strip() == code(small.value).strip()
        return False


def keep_on_cpu(a: Analysis, uses: Sequence[CudaUse]) -> cst.Module:
    """The module with every given use of CUDA turned into CPU code (see the module docstring)."""
    return a.module.visit(_KeepOnCpu(a, [u for u in uses if u.fixable_kind]))


def where(a: Analysis, cls: ClassInfo, fn: FuncInfo, root: str) -> str:
    """``DS.__init__``, ``DS._load() (called from __init__)`` or ``helper() (called from DS.__init__)``."""
    owner = a.owner_class(fn)
    if owner is not None and fn.parent is None:
        if fn.name in ("__init__", "__len__", "__getitem__", "__getitems__", "__iter__", "__next__"):
            return f"{owner.name}.{fn.name}"
        if fn.name == root:
            return f"{owner.name}.{fn.name}()"
        return f"{owner.name}.{fn.name}() (called from {root})"
    return f"{fn.name}() (called from {cls.name}.{root})"
