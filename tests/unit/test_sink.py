"""The sink's pure parts: option parsing, the column checks, Arrow record batches to producer arguments, the batch
marker, and the words of its errors. No broker, no Spark session."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType

from dev.process import wait
from kafkasource.errors import ColumnError, ExactlyOnceError, KafkaSourceError, OptionError
from kafkasource.options.sink import parse_sink_options
from kafkasource.records.schema import HEADERS_DDL_TYPE
from kafkasource.runtime import native_extension
from kafkasource.writing import bounded, markers, task, transactional_pool, transactions
from kafkasource.writing.deliveries import Deliveries
from kafkasource.writing.digest import SHA256, XXH3, RecordDigest, hash_of
from kafkasource.writing.failures import delivery_error
from kafkasource.writing.markers import (
    EARLIER_KEPT,
    MarkedBatch,
    Marker,
    Verdict,
    check_replay,
    judge,
    marker_group,
    marker_metadata,
    parse_marker,
)
from kafkasource.writing.replicas import Shortfall
from kafkasource.writing.rows import NULL_TOPIC, Columns, check_columns, messages, native_batch
from kafkasource.writing.transactional_pool import Transactional, TransactionalPool, pool_key
from kafkasource.writing.transactions import _abort, transactional_id
from kafkasource.writing.writer import OVERWRITE_REFUSED, batch_writer

BASE = {"kafka.bootstrap.servers": "broker:9092", "topic": "out"}
HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def parse(streaming: bool = False, base: dict[str, str] | None = None, **options: str):
    return parse_sink_options({**(BASE if base is None else base), **options}, streaming=streaming)


def error_of(streaming: bool = False, base: dict[str, str] | None = None, **options: str) -> str:
    with pytest.raises(OptionError) as info:
        parse(streaming, base, **options)
    return str(info.value)


# --- options ---------------------------------------------------------------------------------------------

def test_defaults_are_at_least_once_with_the_java_producers_partitioner_and_idempotence():
    options = parse(**{"kafka.linger.ms": "20"})
    assert (options.bootstrap_servers, options.topic, options.guarantee) == ("broker:9092", "out", "at-least-once")
    assert (options.transactional_id_prefix, options.marker_topic) == (None, None)
    assert options.producer_config() == {"partitioner": "murmur2_random", "enable.idempotence": True,
                                         "linger.ms": "20", "bootstrap.servers": "broker:9092"}
    assert options.delivery_timeout_ms() == 300_000


def test_users_settings_win_over_the_sinks_defaults_and_none_adds_no_idempotence():
    options = parse(deliveryGuarantee="none", **{"kafka.partitioner": "consistent_random"})
    assert options.producer_config() == {"partitioner": "consistent_random", "bootstrap.servers": "broker:9092"}
    assert parse(**{"kafka.enable.idempotence": "false"}).producer_config()["enable.idempotence"] == "false"


def test_batching_compression_and_in_flight_stay_librdkafkas_defaults_under_every_guarantee():
    """bench/PRODUCER.md measured linger.ms, batch.*, compression.type and max.in.flight: none helped, so the sink
    sets none of them; a producer under each guarantee gets exactly the sink's defaults and the brokers (exactly-once
    closes idle connections, which wakes a marker waiting on a coordinator that left the cluster)."""
    configs = {
        "at-least-once": parse().producer_config(),
        "exactly-once": parse(deliveryGuarantee="exactly-once", transactionalIdPrefix="p").producer_config(),
        "none": parse(deliveryGuarantee="none").producer_config(),
    }
    brokers = {"bootstrap.servers": "broker:9092"}
    assert configs == {
        "at-least-once": {"partitioner": "murmur2_random", "enable.idempotence": True, **brokers},
        "exactly-once": {"partitioner": "murmur2_random", "connections.max.idle.ms": 5000, **brokers},
        "none": {"partitioner": "murmur2_random", **brokers},
    }
    idle = {"kafka.connections.max.idle.ms": "60000"}  # a user's own setting wins
    exactly_once = parse(deliveryGuarantee="exactly-once", transactionalIdPrefix="p", **idle)
    assert exactly_once.producer_config()["connections.max.idle.ms"] == "60000"
    measured = {"linger.ms", "batch.size", "batch.num.messages", "compression.type", "max.in.flight"}
    assert [sorted(measured & set(c)) for c in configs.values()] == [[], [], []]
    # the same search finds such a setting when a user gives one
    assert sorted(measured & set(parse(**{"kafka.compression.type": "lz4"}).producer_config())) == ["compression.type"]


def test_option_names_are_case_insensitive_and_spark_s_checkpoint_location_and_query_name_are_accepted():
    options = parse_sink_options({"KAFKA.BOOTSTRAP.SERVERS": "b:1", "Topic": "t", "DELIVERYGUARANTEE": "NONE",
                                  "checkpointLocation": "/tmp/x", "queryname": "orders-copy"}, streaming=True)
    assert (options.bootstrap_servers, options.topic, options.guarantee) == ("b:1", "t", "none")
    with pytest.raises(OptionError, match="unknown option 'querynam' for the kafkasource sink: its options are topic"):
        parse_sink_options({"kafka.bootstrap.servers": "b:1", "topic": "t", "querynam": "x"}, streaming=True)


def test_exactly_once_takes_its_prefix_and_keeps_markers_on_the_topic():
    options = parse(streaming=True, deliveryGuarantee="exactly-once", transactionalIdPrefix="orders-sink",
                    **{"kafka.transaction.timeout.ms": "90000"})
    assert (options.guarantee, options.transactional_id_prefix, options.marker_topic) == \
        ("exactly-once", "orders-sink", "out")
    assert options.delivery_timeout_ms() == 90_000  # a transactional producer's default message timeout
    assert "enable.idempotence" not in options.producer_config()  # a transactional.id implies it
    with_marker = parse(streaming=True, base={"kafka.bootstrap.servers": "b:1"}, deliveryGuarantee="exactly-once",
                        transactionalIdPrefix="p", markerTopic="markers")
    assert (with_marker.topic, with_marker.marker_topic) == (None, "markers")


def test_missing_bootstrap_servers():
    assert error_of(base={"topic": "t"}) == ("option kafka.bootstrap.servers is required: the brokers to connect "
                                             "to, like host1:9092,host2:9092")


def test_an_unknown_option_is_refused_with_the_closest_name():
    assert error_of(deliveryGuarantees="none") == (
        "unknown option 'deliveryguarantees' for the kafkasource sink: did you mean deliveryGuarantee? its options "
        "are topic, deliveryGuarantee, transactionalIdPrefix, markerTopic, writePath, oauthProvider, kafka.<setting> "
        "for librdkafka's producer and oauthProvider.<argument> for the token provider")
    assert error_of(subscribe="in") == (
        "unknown option 'subscribe' for the kafkasource sink: its options are topic, deliveryGuarantee, "
        "transactionalIdPrefix, markerTopic, writePath, oauthProvider, kafka.<setting> for librdkafka's producer and "
        "oauthProvider.<argument> for the token provider")


def test_write_path_is_auto_native_or_python_and_native_needs_the_extension(monkeypatch):
    assert (parse().write_path, parse(writePath="Python").write_path) == ("auto", "python")
    assert parse(writePath="python").native() is False
    assert error_of(writePath="rust") == "option writePath must be one of auto, native, python, got 'rust'"
    monkeypatch.setattr(native_extension, "EXTENSION", None)  # as installed without a Rust toolchain
    assert error_of(writePath="native") == (
        "option writePath is native, but kafkasource's native extension is not built here: install kafkasource "
        "where a Rust toolchain is present (pip install builds it), or set writePath to auto (native when built) "
        "or python")
    assert parse(writePath="auto").native() is False  # auto falls back to confluent-kafka's producer
    monkeypatch.setattr(native_extension, "LOAD_ERROR", "libssl.so.3: cannot open shared object file")
    assert error_of(writePath="native").startswith(
        "option writePath is native, but kafkasource's native extension could not be loaded here: libssl.so.3: "
        "cannot open shared object file: install kafkasource")


def test_a_bad_delivery_guarantee_names_the_choices():
    assert error_of(deliveryGuarantee="exactly_once") == (
        "option deliveryGuarantee must be one of at-least-once, exactly-once, none, got 'exactly_once'")


def test_exactly_once_without_a_prefix_says_why_it_needs_one():
    assert error_of(deliveryGuarantee="exactly-once") == (
        "deliveryGuarantee=exactly-once needs the option transactionalIdPrefix: each Spark task writes in a Kafka "
        "transaction whose transactional.id is derived from it (the prefix, a dash and the task's partition "
        "number), so a retried task fences its older attempt; give every sink its own prefix, since two sinks "
        "sharing one would fence each other")


def test_a_prefix_or_marker_topic_without_exactly_once_is_refused():
    assert error_of(transactionalIdPrefix="p") == (
        "option transactionalIdPrefix only applies to deliveryGuarantee=exactly-once, but deliveryGuarantee is "
        "at-least-once; set deliveryGuarantee=exactly-once or remove the prefix")
    assert error_of(markerTopic="m") == ("option markerTopic only applies to deliveryGuarantee=exactly-once, but "
                                         "deliveryGuarantee is at-least-once; remove it")


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "batch-write"])
def test_an_exactly_once_write_with_a_topic_column_needs_a_marker_topic(streaming):
    message = error_of(streaming=streaming, base={"kafka.bootstrap.servers": "b:1"}, deliveryGuarantee="exactly-once",
                       transactionalIdPrefix="p")
    assert message.startswith("deliveryGuarantee=exactly-once needs a topic for its batch markers")
    assert "set the topic option, or markerTopic to an existing topic" in message
    assert parse(streaming=streaming, base={"kafka.bootstrap.servers": "b:1"}, deliveryGuarantee="exactly-once",
                 transactionalIdPrefix="p", markerTopic="m").marker_topic == "m"


def test_a_transactional_id_by_hand_points_at_the_prefix():
    assert error_of(**{"kafka.transactional.id": "mine"}) == (
        "option kafka.transactional.id is not supported by the sink: each Spark task's transactional.id is derived "
        "from the option transactionalIdPrefix (with deliveryGuarantee=exactly-once); set that instead")


def test_java_serializers_are_refused_as_the_built_in_refuses_them():
    assert error_of(**{"kafka.value.serializer": "x"}).startswith(
        "option kafka.value.serializer is not supported by the sink: values are written as the bytes of the value "
        "column")


def test_a_setting_librdkafka_does_not_know_gets_the_readers_suggestion_and_no_value_shown():
    message = error_of(**{"kafka.lingr.ms": "5"})
    assert message.startswith("librdkafka rejected kafka.lingr.ms: ")
    assert "Did you mean kafka.linger.ms?" in message


def test_a_conflict_only_a_producer_has_is_told_with_secrets_masked():
    message = error_of(**{"kafka.enable.idempotence": "true", "kafka.acks": "1",
                          "kafka.sasl.password": "hunter2-secret"})
    assert message.startswith("librdkafka refused the sink's producer settings (deliveryGuarantee=at-least-once): ")
    assert "acks" in message and "hunter2-secret" not in message


def test_a_bad_topic_name_is_refused():
    assert error_of(topic="no spaces") == ("option topic: 'no spaces' is not a Kafka topic name (1 to 249 of the "
                                           "characters a-z A-Z 0-9 . _ -)")


def test_overwrite_is_refused_like_the_built_in_refuses_it():
    with pytest.raises(OptionError) as info:
        batch_writer(BASE, StructType([StructField("value", StringType())]), overwrite=True)
    assert str(info.value) == OVERWRITE_REFUSED
    assert OVERWRITE_REFUSED.startswith("Save mode Overwrite not allowed for kafkasource")


# --- columns ---------------------------------------------------------------------------------------------

def schema(**columns) -> StructType:
    return StructType([StructField(name, data_type) for name, data_type in columns.items()])


def column_error(columns: StructType, topic: str | None = "out") -> str:
    with pytest.raises(ColumnError) as info:
        check_columns(columns, topic)
    return str(info.value)


def test_which_columns_a_write_has():
    assert check_columns(schema(value=StringType()), "t") == Columns("t", key=False, headers=False, partition=False)
    assert check_columns(schema(topic=StringType(), key=BinaryType(), value=BinaryType(), headers=HEADERS,
                                partition=IntegerType(), other=LongType()), None) == \
        Columns(None, key=True, headers=True, partition=True)


def test_the_topic_option_wins_and_then_the_topic_column_is_never_checked():
    assert check_columns(schema(topic=IntegerType(), value=StringType()), "t").topic == "t"


def test_missing_topic_and_value_in_the_built_ins_words():
    assert column_error(schema(value=StringType()), topic=None) == (
        "topic option required when no 'topic' attribute is present. Use the topic option for setting a topic.")
    assert column_error(schema(key=StringType())) == (
        "Required attribute 'value' not found: the DataFrame needs a value column (string or binary); its columns "
        "are key")


@pytest.mark.parametrize(("columns", "expected"), [
    (schema(value=IntegerType()), "value attribute unsupported type int. value must be a(n) string or binary: "
                                  "CAST it, or serialize it (to_json, to_avro)"),
    (schema(key=LongType(), value=StringType()), "key attribute unsupported type bigint. key must be a(n) string or "
                                                 "binary: CAST it, or serialize it (to_json, to_avro)"),
    (schema(value=StringType(), partition=LongType()), "partition attribute unsupported type bigint. partition must "
                                                       "be a(n) int: CAST it to int"),
    (schema(value=StringType(), headers=ArrayType(StringType())),
     f"headers attribute unsupported type array<string>. headers must be a(n) {HEADERS_DDL_TYPE}: build it as "
     "array(struct(name AS key, CAST(v AS binary) AS value), ...)"),
])
def test_column_types_in_the_built_ins_words(columns, expected):
    assert column_error(columns) == expected


def test_a_topic_column_of_the_wrong_type():
    assert column_error(schema(topic=BinaryType(), value=StringType()), topic=None) == (
        "topic attribute unsupported type binary. topic must be a(n) string: CAST it to string")


# --- Arrow record batches to records -----------------------------------------------------------------------

ARROW_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def test_every_column_converted_row_by_row():
    batch = pa.record_batch({
        "topic": pa.array(["a", "b", "c"]),
        "key": pa.array(["k0", None, "k2"]),
        "value": pa.array([b"v0", b"", None], pa.binary()),
        "headers": pa.array([[{"key": "h", "value": b"1"}, {"key": "n", "value": None}], None, []], ARROW_HEADERS),
        "partition": pa.array([2, None, 0], pa.int32()),
    })
    assert list(messages(batch, Columns(None, key=True, headers=True, partition=True))) == [
        ("a", "k0", b"v0", [("h", b"1"), ("n", None)], 2),
        ("b", None, b"", None, -1),
        ("c", "k2", None, None, 0),
    ]


def test_the_topic_option_overrides_the_topic_column_and_absent_columns_are_nulls():
    batch = pa.record_batch({"topic": pa.array(["ignored", None]), "value": pa.array(["x", "y"])})
    assert list(messages(batch, Columns("out", key=False, headers=False, partition=False))) == [
        ("out", None, "x", None, -1), ("out", None, "y", None, -1)]


# the Python path converts a batch to records, the native one casts its columns: both check a batch alike
CONVERSIONS = {"messages": lambda batch, columns: list(messages(batch, columns)), "native_batch": native_batch}


@pytest.mark.parametrize("convert", CONVERSIONS)
def test_a_null_topic_fails_in_the_built_ins_words(convert):
    batch = pa.record_batch({"topic": pa.array(["a", None]), "value": pa.array(["x", "y"])})
    with pytest.raises(ColumnError) as info:
        CONVERSIONS[convert](batch, Columns(None, key=False, headers=False, partition=False))
    assert str(info.value) == NULL_TOPIC == ("The Kafka message data sent to the producer contains a null topic. Use "
                                             "the `topic` option for setting a default topic.")


@pytest.mark.parametrize("convert", CONVERSIONS)
def test_a_negative_partition_is_refused_rather_than_read_as_the_partitioners_choice(convert):
    batch = pa.record_batch({"value": pa.array(["x", "y"]), "partition": pa.array([1, -1], pa.int32())})
    with pytest.raises(ColumnError) as info:
        CONVERSIONS[convert](batch, Columns("t", key=False, headers=False, partition=True))
    assert str(info.value) == ("the partition column holds -1: a partition is a number from 0, or null to let the "
                               "partitioner choose")


@pytest.mark.parametrize("convert", CONVERSIONS)
def test_a_header_without_a_key_is_refused(convert):
    batch = pa.record_batch({"value": pa.array(["x"]),
                             "headers": pa.array([[{"key": None, "value": b"1"}]], ARROW_HEADERS)})
    with pytest.raises(ColumnError) as info:
        CONVERSIONS[convert](batch, Columns("t", key=False, headers=True, partition=False))
    assert str(info.value).startswith("the headers column holds a header with a null key")


def test_the_native_batch_checks_only_its_own_rows_and_casts_to_32_bit_offsets():
    """A sliced batch is checked over its rows alone (the header without a key lies before the slice), and large
    or view columns arrive as the layouts the native producer reads, nothing else changed."""
    batch = pa.record_batch({
        "key": pa.array([b"k0", b"k1", None], pa.large_binary()),
        "value": pa.array(["v0", "v1", "v2"], pa.large_string()),
        "headers": pa.array([[{"key": None, "value": b"0"}], [{"key": "h", "value": None}], None], ARROW_HEADERS),
        "partition": pa.array([0, 1, None], pa.int32()),
    })
    columns = Columns("t", key=True, headers=True, partition=True)
    with pytest.raises(ColumnError):
        native_batch(batch, columns)

    cast = native_batch(batch.slice(1), columns)

    assert cast.schema == pa.schema([("key", pa.binary()), ("value", pa.string()), ("headers", ARROW_HEADERS),
                                     ("partition", pa.int32())])
    assert cast.to_pylist() == [{"key": b"k1", "value": "v1", "headers": [{"key": "h", "value": None}],
                                 "partition": 1},
                                {"key": None, "value": "v2", "headers": None, "partition": None}]


# --- transactions: ids and markers -------------------------------------------------------------------------

def test_ids_derive_from_the_prefix_and_the_spark_partition():
    assert transactional_id("sink-a", 3) == "sink-a-3"
    assert marker_group("sink-a", 3) == "sink-a-3"


class AskedProducer:
    """A producer whose metadata request is answered only when the test says so."""

    def __init__(self, transactional_id: str) -> None:
        self.transactional_id = transactional_id
        self.asked, self.answer, self.answered = threading.Event(), threading.Event(), False

    def list_topics(self, timeout: float) -> None:
        self.asked.set()
        self.answered = self.answer.wait(10)


def test_a_spare_asks_for_the_brokers_when_made_and_is_handed_over_once_answered(monkeypatch):
    """A worker whose tasks of an id move makes a spare producer for it when a task ends, and the spare's first
    metadata request starts on its own thread then, not when a fence calls for the spare: take_spare() waits for
    the answer, so the replacement's init_transactions() starts with the brokers known."""
    monkeypatch.setattr(transactional_pool, "make_producer", lambda options, deliveries, **config: AskedProducer(
        str(config["transactional.id"])))
    pool = TransactionalPool()
    kept = Transactional(AskedProducer("first"), Deliveries(), None, "sink-3", ("sink-3",), moves=True)  # type: ignore

    pool.release(kept, True, parse(deliveryGuarantee="exactly-once", transactionalIdPrefix="sink"), "sink-3")
    spare = kept.spare
    assert isinstance(spare, AskedProducer) and spare.transactional_id == "sink-3" and pool.spares == 1
    assert spare.asked.wait(10)  # asked at once, with no task waiting for it
    taken: list = []
    taker = threading.Thread(target=lambda: taken.append(kept.take_spare()))
    taker.start()
    taker.join(0.3)
    assert taker.is_alive() and taken == []  # still waiting for the answer
    spare.answer.set()
    taker.join(10)
    assert taken == [spare] and spare.answered
    assert (kept.spare, kept.spare_learning) == (None, None)


class StuckMarkerProducer:
    """A producer whose marker call returns only when the test says so, as librdkafka's does while it cannot find
    the marker group's coordinator; it records being closed."""

    def __init__(self) -> None:
        self.called, self.release, self.closed = threading.Event(), threading.Event(), threading.Event()

    def send_offsets_to_transaction(self, offsets, metadata, timeout) -> None:
        self.called.set()
        self.release.wait(30)

    def purge(self) -> None:
        pass

    def flush(self, timeout: float) -> int:
        return 0

    def close(self) -> None:
        self.closed.set()


class MarkerConsumer:
    def __init__(self) -> None:
        self.closed = False

    def consumer_group_metadata(self) -> str:
        return "group metadata"

    def close(self) -> None:
        self.closed = True


def test_a_bounded_call_gives_its_result_or_its_error_and_a_stuck_one_fails_within_its_bound():
    assert bounded.bounded(lambda: 7, 5, lambda: None, "a quick call") == 7
    with pytest.raises(KafkaException, match="refused"):
        bounded.bounded(lambda: (_ for _ in ()).throw(KafkaException(KafkaError(KafkaError._FENCED, "refused"))),
                        5, lambda: None, "a refused call")
    release, abandoned = threading.Event(), []
    started = time.monotonic()
    with pytest.raises(bounded.StuckCall, match=r"^a stuck call did not return within 0 s: librdkafka still waits"):
        bounded.bounded(lambda: release.wait(30), 0.3, lambda: abandoned.append("closed"), "a stuck call")
    assert 0.3 <= time.monotonic() - started < 5 and abandoned == []
    release.set()
    assert wait(lambda: abandoned == ["closed"], 10, 0.01)  # given up: cleaned up on the call's thread once it returned


def test_a_stuck_marker_fails_its_task_and_its_producer_is_closed_only_after_the_call_returned(monkeypatch):
    """librdkafka's marker call may outlive its own timeout (a coordinator it cannot find): the task gives up at
    the timeout plus a margin, nothing closes the producer while the call runs, and the call's thread closes it
    once the call returns."""
    monkeypatch.setattr(transactions, "STUCK_MARGIN_S", 0.2)
    producer, consumer = StuckMarkerProducer(), MarkerConsumer()
    kept = Transactional(producer, Deliveries(), consumer, "sink-0", ("sink-0",))  # type: ignore[arg-type]
    started = time.monotonic()
    with pytest.raises(bounded.StuckCall, match="^the batch marker of group sink-0 did not return within 0 s"):
        transactions._send(kept, TopicPartition("out", 0, 5, "{}"), 0.1)
    assert 0.3 <= time.monotonic() - started < 5 and producer.called.is_set()
    transactional_pool.discard(kept)  # what the task's release does with an unhealthy producer: nothing, yet
    assert kept.stuck and not producer.closed.is_set() and not consumer.closed
    producer.release.set()
    assert producer.closed.wait(10) and wait(lambda: consumer.closed and kept.closed, 10, 0.01)


class UnansweredMarkerProducer:
    """A kept producer whose first marker call fails with `code` after the timeout it was given."""

    def __init__(self, code: int) -> None:
        self.code, self.timeouts, self.calls = code, [], []

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def send_offsets_to_transaction(self, offsets, metadata, timeout) -> None:
        self.timeouts.append(timeout)
        raise KafkaException(KafkaError(self.code, "Failed to add offsets to transaction on broker TxnCoordinator"))

    def abort_transaction(self, timeout=None) -> None:
        self.calls.append("abort")


@pytest.mark.parametrize("code", [KafkaError._TIMED_OUT, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError._FENCED])
def test_a_kept_producer_whose_first_marker_goes_unanswered_is_replaced_within_its_short_timeout(code):
    """A kept producer's first marker, sent before any record is taken, is given FIRST_MARKER_TIMEOUT_S rather than
    the transaction's timeout; timed out, refused by a coordinator that moved, or fenced, it asks for a new
    producer (False) instead of failing the task, and is not aborted (the new producer's init ends its
    transaction)."""
    producer = UnansweredMarkerProducer(code)
    kept = Transactional(producer, Deliveries(), MarkerConsumer(), "sink-0", ("sink-0",))  # type: ignore[arg-type]
    options = parse(deliveryGuarantee="exactly-once", transactionalIdPrefix="sink")
    began = transactions._send_first_marker(kept, options, MarkedBatch("q", 3), 0, 60.0, "sink-0")
    assert began is False and producer.calls == ["begin"]
    assert producer.timeouts == [transactions.FIRST_MARKER_TIMEOUT_S] and transactions.FIRST_MARKER_TIMEOUT_S < 60


class BusyCoordinatorProducer(UnansweredMarkerProducer):
    """A kept producer whose transaction coordinator answers its first `busy` marker calls with CONCURRENT_TRANSACTIONS
    (retriable, as librdkafka hands it back once its own few retries are used up), then takes the marker."""

    def __init__(self, busy: int) -> None:
        super().__init__(KafkaError.CONCURRENT_TRANSACTIONS)
        self.busy = busy

    def send_offsets_to_transaction(self, offsets, metadata, timeout) -> None:
        self.timeouts.append(timeout)
        if len(self.timeouts) <= self.busy:
            raise KafkaException(KafkaError(self.code, "Failed to add offsets to transaction on broker "
                                            "TxnCoordinator/2: Broker: Producer attempted to update a transaction "
                                            "while another concurrent operation on the same transaction was ongoing",
                                            retriable=True))


def test_a_marker_the_coordinator_refuses_for_now_is_tried_again_within_its_timeout(monkeypatch):
    """A coordinator still completing the previous transaction refuses the next marker with CONCURRENT_TRANSACTIONS
    for a while after a node went away: the marker is tried again, each try given what is left of the marker's
    timeout, and the batch goes on with the same producer. Refused until that timeout passed, the kept producer asks
    for a new one (False) instead of failing the task."""
    monkeypatch.setattr(markers, "MARKER_RETRY_BACKOFF_S", 0.01)
    options = parse(deliveryGuarantee="exactly-once", transactionalIdPrefix="sink")
    producer = BusyCoordinatorProducer(busy=2)
    kept = Transactional(producer, Deliveries(), MarkerConsumer(), "sink-0", ("sink-0",))  # type: ignore[arg-type]
    assert transactions._send_first_marker(kept, options, MarkedBatch("q", 3), 0, 60.0, "sink-0") is True
    assert producer.calls == ["begin"] and len(producer.timeouts) == 3
    assert transactions.FIRST_MARKER_TIMEOUT_S >= producer.timeouts[0] > producer.timeouts[1] > producer.timeouts[2]

    monkeypatch.setattr(transactions, "FIRST_MARKER_TIMEOUT_S", 0.2)
    producer = BusyCoordinatorProducer(busy=10_000)
    kept = Transactional(producer, Deliveries(), MarkerConsumer(), "sink-0", ("sink-0",))  # type: ignore[arg-type]
    began = time.monotonic()
    assert transactions._send_first_marker(kept, options, MarkedBatch("q", 3), 0, 60.0, "sink-0") is False
    assert time.monotonic() - began < 5 and len(producer.timeouts) > 2 and producer.calls == ["begin"]


def test_a_kept_transactional_producer_goes_only_to_a_task_of_its_write_path():
    """Two sinks with one prefix but different writePath values never share a kept producer: a writePath=python task
    is not handed the native producer a writePath=native task left, though the id and settings are the same."""
    def key(path: str) -> tuple:
        return pool_key(parse(deliveryGuarantee="exactly-once", transactionalIdPrefix="sink", writePath=path),
                        "sink-0", "sink-0")

    assert key("python") == key("python")
    assert key("python") != key("native")


class ProducerTaken(Exception):
    """Raised by the test's stand-in for Prepared: a task went as far as taking its producer."""


def test_a_batch_write_task_without_its_write_id_fails_before_it_takes_a_producer(monkeypatch):
    """An exactly-once batch task that was not handed its write's id fails before a producer is taken or made for
    it, so no kept producer is left out of its worker's pool by the failure."""
    taken: list[int] = []

    def prepared(options, partition_id):
        taken.append(partition_id)
        raise ProducerTaken

    monkeypatch.setattr(task, "Prepared", prepared)
    options, columns = parse(deliveryGuarantee="exactly-once", transactionalIdPrefix="sink"), check_columns(
        StructType([StructField("value", BinaryType())]), "out")
    rows = pa.record_batch([pa.array([b"v"], pa.binary())], names=["value"])

    with pytest.raises(KafkaSourceError, match="a batch write's task without the write's id"):
        task.write_task(options, columns, [rows], task.TaskInfo(2, 0, None), streaming=False, write_id=None)
    assert taken == []
    with pytest.raises(ProducerTaken):  # with its id, the same task goes on to take its producer
        task.write_task(options, columns, [rows], task.TaskInfo(2, 0, None), streaming=False, write_id="w")
    assert taken == [2]


def test_a_marker_round_trips_through_its_metadata_and_offset():
    metadata = marker_metadata(MarkedBatch("q-1", 7), 2, ("q-0",), 12, "ab" * 16, 1_795_000_000_000)
    assert metadata == ('{"kind":"kafkasource-sink-marker","queryId":"q-1","batchId":7,"partition":2,"records":12,'
                        f'"digest":"{"ab" * 16}","at":1795000000000,"earlier":["q-0"]}}')
    assert parse_marker(8, metadata) == Marker("q-1", 7, 12, "ab" * 16, ("q-0",), 1_795_000_000_000)
    # the first marker a transaction carries has no count or digest yet (the later one replaces it)
    assert parse_marker(8, marker_metadata(MarkedBatch("q-1", 7), 2, (), None, None)) == Marker("q-1", 7)


@pytest.mark.parametrize(("offset", "metadata"), [
    (-1001, None), (8, ""), (8, "not json"), (8, '{"kind":"other","queryId":"q","batchId":7}'),
    (9, '{"kind":"kafkasource-sink-marker","queryId":"q","batchId":7}'),  # offset and batch disagree
    (8, '{"kind":"kafkasource-sink-marker","queryId":"q","batchId":"7"}'),
])
def test_anything_else_is_no_marker(offset, metadata):
    assert parse_marker(offset, metadata) is None


def test_a_marker_lets_a_task_write_a_later_batch_and_compare_the_same_one():
    marker = Marker("q", 7, 3, "d")
    assert judge(None, MarkedBatch("q", 0), "p", 0) is Verdict.WRITE
    assert judge(marker, MarkedBatch("q", 8), "p", 0) is Verdict.WRITE
    assert judge(marker, MarkedBatch("q", 7), "p", 0) is Verdict.COMPARE
    assert judge(marker, MarkedBatch("another query", 0), "p", 0) is Verdict.WRITE  # takes the prefix over


def test_a_marker_ahead_of_the_batch_is_a_rewound_checkpoint():
    with pytest.raises(ExactlyOnceError) as rewound:
        judge(Marker("q", 7, 3, "d"), MarkedBatch("q", 5), "orders-sink", 2)
    assert str(rewound.value).startswith(
        "the checkpoint is behind what this sink already wrote: Spark runs batch 5 of query q, but the marker of "
        "transactionalIdPrefix orders-sink for partition 2 says batch 7 of that query is written.")


def test_a_query_that_another_took_over_from_fails_naming_it():
    with pytest.raises(ExactlyOnceError) as shared:
        judge(Marker("r", 2, 1, "d", ("q",)), MarkedBatch("q", 9), "orders-sink", 0)
    assert str(shared.value).startswith(
        "another sink writes under transactionalIdPrefix orders-sink: partition 0's marker names query r (its batch "
        "2), which took the prefix over after this query (q) had written under it.")


def test_a_replay_is_skipped_only_over_the_same_count_and_digest():
    marker = Marker("q", 7, 3, "d1")
    check_replay(marker, MarkedBatch("q", 7), "p", 0, 3, "d1")
    for records, digest in ((3, "d2"), (4, "d1")):
        with pytest.raises(ExactlyOnceError) as other:
            check_replay(marker, MarkedBatch("q", 7), "p", 0, records, digest)
        assert f"is written under transactionalIdPrefix p as 3 records of digest d1, but the task now holds " \
               f"{records:,} records of digest {digest}" in str(other.value)
    with pytest.raises(ExactlyOnceError) as older:  # a marker without them cannot show it
        check_replay(Marker("q", 7), MarkedBatch("q", 7), "p", 0, 3, "d1")
    assert "records whose count and digest it does not keep (a marker of an older kafkasource)" in str(older.value)


def test_a_marker_remembers_a_bounded_list_of_the_writes_before_it():
    marker = Marker("q", 1, earlier=tuple(f"w{i}" for i in range(EARLIER_KEPT)))
    assert marker.followed("q") == marker.earlier
    assert marker.followed("new") == (*[f"w{i}" for i in range(1, EARLIER_KEPT)], "q")
    assert Marker("q", 1, earlier=("new", "x")).followed("new") == ("x", "q")
    long = marker_metadata(MarkedBatch("q" * 36, 10**9), 999, tuple("w" * 36 for _ in range(EARLIER_KEPT)), 10**9,
                           "0" * 32)
    assert len(long.encode()) < 1024  # far below the broker's offset.metadata.max.bytes (4096 by default)


# --- what a task wrote: its count and digest ---------------------------------------------------------------

def digest_of(columns, *batches, hashing: str = XXH3) -> tuple[int, str]:
    digest = RecordDigest(columns, hashing)
    for batch in batches:
        digest.add(batch)
    return digest.records, digest.hexdigest()


def test_the_digest_does_not_depend_on_how_the_rows_are_cut_into_batches():
    headers = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    batch = pa.RecordBatch.from_arrays([
        pa.array(["t1", "t2", "t1", "t2"]), pa.array(["a", None, "ccc", "dd"]),
        pa.array([b"1", b"22", None, b"4444"]),
        pa.array([[{"key": "h", "value": b"x"}], None, [], [{"key": "i", "value": None}]], headers),
        pa.array([0, None, 2, 1], pa.int32())], names=["topic", "key", "value", "headers", "partition"])
    columns = Columns(topic=None, key=True, headers=True, partition=True)
    whole = digest_of(columns, batch)
    assert whole[0] == 4
    assert digest_of(columns, batch.slice(0, 1), batch.slice(1, 2), batch.slice(3)) == whole
    large = batch.set_column(2, "value", batch.column(2).cast(pa.large_binary()))
    assert digest_of(columns, large) == whole  # the same bytes in another layout
    for index, changed in ((2, pa.array([b"1", b"22", None, b"4445"])), (2, pa.array([b"1", b"22", b"", b"4444"])),
                           (4, pa.array([0, None, 2, 2], pa.int32())), (1, pa.array(["a", "", "ccc", "dd"]))):
        assert digest_of(columns, batch.set_column(index, batch.schema.field(index).name, changed)) != whole
    # the values' bytes cut at another place between rows: other records
    moved = batch.set_column(2, "value", pa.array([b"12", b"2", None, b"4444"]))
    assert digest_of(columns, moved) != whole


def test_the_digest_of_a_sliced_batch_is_the_one_markers_already_keep():
    """The digest's bytes are fixed: a marker written by an earlier kafkasource is checked against it. The SHA-256
    value, the hash of markers before XXH3, was computed by the first implementation (numpy's to_numpy), over a batch
    whose columns start at an offset; a marker names its hash, so a replay is hashed the way its marker was."""
    batch = pa.RecordBatch.from_arrays([pa.array(["x", "a", None, "ccc"]), pa.array([b"0", b"1", b"22", None]),
                                        pa.array([9, 0, None, 7], pa.int64())],
                                       names=["key", "value", "partition"]).slice(1)
    columns = Columns(topic="t", key=True, headers=False, partition=True)
    unsliced = pa.RecordBatch.from_arrays([pa.array(["a", None, "ccc"]), pa.array([b"1", b"22", None]),
                                           pa.array([0, None, 7], pa.int64())], names=["key", "value", "partition"])
    for hashing, expected in ((SHA256, "6b7e7779cf9556f4c2f00caa092ec805"),
                              (XXH3, "xxh3:bb58863a2f95e33c93be5347ab97339f")):
        assert digest_of(columns, batch, hashing=hashing) == (3, expected)
        assert digest_of(columns, batch.slice(0, 0), batch, hashing=hashing) == (3, expected)
        assert digest_of(columns, unsliced, hashing=hashing) == (3, expected)
        assert hash_of(expected) == hashing
    assert hash_of(None) == SHA256  # a marker of a kafkasource that kept no digest: never compared


# --- the words of delivery errors -------------------------------------------------------------------------

def test_too_few_in_sync_replicas_are_told_with_the_partition_its_replicas_and_min_insync_replicas():
    """A timeout the cluster explains (the partition below its topic's min.insync.replicas) is worded as that; a
    NOT_ENOUGH_REPLICAS itself (a producer without retries) names it even when the cluster was not asked."""
    options = parse(**{"kafka.delivery.timeout.ms": "8000"})
    short = Shortfall(partition=0, in_sync=(3,), replicas=(1, 2, 3), required=2)
    timed_out = delivery_error(KafkaError(KafkaError._MSG_TIMED_OUT, "Local: Message timed out"), options, "out", 0,
                               failed=5, short=short)
    assert str(timed_out) == (
        "the brokers at broker:9092 refused records for topic out partition 0 with NOT_ENOUGH_REPLICAS until "
        "kafka.delivery.timeout.ms (8,000 ms) passed: the partition has 1 in-sync replica (node 3) of 3, and topic "
        "out's min.insync.replicas asks for 2, which every write with acks=all needs (Local: Message timed out) (5 "
        "records failed). Start the brokers of nodes 1 and 2 (or wait until they caught up), then write again: a "
        "streaming query resumes from its checkpoint. Lowering min.insync.replicas or acks instead would write "
        "records that the loss of one more broker can take")
    assert timed_out.code == KafkaError._MSG_TIMED_OUT
    refused = str(delivery_error(KafkaError(KafkaError.NOT_ENOUGH_REPLICAS, "Broker: Not enough in-sync replicas"),
                                 options, "out", 1))
    assert refused.startswith("the brokers at broker:9092 refused records for topic out partition 1 with "
                              "NOT_ENOUGH_REPLICAS: the partition has fewer in-sync replicas than topic out's "
                              "min.insync.replicas asks for, which every write with acks=all needs (Broker: Not "
                              "enough in-sync replicas). Start the brokers that hold its other replicas, then write "
                              "again"), refused
    # without a shortfall a timeout stays a timeout
    assert str(delivery_error(KafkaError(KafkaError._MSG_TIMED_OUT, "Local: Message timed out"), options, "out",
                              0)).startswith("records for topic out partition 0 were not delivered within")


def test_delivery_errors_name_the_topic_partition_and_what_to_change_never_a_secret():
    options = parse(**{"kafka.sasl.password": "s3cret-pw", "kafka.security.protocol": "SASL_PLAINTEXT",
                       "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "alice"})
    too_large = str(delivery_error(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too big s3cret-pw"), options, "out", 2,
                                   size=2_000_000))
    assert too_large == ("a record of 2,000,000 bytes for topic out partition 2 is too large: too big *****. The "
                         "producer takes records up to kafka.message.max.bytes (1000000 bytes now) and the brokers up "
                         "to the topic's max.message.bytes: raise both (kafka.message.max.bytes for the sink; "
                         "max.message.bytes with kafka-configs on the topic), or write smaller records")
    denied = str(delivery_error(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied"), options, "out", -1,
                                failed=3))
    assert denied == ("the brokers at broker:9092 refused to let this client as user alice write to topic out "
                      "(TOPIC_AUTHORIZATION_FAILED) (3 records failed). Grant the principal WRITE (and DESCRIBE) on "
                      "topic out, or use credentials (kafka.sasl.username) that have them")
    timed_out = str(delivery_error(KafkaError(KafkaError._MSG_TIMED_OUT, "Local: Message timed out"), options, "out",
                                   1))
    assert timed_out == ("records for topic out partition 1 were not delivered within kafka.delivery.timeout.ms "
                         "(300,000 ms): Local: Message timed out. Check that the brokers at broker:9092 are up and "
                         "reachable from the executors, or raise kafka.delivery.timeout.ms to wait longer")
    # under exactly-once the advice is one the option checks accept: the delivery timeout may not pass the
    # transaction timeout
    exactly_once = parse(deliveryGuarantee="exactly-once", transactionalIdPrefix="p")
    assert str(delivery_error(KafkaError(KafkaError._MSG_TIMED_OUT, "Local: Message timed out"), exactly_once, "out",
                              1)).endswith(
        "or raise kafka.transaction.timeout.ms (60,000 ms now) to wait longer: under deliveryGuarantee=exactly-once "
        "the delivery timeout is the transaction timeout unless set lower")
    raised = parse(deliveryGuarantee="exactly-once", transactionalIdPrefix="p",
                   **{"kafka.transaction.timeout.ms": "120000", "kafka.delivery.timeout.ms": "120000"})
    assert raised.delivery_timeout_ms() == 120_000  # what the advice leads to, accepted by the option checks


class AbortFails:
    """A producer whose abort fails, as one whose coordinator is gone does."""

    def abort_transaction(self, timeout: float) -> None:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Local: Timed out"))


class AbortEnds:
    def abort_transaction(self, timeout: float) -> None:
        pass


def test_a_producer_whose_abort_failed_may_not_write_again(caplog):
    options = parse(deliveryGuarantee="exactly-once", transactionalIdPrefix="p")
    assert _abort(AbortEnds(), None, True, 1.0, "p-0", options) is True
    assert _abort(AbortFails(), None, True, 1.0, "p-0", options) is False  # not put back in the pool
    assert "could not abort the transaction of p-0 (Local: Timed out)" in caplog.text
    assert _abort(AbortFails(), None, False, 1.0, "p-0", options) is True  # no transaction begun: nothing to end
