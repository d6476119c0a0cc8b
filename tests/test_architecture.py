"""The house layers hold: no import cycle anywhere, DRF only at the edges, and the
import-linter contracts of pyproject.toml catch an import that runs up the layers.

grimp reads the source without importing it and counts every import statement, those inside
function bodies and `if TYPE_CHECKING:` blocks included.
"""

import fnmatch
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"
NOT_APPS = {"tests", "bench"}
DRF_ALLOWED = [
    "*.api",
    "*.api.*",
    "accounts.authentication",
    "accounts.permissions",
    "apikeys.authentication",
    "apikeys.permissions",
]
BACK_IMPORT = "import alerts.models  # a deliberate import up the layers\n"


def apps() -> list[str]:
    """The project's top-level packages (the apps and `healthmon`)."""
    return sorted(
        path.parent.name
        for path in ROOT.glob("*/__init__.py")
        if path.parent.name not in NOT_APPS and not path.parent.name.startswith(".")
    )


def importlinter_config() -> dict:
    return tomllib.loads(CONFIG.read_text())["tool"]["importlinter"]


def contract(contract_id: str) -> dict:
    return next(c for c in importlinter_config()["contracts"] if c["id"] == contract_id)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of two or more modules that import each other in a circle (Kosaraju)."""
    order: list[str] = []
    seen: set[str] = set()
    for start in sorted(graph):
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(sorted(graph[start])))]
        while stack:
            node, children = stack[-1]
            child = next((c for c in children if c not in seen), None)
            if child is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(child)
                stack.append((child, iter(sorted(graph[child]))))
    reverse: dict[str, set[str]] = {node: set() for node in graph}
    for node, targets in graph.items():
        for target in targets:
            reverse[target].add(node)
    groups, assigned = [], set()
    for start in reversed(order):
        if start in assigned:
            continue
        group, pending = [], [start]
        assigned.add(start)
        while pending:
            node = pending.pop()
            group.append(node)
            pending.extend(n for n in reverse[node] if n not in assigned)
            assigned.update(reverse[node])
        if len(group) > 1:
            groups.append(sorted(group))
    return sorted(groups)


def test_the_contracts_name_every_app():
    config = importlinter_config()
    layers = [layer.strip("()") for layer in contract("layers")["layers"]]

    assert sorted(config["root_packages"]) == apps()
    assert set(apps()) <= set(layers), "every app takes its place in the layers contract"


def test_the_import_graph_has_no_cycle():
    graph = grimp.build_graph(*apps(), cache_dir=None)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}

    cycles = strongly_connected(edges)

    for group in cycles:
        print("cycle:", " <-> ".join(group))
        for module in group:
            inside = sorted(set(edges[module]) & set(group))
            print(f"    {module} imports {', '.join(inside)}")
    assert cycles == []


def test_rest_framework_is_imported_only_at_the_edges():
    graph = grimp.build_graph(*apps(), include_external_packages=True, cache_dir=None)

    importers = sorted(graph.find_modules_that_directly_import("rest_framework"))
    outside = [m for m in importers if not any(fnmatch.fnmatch(m, p) for p in DRF_ALLOWED)]

    assert outside == [], f"rest_framework imported by {outside}, outside {DRF_ALLOWED}"


def test_the_cycle_finder_finds_a_cycle():
    """The cycle test above would not pass vacuously."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}

    assert strongly_connected(graph) == [["a", "b", "c"]]


# --- The contracts catch a back import -----------------------------------------------------


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    """Run lint-imports in a copy of the tree, with the project's contracts copied beside it."""
    shutil.copyfile(CONFIG, tree / "pyproject.toml")
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
            "--no-cache",
            "--no-logo",
        ],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The tracked Python files, copied: what a clean checkout would hold."""
    tree = tmp_path_factory.mktemp("tree")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "*.py"],  # noqa: S607 - git as found on PATH
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    for name in listed.stdout.decode().split("\0"):
        if name:
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, tree / name)
    yield tree
    shutil.rmtree(tree)


def test_a_back_import_breaks_the_layers_contract(tree_copy, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(tree_copy, tree)
    models = tree / "monitoring" / "models" / "endpoints.py"
    models.write_text(BACK_IMPORT + models.read_text())

    result = lint_imports(tree)

    assert result.returncode != 0, result.stdout
    assert f"{contract('layers')['name']} BROKEN" in result.stdout, result.stdout
    assert "monitoring is not allowed to import alerts:" in result.stdout
    assert "- monitoring.models.endpoints -> alerts.models (l.1)" in result.stdout


def test_the_tree_as_committed_keeps_every_contract(tree_copy):
    """Fails until the layers are one way and the domain is free of DRF (issue 18)."""
    result = lint_imports(tree_copy)

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_suites_that_walk_every_model_name_every_app_with_models():
    from django.apps import apps as registry

    from tests.security.conftest import OUR_APPS
    from tests.test_admin_walk import APPS

    with_models = {app for app in apps() if list(registry.get_app_config(app).get_models())}
    assert set(APPS) == with_models
    assert set(OUR_APPS) == with_models
