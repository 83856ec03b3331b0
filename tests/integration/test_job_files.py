"""Where the jobs read their config and check their checkpoint: a local file, a file shipped with --files, or a
path on a file system Spark's Hadoop layer reads (kafkasource.jobs.files), against a real local Spark session.
A `file:` URI stands in for hdfs: and s3a:, which take the same Hadoop FileSystem calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkasource.jobs import files, ingest
from kafkasource.jobs.config import load
from tests.support.job_helpers import write_config


def test_files_are_read_through_sparks_file_systems_and_by_their_shipped_name(spark, tmp_path):
    config = tmp_path / "shipped-config.toml"
    config.write_bytes(b'[kafka]\n"bootstrap.servers" = "b:9092"\n')
    # the path hdfs:, s3a: ... take: Hadoop's FileSystem for the URI's scheme, opened from the JVM
    assert files._read_through_hadoop(spark, f"file://{config}") == config.read_bytes()
    with pytest.raises(FileNotFoundError) as missing:
        files.read_bytes(spark, f"file://{tmp_path}/absent.toml")
    assert str(missing.value) == f"file://{tmp_path}/absent.toml"
    # what --files does on the driver. The original stays: every later task of this session fetches the file
    # again and fails if it changed; the bare name below cannot be found beside this process (cwd is elsewhere)
    spark.sparkContext.addFile(str(config))
    assert not (Path.cwd() / "shipped-config.toml").exists()
    assert files.read_bytes(spark, "shipped-config.toml") == b'[kafka]\n"bootstrap.servers" = "b:9092"\n'


def test_the_dry_run_finds_a_checkpoint_given_as_a_uri(spark, kafka, tmp_path, capsys):
    topic = kafka.create_topic(kafka.unique_name("dry-uri"), partitions=1)
    config_path = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, "dry-uri-group", tmp_path)
    config_path.write_text(config_path.read_text().replace(f'checkpoint = "{tmp_path / "ck"}"',
                                                           f'checkpoint = "file://{tmp_path / "ck"}"'))
    config = load(config_path, required=("path", "checkpoint"))
    assert config.checkpoint == f"file://{tmp_path / 'ck'}"

    ingest.dry_run(config, spark)
    (tmp_path / "ck" / "offsets").mkdir(parents=True)  # as a query leaves it
    ingest.dry_run(config, spark)

    starts = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  start:")]
    assert starts == ["  start:      committed (kafka.auto.offset.reset=earliest) (no checkpoint yet)",
                      "  start:      the checkpoint's last batch (the checkpoint exists)"]
