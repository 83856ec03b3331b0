"""A group's offsets are committed in requests that each stay within the bytes a broker takes in one, every
partition once, in partition order; no broker."""

from __future__ import annotations

from kafkasource.commit.committer import COMMIT_REQUEST_BYTES, OFFSET_RECORD_BYTES, commit_requests


def test_commit_requests_keep_each_request_within_the_byte_budget_and_every_partition_once():
    metadata = "m" * 300
    positions = {(topic, p): p * 10 for topic in ("a" * 200, "b") for p in range(3000)}

    requests = commit_requests(positions, "group", metadata)

    assert len(requests) > 1
    assert {tp: o for request in requests for tp, o in request.items()} == positions
    assert sum(len(r) for r in requests) == len(positions)
    flattened = [tp for request in requests for tp in request]
    assert flattened == sorted(positions)  # partition order, so an async run's requests follow one another
    for request in requests:
        size = sum(OFFSET_RECORD_BYTES + len("group") + len(metadata) + len(t) for t, _ in request)
        assert size <= COMMIT_REQUEST_BYTES
    # what a trigger usually commits is one request; nothing to commit is none
    assert commit_requests({("a", 0): 1, ("b", 3): 2}, "group", metadata) == [{("a", 0): 1, ("b", 3): 2}]
    assert commit_requests({}, "group", metadata) == []
