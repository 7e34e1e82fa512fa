"""A training script and the local modules it imports, parsed with ``ast`` (never imported or run).

:func:`load_program` reads the entry script and follows ``import x`` / ``from x import y`` /
relative imports to ``.py`` files in the script's directory or the directories above it up to the
repository root, each also with ``src/`` (where a repository's ``tools/train.py`` or
``scripts/train.py`` finds its package, also in the src layout), at most ``MAX_DEPTH`` imports deep,
``MAX_MODULES`` files and ``MAX_BYTES`` per file. It indexes what the data-flow analysis asks:
assignments per scope, attribute and key assignments, functions, and each statement's enclosing
``if`` tests.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from rankmap.errors import InputError
from rankmap.sources import LIMITS, Files, NoFiles

MAX_DEPTH = 3
MAX_MODULES = 32
MAX_BYTES = LIMITS["module"].max_bytes

Scope = ast.AST  # ast.Module, ast.FunctionDef or ast.AsyncFunctionDef


@dataclass(frozen=True)
class Binding:
    """One assignment ``target = value`` (``index``: position in a tuple target, else None)."""

    value: ast.expr
    stmt: ast.stmt
    index: int | None = None


_LINE_BREAKS = re.compile(r"(?<=\r\n)|(?<=\n)|(?<=\r)(?!\n)")


@dataclass
class Module:
    """One parsed file and its indexes."""

    name: str
    path: str
    source: str
    tree: ast.Module
    parent: dict[int, ast.AST] = field(default_factory=dict)  # id(node) -> parent node
    scope_of: dict[int, Scope] = field(default_factory=dict)  # id(stmt) -> enclosing scope
    names: dict[tuple[int, str], list[Binding]] = field(default_factory=dict)  # (scope id, name)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # alias -> (mod, attr)
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = field(default_factory=dict)
    top_modules: set[str] = field(default_factory=set)  # first component of every import
    links: dict[str, Module] = field(default_factory=dict)  # import target -> the local module
    stars: list[str] = field(default_factory=list)  # targets of ``from x import *``
    _split: list[str] | None = field(default=None, repr=False, compare=False)

    def where(self, node: ast.AST) -> str:
        return f"{self.path}:{getattr(node, 'lineno', '?')}"

    def text(self, node: ast.AST) -> str:
        """The node's source, on one line and at most 160 characters (``ast.get_source_segment``
        without splitting the whole file again on every call: it is asked for every value the
        analysis follows)."""
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if first is None or last is None or col is None or end_col is None:
            return ""
        lines = self._lines()[first - 1 : last]
        if not lines:
            return ""
        if len(lines) == 1:
            seg = lines[0].encode()[col:end_col].decode(errors="replace")
        else:
            head = lines[0].encode()[col:].decode(errors="replace")
            seg = (
                head + "".join(lines[1:-1]) + lines[-1].encode()[:end_col].decode(errors="replace")
            )
        return " ".join(seg.split())[:160]

    def _lines(self) -> list[str]:
        if self._split is None:  # the line breaks ast counts: \n, \r\n, \r
            self._split = _LINE_BREAKS.split(self.source)
        return self._split


@dataclass
class Program:
    """The entry module and the local modules reached from it."""

    modules: list[Module]
    by_name: dict[str, Module]
    attrs: dict[str, list[tuple[Module, Binding]]]  # attribute name -> assignments ``x.attr = v``
    keys: dict[str, list[tuple[Module, Binding]]]  # ``x["key"] = v`` assignments
    unresolved: list[str]  # "path:line: import x (not found)" etc.

    @property
    def entry(self) -> Module:
        return self.modules[0]

    @property
    def top_modules(self) -> frozenset[str]:
        return frozenset(m for mod in self.modules for m in mod.top_modules)


def parse_module(source: str, path: str, name: str = "__main__") -> Module:
    """Parse ``source`` and build its indexes (raises SyntaxError/ValueError/RecursionError)."""
    tree = ast.parse(source)
    mod = Module(name=name, path=path, source=source, tree=tree)
    _Indexer(mod).visit_scope(tree, tree)
    return mod


def load_program(entry: Module, script_path: Path | None, files: Files | None = None) -> Program:
    """``entry`` plus the local modules its imports reach (bounded, see the module docstring),
    read through ``files`` (none given: no import is followed)."""
    files = files or NoFiles()
    prog = Program([entry], {entry.name: entry}, {}, {}, [])
    roots = _search_roots(script_path, files)
    queue: list[tuple[Module, int]] = [(entry, 0)]
    by_path: dict[str, Module] = {str(script_path.resolve()) if script_path else entry.path: entry}
    while queue and script_path is not None:
        mod, depth = queue.pop(0)
        if depth >= MAX_DEPTH:
            continue
        for target in sorted({m for m, _ in mod.imports.values()}):
            found = _find_file(target, roots, Path(mod.path).parent, files)
            if found is None:
                continue
            key = str(found.resolve())
            if key in by_path:
                mod.links[target] = by_path[key]
                continue
            if len(prog.modules) >= MAX_MODULES:
                prog.unresolved.append(f"{mod.path}: more than {MAX_MODULES} local modules")
                break
            loaded = _read_module(found, target, prog, files)
            if loaded is not None:
                by_path[key] = loaded
                mod.links[target] = loaded
                prog.modules.append(loaded)
                prog.by_name[target] = loaded
                queue.append((loaded, depth + 1))
    for mod in prog.modules:
        _index_attrs(mod, prog)
    return prog


_REPO_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
MAX_UP = 4  # directories above the script searched for the repository root


def _search_roots(script_path: Path | None, files: Files) -> list[Path]:
    """Where ``import pkg.sub`` may find ``pkg``: the script's directory and those above it up
    to the repository root (the first with a pyproject.toml/setup.py/setup.cfg/.git, at most
    ``MAX_UP`` levels), each also with ``src/`` (the src layout)."""
    if script_path is None:
        return []
    here = script_path.resolve().parent
    roots: list[Path] = []
    at_root = False
    for level, d in enumerate([here, *here.parents]):
        roots += [d, d / "src"]
        at_root = at_root or any(files.exists(d / m) for m in _REPO_MARKERS)
        if level >= MAX_UP or (at_root and level >= 2):
            break
    return roots


def _find_file(dotted: str, roots: list[Path], here: Path | None, files: Files) -> Path | None:
    if dotted.startswith("."):
        if here is None:
            return None
        level = len(dotted) - len(dotted.lstrip("."))
        base = here
        for _ in range(level - 1):
            base = base.parent
        rest = dotted.lstrip(".")
        candidates = [base] if not rest else [base / Path(*rest.split("."))]
        return next((p for c in candidates for p in _as_file(c, files)), None)
    parts = dotted.split(".")
    for root in roots:
        for p in _as_file(root / Path(*parts), files):
            return p
    return None


def _as_file(stem: Path, files: Files) -> list[Path]:
    return [c for c in (stem.with_suffix(".py"), stem / "__init__.py") if files.is_file(c)]


def _read_module(path: Path, name: str, prog: Program, files: Files) -> Module | None:
    try:
        data = files.read_bytes(path, kind="module", what=str(path))
    except InputError as exc:  # too big, unreadable, not a regular file: noted, not an error
        prog.unresolved.append(f"{exc.message} (not read)")
        return None
    try:
        return parse_module(data.decode("utf-8", errors="replace"), str(path), name)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        prog.unresolved.append(f"{path}: could not be parsed")
        return None


class _Indexer:
    def __init__(self, mod: Module) -> None:
        self.mod = mod

    def visit_scope(self, scope: Scope, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            self.mod.parent[id(child)] = node
            if isinstance(child, ast.stmt):
                self.mod.scope_of[id(child)] = scope
                self._stmt(scope, child)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                self.visit_scope(child, child)
            else:
                self.visit_scope(scope, child)

    def _bind(self, scope: Scope, name: str, b: Binding) -> None:
        self.mod.names.setdefault((id(scope), name), []).append(b)

    def _target(self, scope: Scope, target: ast.expr, value: ast.expr, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self._bind(scope, target.id, Binding(value, stmt))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, elt in enumerate(target.elts):
                if isinstance(elt, ast.Name):
                    self._bind(scope, elt.id, Binding(value, stmt, i))
                elif isinstance(elt, ast.Starred) and isinstance(elt.value, ast.Name):
                    self._bind(scope, elt.value.id, Binding(value, stmt, -1))

    def _stmt(self, scope: Scope, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                self._target(scope, t, stmt.value, stmt)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._target(scope, stmt.target, stmt.value, stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.mod.functions.setdefault(stmt.name, []).append(stmt)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                top = alias.name.split(".")[0]
                self.mod.top_modules.add(top)
                self.mod.imports[alias.asname or top] = (
                    alias.name if alias.asname else top,
                    None,
                )
        elif isinstance(stmt, ast.ImportFrom):
            base = "." * stmt.level + (stmt.module or "")
            if stmt.module and not stmt.level:
                self.mod.top_modules.add(stmt.module.split(".")[0])
            for alias in stmt.names:
                if alias.name == "*":
                    self.mod.stars.append(base)
                    self.mod.imports.setdefault(f"\0*{base}", (base, None))
                    continue
                self.mod.imports[alias.asname or alias.name] = (base, alias.name)
                sub = f"{base}.{alias.name}" if base.strip(".") else base + alias.name
                self.mod.imports.setdefault(f"\0{alias.asname or alias.name}", (sub, None))
        elif isinstance(stmt, ast.With):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self._target(scope, item.optional_vars, item.context_expr, stmt)
        elif isinstance(stmt, ast.For):
            self._target(scope, stmt.target, stmt.iter, stmt)


def _index_attrs(mod: Module, prog: Program) -> None:
    for node in ast.walk(mod.tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute):
                prog.attrs.setdefault(t.attr, []).append((mod, Binding(node.value, node)))
            elif isinstance(t, ast.Subscript):
                key = t.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    prog.keys.setdefault(key.value, []).append((mod, Binding(node.value, node)))
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.Call) and _tail(node.func) == "setattr" and len(node.args) == 3:
            key = node.args[1]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                stmt = _enclosing_stmt(mod, node)
                if stmt is not None:
                    prog.attrs.setdefault(key.value, []).append((mod, Binding(node.args[2], stmt)))


def _enclosing_stmt(mod: Module, node: ast.AST) -> ast.stmt | None:
    cur: ast.AST | None = node
    while cur is not None and not isinstance(cur, ast.stmt):
        cur = mod.parent.get(id(cur))
    return cur


def _tail(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def enclosing_ifs(mod: Module, node: ast.AST) -> list[tuple[ast.If, bool]]:
    """The ``if`` statements around ``node``, innermost first, with whether it is in the body."""
    out: list[tuple[ast.If, bool]] = []
    child: ast.AST = node
    cur = mod.parent.get(id(node))
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(cur, ast.If) and child is not cur.test:
            out.append((cur, any(child is s for s in cur.body)))
        child, cur = cur, mod.parent.get(id(cur))
    return out


def except_handler(mod: Module, node: ast.AST) -> ast.ExceptHandler | None:
    """The innermost ``except`` block around ``node`` in its function, if any."""
    cur = mod.parent.get(id(node))
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(cur, ast.ExceptHandler):
            return cur
        cur = mod.parent.get(id(cur))
    return None


def statement_of(mod: Module, node: ast.AST) -> ast.stmt | None:
    """The statement that holds ``node``."""
    return _enclosing_stmt(mod, node)
