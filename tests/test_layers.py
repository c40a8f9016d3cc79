"""The layers of docs/layers.md hold: the import-linter contract in pyproject.toml passes, and no
two folders (packages) of the installed package import each other, directly or in a circle."""

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_layer_contract_is_kept():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint is not None, "import-linter is not installed (the `test` extra has it)"
    result = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout[-4000:]
    assert "1 kept, 0 broken" in result.stdout


def _folder(graph: grimp.ImportGraph, module: str) -> str:
    """The package a module belongs to (the module itself when it is a package)."""
    if graph.find_children(module) or module == "systolic":
        return module
    return module.rsplit(".", 1)[0]


def _folder_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = _folder(graph, module), _folder(graph, imported)
            if a != b and b.startswith("systolic"):
                edges.setdefault(a, set()).add(b)
    return edges


def _reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return False


def test_no_folder_imports_a_folder_that_imports_it_back():
    graph = grimp.build_graph("systolic")
    edges = _folder_edges(graph)
    circles = sorted(
        f"{a} -> {b}" for a, targets in edges.items() for b in targets if _reaches(edges, b, a)
    )
    assert circles == [], "folder-level import circles:\n" + "\n".join(circles)


@pytest.mark.parametrize("link", ["hdl", "mapper", "sim", "proto"])
def test_the_source_tree_shows_the_installed_layout(link):
    assert (ROOT / "systolic" / link).resolve() == ROOT / link
