"""bench/RESULTS.md is written by more than one script: bench/run.py writes the whole file, other scripts one
section each. A section runs from its `## ` heading to the next one (or the end)."""

from __future__ import annotations

import re
from pathlib import Path

# sections other scripts write, which bench/run.py carries over when it rewrites the file
OWN_SECTIONS = ("Avro from a schema registry",  # bench/avro_e2e.py
                "Write throughput", "Avro write throughput")  # bench/write.py


def _span(text: str, heading: str) -> tuple[int, int] | None:
    found = re.search(rf"^## {re.escape(heading)}[ \t]*$", text, re.MULTILINE)
    if found is None:
        return None
    after = re.search(r"^## ", text[found.end():], re.MULTILINE)
    return found.start(), found.end() + after.start() if after else len(text)


def section(text: str, heading: str) -> str | None:
    span = _span(text, heading)
    return None if span is None else text[span[0]:span[1]]


def replace_section(path: Path, heading: str, body: str) -> None:
    """Write `body` (starting with its `## heading` line) in place of that section of `path`, or at its end."""
    text = path.read_text() if path.exists() else ""
    body = body.rstrip("\n") + "\n\n"
    span = _span(text, heading)
    if span is None:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + body
    else:
        text = text[:span[0]] + body + text[span[1]:]
    path.write_text(text.rstrip("\n") + "\n")


def carry_sections(old: Path, new_text: str) -> str:
    """`new_text` with the sections other scripts wrote into `old` appended."""
    previous = old.read_text() if old.exists() else ""
    kept = [found.rstrip("\n") for heading in OWN_SECTIONS if (found := section(previous, heading))]
    return new_text.rstrip("\n") + "".join("\n\n" + k for k in kept) + "\n"
