"""No code of ours reads a group's committed offsets through the admin client, whose OffsetFetch crashed the process
(librdkafka issue #5040; the exporter's reads against a fresh coordinator: tests/system/test_group_reads.py)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_no_code_of_ours_reads_group_offsets_through_the_admin_client():
    calls = re.compile(r"\.list_consumer_group_offsets\s*\(")
    found = [f"{path.relative_to(REPO)}:{n}"
             for folder in ("kafkasource", "dev", "bench", "scripts", "tests", "jobs", "examples")
             for path in sorted((REPO / folder).rglob("*.py"))
             for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1) if calls.search(line)]
    assert found == [], "read a group's offsets with a consumer's committed() (KafkaClient.committed_with_metadata)"
