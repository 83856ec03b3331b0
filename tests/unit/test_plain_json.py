"""The corpus of plain JSON values (tests/support/json_corpus.py) that tests/integration/test_plain_json.py compares
with Spark's own from_json: enough values in every schema shape."""

from __future__ import annotations

from tests.support.json_corpus import CASES


def test_the_corpus_covers_at_least_200_values_in_every_schema_shape():
    assert sum(len(case.values) for case in CASES) >= 200
    assert len({case.name for case in CASES}) == len(CASES) >= 10
