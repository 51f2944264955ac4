"""The flake8 plugin: ``flake8 --select FRK``. Same engine, same findings as ``forksafe check``.

flake8 does the selection and ``noqa`` itself, so every rule runs here and no noqa filtering is done.
The plugin takes flake8's ``lines`` (already read and decoded) and flake8's ``ast`` tree (already
parsed for pyflakes), so the pre-filter parses nothing and the slicer takes the pre-filter's facts: only
files that pass it reach libcst, reduced to the statements a finding can involve. The configuration is
built once per process (``parse_options``).
"""

from __future__ import annotations

import ast
from typing import Any, FrozenSet, Iterator, List, Optional, Tuple

from flake8_forksafe import __version__, prefilter
from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source, gate_anchors, no_gc, project_anchor
from flake8_forksafe.model import Finding, SourceError


class ForkSafeChecker:
    name = "flake8-forksafe"
    version = __version__
    _config: Optional[Config] = None
    _anchors: Optional[Tuple[Config, FrozenSet[str]]] = None

    def __init__(self, tree: Any = None, lines: Optional[List[str]] = None, filename: str = "stdin") -> None:
        self.tree = tree
        self.lines = lines or []
        self.filename = filename

    @classmethod
    def add_options(cls, manager) -> None:
        for opt, what in (
            ("--forksafe-extra-handle-factories", "qualified names of extra handle factories (FRK1xx)"),
            ("--forksafe-extra-dataset-bases", "qualified names of extra dataset base classes"),
            ("--forksafe-extra-loaders", "qualified names of extra DataLoader classes"),
        ):
            manager.add_option(opt, default="", parse_from_config=True, comma_separated_list=True, help=what)
        manager.extend_default_ignore(["FRK501"])  # a performance hint, off by default as in forksafe

    @classmethod
    def parse_options(cls, options) -> None:
        from flake8_forksafe.checks import ALL_CODES

        cls._config = Config(
            select=ALL_CODES,  # every rule runs; flake8 applies select/ignore (FRK501 included)
            extra_handle_factories=tuple(getattr(options, "forksafe_extra_handle_factories", None) or ()),
            extra_dataset_bases=tuple(getattr(options, "forksafe_extra_dataset_bases", None) or ()),
            extra_loaders=tuple(getattr(options, "forksafe_extra_loaders", None) or ()),
        )

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        with no_gc():  # as in ``forksafe check``: the parsers' allocations trigger collections that find nothing
            findings = self._findings()
        from flake8_forksafe.frontends.terminal import short_message

        for f in findings:  # the short message, as `forksafe check` prints it; `forksafe explain` has the rest
            yield f.line, f.col, f"{f.code} {short_message(f.message)}", type(self)

    def _findings(self) -> List[Finding]:
        if self._config is None:
            from flake8_forksafe.checks import ALL_CODES

            ForkSafeChecker._config = Config(select=ALL_CODES)
        config = self._config
        if ForkSafeChecker._anchors is None or ForkSafeChecker._anchors[0] is not config:
            ForkSafeChecker._anchors = (config, gate_anchors(config))  # once per process and configuration
        anchors = ForkSafeChecker._anchors[1]
        text = "".join(self.lines)
        k = config.knowledge
        # the gate's facts from flake8's tree: nothing is parsed again, and the slicer takes them
        if self.tree is None:
            verdict = prefilter.gate(text, k, anchors)
        else:
            verdict = prefilter.gate_tree(text, self.tree, k, anchors)
        if not verdict.passes and "class " not in text and "lambda" not in text and "def " not in text:
            return []  # no work: not even the project index (no class to have a base in another module,
            # nothing to pass into a dataset constructor of another module)
        index = None
        if self.filename not in ("stdin", "-"):
            from flake8_forksafe.index import index_for

            index = index_for(self.filename, k, use_cache=False)  # per process and project
        tree = self.tree if isinstance(self.tree, ast.Module) else None
        if not verdict.passes and not project_anchor(index, self.filename, config, text, tree=tree):
            return []  # decided from the text of the modules on the way: nothing summarised
        if index is not None and isinstance(self.tree, ast.Module):
            # offered, as `forksafe check` offers the gate's: the index summarises this file from
            # flake8's tree only if the analysis asks about it and it has no summary yet (a file
            # summarised earlier as another's dependency is not summarised again)
            verdict.tree = self.tree
        try:
            return check_source(text, self.filename, config, noqa=False, index=index, verdict=verdict)
        except SourceError:
            return []  # flake8 reports E902/E999 for files it cannot read or parse
        except RecursionError:
            return []
