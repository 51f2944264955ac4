"""What a dataset constructor call builds and keeps, shared by the families that follow objects into
datasets: the pickling family (a lambda or local function given to the constructor) and the handles
family (an open handle given to it). Which class or function a call makes a dataset with
(``dataset_constructor``: same-file classes, library dataset modules, dataset base names, classes
and dataset factories of other modules of the project), which parameters its ``__init__`` keeps on
``self`` as they are (``constructor_stores``), and the functions and classes defined inside a
function that a name refers to (``local_definition(s)``)."""

from __future__ import annotations

import weakref
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from flake8_forksafe.analysis import Analysis, CallSite, ClassInfo, FuncInfo


_LOCAL_INDEX: "weakref.WeakKeyDictionary[Analysis, Dict[Tuple[int, str], object]]" = weakref.WeakKeyDictionary()


def _local_index(a: Analysis) -> Dict[Tuple[int, str], object]:
    """(id of the enclosing FuncInfo, name) -> the function or class defined directly inside it."""
    index = _LOCAL_INDEX.get(a)
    if index is None:
        index = {}
        for c in a.classes:
            if c.in_function is not None:
                index.setdefault((id(c.in_function), c.name), c)
        for n in a.nested_functions:
            if n.cls is None and n.parent is not None:
                index[(id(n.parent), n.name)] = n  # a def wins over a class of the same name
        _LOCAL_INDEX[a] = index
    return index


def local_definitions(a: Analysis, name: str, scope: Optional[FuncInfo]) -> List[object]:
    """Every function named ``name`` defined directly inside the innermost function enclosing
    ``scope`` that defines one, in source order (one per branch: ``if lib == "PIL": def func(x): ...
    elif lib == "PyTorch": def func(x): ...``), or ``local_definition``'s class, or []."""
    one = local_definition(a, name, scope)
    if not isinstance(one, FuncInfo):
        return [one] if one is not None else []
    return [n for n in a.nested_functions if n.parent is one.parent and n.cls is None and n.name == name] or [one]


def local_definition(a: Analysis, name: str, scope: Optional[FuncInfo]):
    """The FuncInfo / ClassInfo of a function or class named ``name`` defined inside a function that
    encloses ``scope`` (innermost first), or None."""
    if scope is None:
        return None
    index = _local_index(a)
    if not index:
        return None
    f = scope
    while f is not None:
        hit = index.get((id(f), name))
        if hit is not None:
            return hit
        f = f.parent
    return None


def constructed_class(a: Analysis, site: CallSite) -> Optional[ClassInfo]:
    """The class of this file ``site`` calls by its name (a local class first), or None."""
    f = site.node.func
    if not isinstance(f, cst.Name):
        return None
    d = local_definition(a, f.value, site.func)
    if isinstance(d, ClassInfo):
        return d
    return a.module_classes.get(f.value)


def dataset_constructor(a: Analysis, site: CallSite) -> Optional[str]:
    """The name of the dataset class ``site`` constructs (same-file dataset classes, classes of
    ``dataset_modules`` such as ``torchvision.datasets``, dataset base names), or None."""
    c = constructed_class(a, site)
    if c is not None:
        return c.name if c in a.dataset_classes else None
    q = site.qname
    if not q:
        return None
    last = q.rsplit(".", 1)[-1]
    if a.knowledge.in_dataset_module(q):
        return last
    if a._is_dataset_base_name(q):
        return last
    if last[:1].isupper() and a.project_dataset_base(q):
        return last  # a dataset class of another module of the project (the index)
    if _project_dataset_factory(a, q, site) is not None:
        return last  # a function of the project (this module's too) that makes datasets of its arguments
    return None


def factory_qname(a: Analysis, qname: Optional[str], site: Optional[CallSite] = None) -> Optional[str]:
    """The absolute name of a function called as ``qname`` (``a.qualify``'s): a module-level function
    of this file called by its name (not one of the same name defined in a function enclosing
    ``site``) gets this module's name."""
    q = a.absolute(qname)
    if q and q in a.module_functions and q not in a.aliases and (site is None or local_definition(a, q, site.func) is None):
        mod = a.module_name[0]
        q = f"{mod}.{q}" if mod else q
    return q


def _project_dataset_factory(
    a: Analysis, qname: Optional[str], site: Optional[CallSite] = None
) -> Optional[Tuple[List[str], Set[str], str]]:
    """What the index says of the dataset factory ``qname`` (``dataset_factory``): a function of
    another module of the project, or a module-level function of this file (``factory_qname``)."""
    if a.index is None or not qname:
        return None
    try:
        return a.index.dataset_factory(factory_qname(a, qname, site), a._is_dataset_base_name)
    except Exception:  # noqa: BLE001 - the index cannot say
        return None


def constructor_stores(a: Analysis, site: CallSite, base: Optional[ClassInfo]) -> Tuple[List[str], Set[str], str]:
    """(the parameters of the ``__init__`` that ``site`` runs, after ``self``; those it stores on
    ``self`` as they are (``self._transform = transform``); where it is, when in another module:
    `` (stored by EpicKitchenDataset.__init__, data/epic_kitchen.py:88)``). A same-file ``__init__``
    is read from the file, one in another module of the project from the project index; nothing
    known: nothing stored."""
    init: Optional[FuncInfo] = None
    owner: Optional[ClassInfo] = base
    if base is not None:
        init = a.resolve_method(base, "__init__", after=base)
    else:
        f = site.node.func
        owner = a.module_classes.get(f.value) if isinstance(f, cst.Name) else None
        if owner is None and isinstance(f, cst.Name):
            d = local_definition(a, f.value, site.func)
            owner = d if isinstance(d, ClassInfo) else None
        if owner is not None:
            init = a.resolve_method(owner, "__init__")
    if init is not None:
        params = [p for p in init.params if p != init.self_name]
        kept = {
            sa.value.value
            for sa in init.self_assigns
            if sa.kind == "assign" and isinstance(sa.value, cst.Name) and sa.value.value in params
        }
        return params, kept, ""
    if a.index is None:
        return [], set(), ""
    if owner is not None:
        q = a.class_qname(owner)
    elif site.qname:  # a class imported from another module of the project
        ref = a.index.resolve_class(a.absolute(site.qname))
        q = ref.qname if ref is not None else None
        if ref is None:
            made = _project_dataset_factory(a, site.qname, site)
            if made is not None:
                return made
    else:
        q = None
    if q is None:
        return [], set(), ""
    ref = a.index.resolve_method(q, "__init__", after=q if base is not None else None)
    m = a.index.method(ref) if ref is not None else None
    if m is None or ref is None:
        return [], set(), ""
    params = list(m.params[1:])
    kept = {x.detail for x in m.assigns if x.kind == "param" and x.detail in params}
    return params, kept, f" (kept by {ref.label}, {ref.path}:{ref.line})"
