"""Where the jobs read their config and check their checkpoint (kafkasource.jobs.files): which paths are local
files, with no Spark."""

from __future__ import annotations

from kafkasource.jobs import files


def test_a_path_is_local_only_when_it_is_a_file_here(tmp_path):
    config = tmp_path / "ingest.toml"
    config.write_text("x = 1\n")
    assert files.local_file(str(config)) == str(config)
    assert files.local_file(f"file://{config}") == str(config)
    assert files.local_file(f"file:{config}") == str(config)
    assert files.local_file("ingest.toml") is None  # a name --files shipped: found through SparkFiles
    assert files.local_file(f"hdfs://namenode:8020{config}") is None
    assert files.has_scheme("s3a://bucket/ingest.toml") and not files.has_scheme(str(config))
