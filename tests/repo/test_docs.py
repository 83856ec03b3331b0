"""The README as the front page and the docs behind it: the README opens with its two commands and the inner loop,
its links reach the docs' pages and headings, and the Layout page's list of modules is the package's as it is. Pure:
no broker, no Spark. (scripts/test.sh builds the site with `mkdocs build --strict`, which checks the links between
pages.)"""

from __future__ import annotations

import re
from pathlib import Path

from scripts import docs_layout

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slugs(markdown: str) -> set[str]:
    """The anchors of a page's headings, as GitHub and mkdocs' toc make them (lower case, punctuation dropped,
    spaces to hyphens), outside fenced code."""
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def test_the_readme_opens_with_its_two_commands_and_the_inner_loop():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[:7] == [
        "# kafkasource",
        "",
        "```bash",
        "bash scripts/quickstart.sh   # the main job end to end: a local broker, sample orders, spark-submit "
        "jobs/ingest.py, the group's commits",
        "bash scripts/test.sh         # the whole test suite, against a real Kafka broker it starts itself",
        "python3 -m pytest tests/unit # the inner loop: the unit tests in seconds, no broker, no JVM, no Spark",
        "```",
    ]
    assert lines[8].startswith("The first two work on a fresh machine")


def test_every_link_of_the_readme_reaches_a_file_and_heading():
    readme = README.read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(readme) if not re.match(r"[a-z]+:", t)]
    assert any(t.startswith("docs/") for t in targets)
    broken = []
    for target in targets:
        path, _, anchor = target.partition("#")
        page = ROOT / path if path else README
        if not page.is_file():
            broken.append(target)
        elif anchor and anchor not in slugs(page.read_text(encoding="utf-8")):
            broken.append(target)
    assert broken == []


def test_every_docs_page_is_linked_from_the_readme_and_in_the_sites_nav():
    readme = README.read_text(encoding="utf-8")
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert [p for p in pages if p != "index.md" and f"(docs/{p})" not in readme] == []
    assert [p for p in pages if f": {p}" not in nav] == []


def test_the_layout_pages_modules_are_the_packages():
    page = docs_layout.PAGE.read_text(encoding="utf-8")
    assert docs_layout.render(page) == page, "docs/layout.md is stale: run python3 -m scripts.docs_layout"
    on_disk = {f"{folder}{path.name}" for folder, paths in docs_layout.modules().items() for path in paths}
    # every module, at the top, in a room, or in a folder within a room (cluster/sign_in/)
    assert on_disk == {str(p.relative_to(ROOT)) for p in (ROOT / "kafkasource").rglob("*.py")}
    assert "kafkasource/cluster/sign_in/provider.py" in on_disk


def test_the_first_sentence_stops_at_a_sentence_not_inside_a_name():
    assert docs_layout.first_sentence("The compiled extension (kafkasource._native), loaded once. More.") == \
        "The compiled extension (kafkasource._native), loaded once."
    assert docs_layout.first_sentence("No full stop") == "No full stop"
