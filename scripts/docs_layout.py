"""The package's part of docs/layout.md, written from the code: each room of kafkasource/ with its __init__.py's
docstring, and one line per module, the first sentence of its docstring. It stands between the page's two marker
lines; the rest of the page is written by hand.

    python3 -m scripts.docs_layout          # rewrite that part of docs/layout.md
    python3 -m scripts.docs_layout --check  # exit 1 when it is stale (tests/repo/test_docs.py checks the same)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "layout.md"
BEGIN = "<!-- the package's modules: written by `python3 -m scripts.docs_layout`, do not edit by hand -->"
END = "<!-- end of the package's modules -->"


def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n")[0].split())


def first_sentence(text: str) -> str:
    """Up to the first full stop that ends a sentence (one followed by a space or the end, not inside a name)."""
    paragraph = first_paragraph(text)
    found = re.match(r"(.+?[.!?])(?=\s|$)", paragraph)
    return found.group(1) if found else paragraph


def modules(root: Path = ROOT) -> dict[str, list[Path]]:
    """The package's folders (relative to the repository, '' for the faces) and their modules, as on disk."""
    package = root / "kafkasource"
    rooms = {"kafkasource/": sorted(package.glob("*.py"))}
    for init in sorted(package.glob("*/**/__init__.py")):  # rooms, and the folders within a room
        folder = init.parent
        rooms[f"{folder.relative_to(root).as_posix()}/"] = sorted(folder.glob("*.py"))
    return rooms


def section(root: Path = ROOT) -> str:
    """The generated part of the page, markers included."""
    lines = [BEGIN, ""]
    for folder, paths in modules(root).items():
        init = root / folder / "__init__.py"
        lines += [f"### `{folder}`", ""]
        if folder == "kafkasource/":
            lines += ["The faces: what Spark and users call, the version and the error family.", ""]
        else:
            lines += [first_paragraph(docstring(init)), ""]
        for path in paths:
            if path.name == "__init__.py" and folder != "kafkasource/":
                continue  # its docstring is the room's paragraph above
            lines.append(f"- `{path.name}`: {first_sentence(docstring(path)) or '(no docstring)'}")
        lines.append("")
    return "\n".join(lines + [END])


def render(page: str, root: Path = ROOT) -> str:
    """The page with its generated part written anew."""
    start, end = page.index(BEGIN), page.index(END) + len(END)
    return page[:start] + section(root) + page[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale; write nothing")
    args = parser.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    if args.check:
        if render(page) != page:
            print(f"{PAGE.relative_to(ROOT)} is stale: run python3 -m scripts.docs_layout", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(render(page), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
