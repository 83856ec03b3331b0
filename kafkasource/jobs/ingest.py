"""ingest: Kafka -> Parquet files, a Delta Lake table or an Apache Iceberg table, with a checkpoint, committing the
group's offsets as batches complete.

    spark-submit jobs/ingest.py --config conf/ingest.example.toml [--trigger availableNow|processingTime=30s]
                                [--dry-run] [--remote sc://host:port]

Each format's streaming sink and the checkpoint make the output exactly-once across crashes and restarts
(destination.py says how); the source commits to the group only what a completed batch wrote, so lag tools see
the truth.
"""

from __future__ import annotations

import argparse
import sys

from kafkasource.errors import TableFormatJarError
from kafkasource.jobs import destination, files, plan, table_jars
from kafkasource.jobs.cli import add_common_arguments, load_config, run_main, session, setup_logging
from kafkasource.jobs.config import JobConfig
from kafkasource.jobs.streaming import decoded_records, run_stream, with_trigger
from kafkasource.planning.partitions import partition_name


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ingest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_arguments(p, "conf/ingest.example.toml")
    p.add_argument(
        "--trigger",
        help="availableNow (read what is there, then stop) or processingTime=<interval>; overrides [job] trigger",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (topics, partitions, start offsets, sink) and exit without reading or writing",
    )
    p.add_argument("--remote", help="run on a Spark Connect server, like sc://127.0.0.1:15002")
    return p


def dry_run(config: JobConfig, spark) -> int:
    """The plan; `spark` resolves the checkpoint's location as the query would (hdfs:, s3a:, the cluster's
    default file system for a path without a scheme)."""
    options = config.parsed_options(streaming=True)
    assert config.checkpoint is not None  # the ingest job's config requires it
    resumes = files.exists(spark, config.checkpoint.rstrip("/") + "/offsets")
    rows = [
        [
            partition_name(t, p),
            s.committed,
            s.start if not resumes else None,
            s.log_end,
            s.to_read() if not resumes else None,
        ]
        for s in plan.positions(options, resolve=True)
        for t, p in [s.partition]
    ]
    print(f"ingest plan for {config.path} (dry run: nothing read, nothing written)")
    print(f"  source:     {plan.describe_source(options)}")
    print(
        "  start:      "
        + (
            "the checkpoint's last batch (the checkpoint exists)"
            if resumes
            else f"{options.starting} (no checkpoint yet)"
        )
    )
    print(
        f"  sink:       {config.destination.describe()}"
        + (", partitioned by date" if config.partition_by_date else "")
        + f"; value decoded as {config.decoding.value}"
        + (f" ({config.decoding.schema})" if config.decoding.schema else "")
        + (
            f"; undecodable records to the topic {config.decoding.dead_letter_topic}"
            if config.decoding.dead_letter_topic
            else ""
        )
    )
    print(f"  checkpoint: {config.checkpoint}")
    print(f"  trigger:    {config.trigger}")
    print(
        plan.table(["PARTITION", "COMMITTED", "START", "LOG-END", "TO-READ"], rows)
        if rows
        else "  no partition matches the subscription yet"
    )
    return 0


def ingest(config: JobConfig, spark) -> int:
    def start():
        records = decoded_records(config, spark, config.partition_by_date)
        destination.prepare_table(spark, config.destination, records, config.partition_by_date)
        writer = destination.writer(records, config.destination, checkpoint, config.partition_by_date)
        return destination.start(with_trigger(writer, config.trigger), config.destination)

    checkpoint = config.checkpoint
    assert checkpoint is not None  # the ingest job's config requires it
    spark_version = spark.version
    try:
        return run_stream("ingest", config, spark, start, config.destination.target)
    except Exception as exc:  # a table format's jar built for another Spark fails only at its first call that differs
        fmt = config.destination.format
        line = None
        if fmt in table_jars.FORMATS:
            text = table_jars.failure_text(exc)
            line = table_jars.mismatch(text, fmt, spark_version, table_jars.loaded_jar(spark, fmt))
        if line is None:
            raise
        raise TableFormatJarError(line) from exc


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def work() -> int:
        setup_logging(args.log_level, args.log_config)
        config, spark = load_config(
            args.config, args.remote, required=("path", "checkpoint"), trigger_override=args.trigger
        )
        if spark is None:
            config.parsed_options(streaming=True)  # every option checked before Spark starts
            spark = session(config.app_name, args.remote)
        if not args.dry_run:
            return ingest(config, spark)
        try:
            return dry_run(config, spark)
        finally:
            spark.stop()

    return run_main("ingest", work)


if __name__ == "__main__":
    sys.exit(main())
