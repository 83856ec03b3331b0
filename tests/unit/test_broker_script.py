"""The local broker script's own logic (no broker started)."""

from dev.broker import cluster_id


def test_cluster_ids_never_start_with_a_dash():
    ids = [cluster_id() for _ in range(2000)]  # about 1 in 64 random ids would start with '-'
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
