"""What the streaming jobs (ingest, route) share: the decoded records they read, their trigger, and their query's
run from start to end, with a graceful stop, the metrics exporter and the summary line."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.jobs import available_now
from kafkasource.jobs.cli import one_line
from kafkasource.jobs.config import ConfigError, JobConfig, Trigger
from kafkasource.jobs.decode import decode
from kafkasource.jobs.running import BatchLog, StopRequest, run_query
from kafkasource.options import SourceOptions
from kafkasource.writing.dead_letters import producer_config, route_dead_letters

log = logging.getLogger("kafkasource.jobs")


def decoded_records(config: JobConfig, spark, partition_by_date: bool) -> DataFrame:
    """The stream of records as the job's [decode] makes them (jobs/decode.py), undecodable ones sent to the
    dead-letter topic when [decode] names one."""
    if config.decoding.schema:
        try:
            spark.createDataFrame([], config.decoding.schema)  # Spark's own parse of the DDL, in its own words
        except Exception as exc:
            raise ConfigError(
                f"{config.path}: [decode] schema is not a Spark DDL schema like "
                f'"order_id BIGINT, amount DOUBLE": {one_line(exc)}'
            ) from None
    kafka_rows = spark.readStream.format("kafkasource").options(**config.source_options).load()
    dead_letter_topic = config.decoding.dead_letter_topic
    if dead_letter_topic:
        check_topic_exists(config, dead_letter_topic)
        kafka_rows = route_dead_letters(kafka_rows, dead_letter_topic, producer_config(config.source_options))
    return decode(kafka_rows, config.decoding, partition_by_date)


def check_topic_exists(config: JobConfig, topic: str) -> None:
    """The dead-letter topic must exist before the first bad record needs it (brokers rarely create topics)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(sign_in.ready({**producer_config(config.source_options), "log_level": 0}))  # type: ignore[dict-item]
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


def with_trigger(writer: DataStreamWriter, trigger: Trigger) -> DataStreamWriter:
    if trigger.available_now:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=f"{trigger.interval_ms} milliseconds")


def run_stream(job: str, config: JobConfig, spark, start: Callable[[], StreamingQuery], target: str) -> int:
    """Check the options, start the exporter, then the query `start` builds; run it to its end or a stop request,
    and print how many rows it read from where into `target`. Stops the session at the end."""
    stop = StopRequest()
    exporter = None
    try:
        options = config.parsed_options(streaming=True)  # every option checked before any batch runs
        stop.install(spark)
        exporter = start_metrics(spark, config, options)
        # pyspark 4.0/4.1 run one batch per AvailableNow run and never let the reader commit it: see available_now.py
        emulated = available_now.emulated(config.trigger.available_now)
        ends = available_now.log_ends(options) if emulated else {}
        query = start()
        described = options.subscription.describe()
        log.info("reading %s into %s (trigger %s)", described, target, config.trigger)
        batches = BatchLog()
        stopped = run_query(query, stop, batches)
        before = None
        while emulated and not stopped and available_now.run_again(query, ends, before):
            before = available_now.completed_end(query)
            query = start()  # the same checkpoint: the next batch, up to the ends fixed at the first start
            stopped = run_query(query, stop, batches)
        if emulated:
            available_now.commit_run_end(query, options)
        if exporter is not None:
            exporter.observe_query(query)  # the last progress may not have reached the listener yet
        if batches.rows == 0:
            print(f"{job}: 0 rows: nothing new on {described} since the last run")
        else:
            print(f"{job}: {batches.rows:,} rows in {batches.batches} batches from {described} into {target}")
        if stopped:
            print(f"{job}: stopped on request; the next run resumes after the last completed batch")
        return 0
    finally:
        if exporter is not None:
            exporter.close()  # reads the group once more and writes the textfile a last time
        if not stop.jvm_exiting.is_set():  # a JVM that is not exiting yet must not call back later
            stop.uninstall()
        spark.stop()
        stop.done()


def start_metrics(spark, config: JobConfig, options: SourceOptions):
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
