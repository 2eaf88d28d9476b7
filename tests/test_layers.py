"""The package's shape: its modules import downwards only, none in a circle, and only the engine
packages touch a database driver.

Imports are read from the source (every ``import``, in functions and under ``TYPE_CHECKING``
too), so a lazy import that dodges a cycle at run time counts as the cycle it is.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import vivy

ROOT = Path(vivy.__file__).parent

#: The top-level modules and packages of ``vivy``, lowest layer first; one may import its own
#: layer's and lower layers' modules only.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"vivy", "errors", "clock", "shards", "logs", "heap", "text", "access"}),
    frozenset({"memory"}),
    frozenset({"state"}),
    frozenset({"config"}),
    frozenset({"storage"}),
    frozenset({"llm"}),
    frozenset({"retrieval"}),
    frozenset({"metrics", "actors"}),
    frozenset({"app"}),
    frozenset({"importer", "web", "bot"}),
    frozenset({"commands"}),
    frozenset({"cli"}),
)

#: Database drivers, and the one engine package that may import each.
DRIVERS = {
    "sqlite3": "vivy.storage.sqlite",
    "sqlean": "vivy.storage.sqlite",
    "sqlite_vec": "vivy.storage.sqlite",
    "aiosqlite": "vivy.storage.sqlite",
    "psycopg": "vivy.storage.postgres",
    "psycopg_pool": "vivy.storage.postgres",
}
ENGINES = ("vivy.storage.sqlite", "vivy.storage.postgres")


def module_names() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = module_names()


def imported(name: str, path: Path) -> Iterator[str]:
    """The dotted names ``name``'s source imports: a module where the name is one, else its
    package (``from vivy.storage import notes`` is ``vivy.storage.notes``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                whole = f"{source}.{alias.name}"
                yield whole if whole in MODULES else source


def graph() -> dict[str, set[str]]:
    """Each module's imports of the package's own modules."""
    return {
        name: {target for target in imported(name, path) if target in MODULES}
        for name, path in MODULES.items()
    }


def layer(name: str) -> int:
    """The layer of a module: its top-level module's or package's."""
    parts = name.split(".")
    top = parts[1] if len(parts) > 1 else parts[0]
    return next(i for i, members in enumerate(LAYERS) if top in members)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_top_level_module_has_a_layer() -> None:
    """A new top-level module must be placed in :data:`LAYERS` before it can be checked."""
    placed = frozenset().union(*LAYERS)
    tops = {name.split(".")[1] if "." in name else name for name in MODULES}
    assert tops <= placed, f"place these in LAYERS: {sorted(tops - placed)}"


def test_no_module_imports_a_higher_layer() -> None:
    """Config, storage and state (and every other layer) import nothing above them."""
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in graph().items()
        for target in targets
        if layer(target) > layer(name)
    )
    assert upward == []


def test_no_import_circle() -> None:
    """No two modules import each other, directly or round a longer circle."""
    assert circles(graph()) == []


def test_the_circle_finder_finds_circles() -> None:
    """The check above can fail: a circle of three is found, a chain is not."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_only_an_engine_package_imports_its_driver() -> None:
    """sqlite3, sqlean and sqlite-vec only in ``vivy/storage/sqlite/``, psycopg only in
    ``vivy/storage/postgres/``; neither engine package imports the other."""
    wrong = []
    for name, path in MODULES.items():
        for target in imported(name, path):
            driver = DRIVERS.get(target.split(".")[0])
            if driver is not None and not name.startswith(driver):
                wrong.append(f"{name} -> {target}")
            for engine, other in (ENGINES, ENGINES[::-1]):
                if name.startswith(engine) and (target == other or target.startswith(other + ".")):
                    wrong.append(f"{name} -> {target}")
    assert wrong == []
