"""ingest: Kafka -> Parquet with a checkpoint, committing the group's offsets as batches complete.

    spark-submit jobs/ingest.py --config conf/ingest.example.toml [--trigger availableNow|processingTime=30s]
                                [--dry-run] [--remote sc://host:port]

The Parquet file sink and the checkpoint make the output exactly-once across crashes and restarts;
the source commits to the group only what a completed batch wrote, so lag tools see the truth.
"""

from __future__ import annotations

import argparse
import logging
import sys

from kafkasource.jobs import files, plan
from kafkasource.jobs.cli import add_common_arguments, load_config, one_line, run_main, session, setup_logging
from kafkasource.jobs.config import ConfigError, JobConfig
from kafkasource.jobs.dead_letter import producer_config, route_dead_letters
from kafkasource.jobs.decode import decode, schema_fields
from kafkasource.jobs.running import BatchLog, StopRequest, run_query
from kafkasource.planning.partitions import partition_name

log = logging.getLogger("kafkasource.jobs.ingest")


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
        f"  sink:       Parquet at {config.sink_path}"
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


def check_topic_exists(config: JobConfig, topic: str) -> None:
    """The dead-letter topic must exist before the first bad record needs it (brokers rarely create topics)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**producer_config(config.source_options), "log_level": 0})
    try:
        found = admin.list_topics(topic, timeout=30).topics.get(topic)
    except Exception as exc:
        raise ConfigError(
            f"{config.path}: [decode] dead_letter_topic {topic!r} could not be looked up: {one_line(exc)}"
        ) from None
    if found is None or found.error is not None:
        raise ConfigError(
            f"{config.path}: [decode] dead_letter_topic {topic!r} does not exist on the brokers; "
            "create it first (kafka-topics --create --topic ...)"
        )


def ingest(config: JobConfig, spark) -> int:
    stop = StopRequest()
    exporter = None
    try:
        options = config.parsed_options(streaming=True)  # every option checked before any batch runs
        stop.install(spark)
        exporter = start_metrics(spark, config, options)
        reader = spark.readStream.format("kafkasource").options(**config.source_options)
        kafka_rows = reader.load()
        if config.decoding.schema:
            try:
                schema_fields(kafka_rows, config.decoding.schema)
            except Exception as exc:
                raise ConfigError(
                    f"{config.path}: [decode] schema is not a Spark DDL schema like "
                    f'"order_id BIGINT, amount DOUBLE": {one_line(exc)}'
                ) from None
        dead_letter_topic = config.decoding.dead_letter_topic
        if dead_letter_topic:
            check_topic_exists(config, dead_letter_topic)
            kafka_rows = route_dead_letters(kafka_rows, dead_letter_topic, producer_config(config.source_options))
        writer = (
            decode(kafka_rows, config.decoding, config.partition_by_date)
            .writeStream.format("parquet")
            .option("path", config.sink_path)
            .option("checkpointLocation", config.checkpoint)
        )
        if config.partition_by_date:
            writer = writer.partitionBy("date")
        if config.trigger.available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{config.trigger.interval_ms} milliseconds")
        query = writer.start()
        log.info("reading %s into %s (trigger %s)", options.subscription.describe(), config.sink_path, config.trigger)
        batches = BatchLog()
        stopped = run_query(query, stop, batches)
        if exporter is not None:
            exporter.observe_query(query)  # the last progress may not have reached the listener yet
        described = options.subscription.describe()
        if batches.rows == 0:
            print(f"ingest: 0 rows: nothing new on {described} since the last run")
        else:
            print(
                f"ingest: {batches.rows:,} rows in {batches.batches} batches from {described} into {config.sink_path}"
            )
        if stopped:
            print("ingest: stopped on request; the next run resumes after the last completed batch")
        return 0
    finally:
        if exporter is not None:
            exporter.close()  # reads the group once more and writes the textfile a last time
        if not stop.jvm_exiting.is_set():  # a JVM that is not exiting yet must not call back later
            stop.uninstall()
        spark.stop()
        stop.done()


def start_metrics(spark, config: JobConfig, options):
    """[metrics]: the exporter, started before the query so that its commits report to it."""
    if config.metrics is None:
        return None
    from kafkasource import metrics

    m = config.metrics
    exporter = metrics.serve(
        spark,
        port=m.port,
        host=m.host,
        textfile=m.textfile,
        source_options=options if options.group_id else (),  # checked already
        broker_interval_s=m.broker_interval_s,
    )
    if exporter.url:
        log.info("metrics at %s", exporter.url)
    if m.textfile:
        log.info("metrics written to %s after each batch", m.textfile)
    return exporter


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
