"""kafkasource's import graph: which module imports which, drawn per room into docs/import-graph.md, and the
layout rules it checks (tests/repo/test_layout.py runs the checks).

    python3 -m scripts.import_graph          # rewrite docs/import-graph.md
    python3 -m scripts.import_graph --check  # exit 1 naming what breaks a rule, and a stale docs page

The rules: no import circle between modules (an import inside a function counts too: it is a circle put off
until the call), nor between rooms (the folders: one room's module importing another's, and some module of that
one importing back, however far apart the modules are, means the two rooms are one part split in two); no arrow
between rooms that REFUSED_ARROWS refuses; every module in a folder whose name says what it holds, the
Spark-facing faces alone at the top; no module over MAX_LINES lines.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kafkasource"
PAGE = ROOT / "docs" / "import-graph.md"
MAX_LINES = 450
EXTENSION = "kafkasource._native"
# what may stand at the top of the package: what Spark and users call, the version, the error family
FACES = {"__init__", "_version", "source", "stream", "batch", "options", "errors", "registration"}
# arrows between rooms that would run against the layering: formats/ turns payloads into typed columns and back for
# the options, the readers and the sink, which import it; it takes nothing from them (only errors, records, runtime)
REFUSED_ARROWS = {
    ("formats", room) for room in ("cluster", "commit", "jobs", "metrics", "options", "planning", "reading", "writing")
}
# faces every room may import, as they import nothing of ours: rooms of their own in the graph between rooms
LEAVES = {"errors", "_version"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The package's modules that `path` imports, at any depth of its code, `if TYPE_CHECKING:` included: an import
    made for annotations only still says that one module needs the other, so a circle through it is a circle."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub != EXTENSION:  # compiled: it imports nothing of the package (its stub is _native.pyi)
                    found.add(sub if sub in known else node.module)
    return {name for name in found if name in known and name != module_name(path)}


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(path, known) for name, path in found.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
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
                groups.append(sorted(group))

    sys.setrecursionlimit(max(1000, 10 * len(edges)))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def room_of(name: str) -> str:
    parts = name.split(".")
    in_folder = len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir())
    return parts[1] if in_folder or parts[-1] in LEAVES else "(faces)"


def room_edges(edges: dict[str, set[str]]) -> dict[tuple[str, str], int]:
    """(room, room) -> how many imports run from a module of the first to a module of the second."""
    rooms: dict[tuple[str, str], int] = {}
    for source, targets in edges.items():
        for target in targets:
            pair = (room_of(source), room_of(target))
            if pair[0] != pair[1]:
                rooms[pair] = rooms.get(pair, 0) + 1
    return rooms


def problems() -> list[str]:
    """What breaks a rule in the package as it is."""
    sizes = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in modules().values()}
    edges = graph()
    between_rooms: dict[str, set[str]] = {}
    for source, target in room_edges(edges):
        between_rooms.setdefault(source, set()).add(target)
    found = [f"import circle: {' -> '.join(group)}" for group in circles(edges)]
    found += [f"import circle between rooms: {', '.join(group)}" for group in circles(between_rooms)]
    return found + refused_arrows(edges) + problems_of(sizes)


def refused_arrows(edges: dict[str, set[str]]) -> list[str]:
    """Each import that draws an arrow REFUSED_ARROWS refuses."""
    return [
        f"{source} imports {target}: {room_of(source)}/ must not import {room_of(target)}/"
        for source, targets in sorted(edges.items())
        for target in sorted(targets)
        if (room_of(source), room_of(target)) in REFUSED_ARROWS
    ]


def problems_of(sizes: dict[Path, int]) -> list[str]:
    """The rules on files, given each module's number of lines."""
    out = []
    for path, lines in sizes.items():
        if path.parent == PACKAGE and path.stem not in FACES:
            out.append(f"{path.relative_to(ROOT)} stands at the top of the package, which holds only the faces "
                       f"({', '.join(sorted(FACES))}): give it the folder of its part")
        if lines > MAX_LINES:
            out.append(f"{path.relative_to(ROOT)} has {lines} lines, over {MAX_LINES}")
    return out


def page() -> str:
    """The graph between rooms (an arrow: some module of one imports some module of the other), then each
    module's imports."""
    edges = graph()
    rooms = room_edges(edges)
    lines = ["# Import graph", "",
             "Written by `python3 -m scripts.import_graph` from the code; `tests/repo/test_layout.py` fails when it is "
             "stale, when modules or rooms import each other in a circle, when a room imports one it must not "
             "(formats/ imports none of the rooms that use it), when a module outside the faces stands at the "
             f"top of the package, or when one grows over {MAX_LINES} lines.", "",
             "## Between rooms", "", "An arrow from a room to another: some module of the first imports some module "
             "of the second (the number: how many such imports).", "", "```mermaid", "graph LR"]
    lines += [f"    {a.strip('()')} -->|{n}| {b.strip('()')}" for (a, b), n in sorted(rooms.items())]
    lines += ["```", "", "## Each module's imports", "", "| module | imports |", "| --- | --- |"]
    for name in sorted(edges):
        targets = ", ".join(f"`{t.removeprefix('kafkasource.')}`" for t in sorted(edges[name])) or "nothing of ours"
        lines.append(f"| `{name.removeprefix('kafkasource.') or name}` | {targets} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="check the rules and the page; write nothing")
    args = parser.parse_args(argv)
    if not args.check:
        PAGE.parent.mkdir(exist_ok=True)
        PAGE.write_text(page(), encoding="utf-8")
    found = problems()
    if args.check and (not PAGE.exists() or PAGE.read_text(encoding="utf-8") != page()):
        found.append(f"{PAGE.relative_to(ROOT)} is stale: run python3 -m scripts.import_graph")
    for problem in found:
        print(problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
