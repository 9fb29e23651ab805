"""The import graph of the house (docs/design.md), read from the source with ``ast``.

Nothing is imported: every ``import`` and ``from ... import`` statement of every module is
read, at module level or deferred inside a function (or under ``TYPE_CHECKING``), since a
deferred import is a dependency all the same.

* The core, ``deniable`` (``shared/``), imports nothing above it.
* The service kit, ``deniable.service``, imports neither service nor the device client.
* The device client imports the core only (never the kit: the device install has no Flask).
* The aggregator and the relay import neither each other nor the device client.
* No cycle joins the top-level packages.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Source folder -> the top-level package it holds (pyproject.toml's package-dir).
PACKAGES = {
    "shared": "deniable",
    "client": "deniable.client",
    "service": "deniable.service",
    "aggregator": "deniable.aggregator",
    "relay": "deniable.relay",
    "analysis": "deniable.analysis",
}
ABOVE_THE_CORE = ("client", "service", "aggregator", "relay", "analysis")


def _modules(folder: str) -> Iterator[tuple[str, Path, bool]]:
    """(module name, path, is a package) of every module under ``folder``."""
    base = ROOT / folder
    for path in sorted(base.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        yield ".".join([PACKAGES[folder], *parts]), path, is_package


def _imported(module: str, is_package: bool, tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(imported module or name, line) for every import statement in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                base = here[: len(here) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                # ``from deniable import client`` names a package: count the name too.
                yield f"{source}.{alias.name}", node.lineno


def _top(name: str) -> str | None:
    """The top-level folder whose package holds ``name`` (None outside Deniable)."""
    if name != "deniable" and not name.startswith("deniable."):
        return None
    for folder in ABOVE_THE_CORE:
        package = PACKAGES[folder]
        if name == package or name.startswith(package + "."):
            return folder
    return "shared"


@functools.cache
def edges() -> tuple[tuple[str, str, str]]:
    """(importing folder, imported folder, "path:line imported") across folders."""
    found = []
    for folder in PACKAGES:
        for module, path, is_package in _modules(folder):
            tree = ast.parse(path.read_text("utf-8"), str(path))
            for name, line in _imported(module, is_package, tree):
                target = _top(name)
                if target is not None and target != folder:
                    where = f"{path.relative_to(ROOT).as_posix()}:{line} {name}"
                    found.append((folder, target, where))
    return tuple(found)


def _forbidden(importer: str, imported: set[str]) -> list[str]:
    return sorted(
        where for source, target, where in edges() if source == importer and target in imported
    )


def test_the_core_imports_nothing_above_it() -> None:
    assert _forbidden("shared", set(ABOVE_THE_CORE)) == []


def test_the_service_kit_imports_no_service_and_not_the_client() -> None:
    assert _forbidden("service", {"aggregator", "relay", "client"}) == []


def test_the_device_client_imports_the_core_only() -> None:
    assert _forbidden("client", {"service", "aggregator", "relay", "analysis"}) == []


def test_the_aggregator_imports_neither_the_relay_nor_the_client() -> None:
    assert _forbidden("aggregator", {"relay", "client"}) == []


def test_the_relay_imports_neither_the_aggregator_nor_the_client() -> None:
    assert _forbidden("relay", {"aggregator", "client"}) == []


def test_no_cycle_joins_the_top_level_packages() -> None:
    graph: dict[str, set[str]] = {folder: set() for folder in PACKAGES}
    for source, target, _ in edges():
        graph[source].add(target)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for step in graph[start] - seen:
            if step == goal or reaches(step, goal, seen | {step}):
                return True
        return False

    cycles = sorted(folder for folder in graph if reaches(folder, folder, set()))
    assert cycles == [], {folder: sorted(graph[folder]) for folder in cycles}


def test_the_graph_is_read_at_all() -> None:
    """The checks above mean nothing if no import were found: a few known edges exist."""
    found = {(source, target) for source, target, _ in edges()}
    assert {("aggregator", "service"), ("relay", "service"), ("service", "shared")} <= found
    assert ("client", "shared") in found


def _declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            return [element.value for element in node.value.elts]  # a literal list
    return None


def _public_modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for folder in PACKAGES:
        for module, path, _ in _modules(folder):
            if not any(part.startswith("_") for part in module.split(".")):
                yield module, path, ast.parse(path.read_text(encoding="utf-8"))


def test_every_public_module_says_what_is_public() -> None:
    missing = [module for module, _, tree in _public_modules() if _declared_all(tree) is None]
    assert missing == []


def test_every_name_in_all_is_defined_or_imported_there() -> None:
    undefined = []
    for module, _, tree in _public_modules():
        bound = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        for name in _declared_all(tree) or []:
            if name not in bound and not (module == "deniable" and name in _prelude()):
                undefined.append(f"{module}.{name}")
    assert undefined == []


def _prelude() -> set[str]:
    tree = ast.parse((ROOT / "shared" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_PRELUDE":
            return {key.value for key in node.value.keys}
    return set()
