"""valueFormat=json against Spark's own from_json: every value of tests/support/json_corpus.py written to a real topic,
read back through format("kafkasource") on both read paths, and compared row by row with from_json(CAST(value AS
STRING), schema, options) over the same bytes in the same session; FAILFAST's bad records are exactly the records
from_json marks corrupt; what docs/plain-json.md lists as differences is asserted as such."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import threading

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F

from tests.support.json_corpus import CASES, CorpusCase
from tests.support.kafka_helpers import Record
from tests.support.query_helpers import base_options, batch, reader


@pytest.fixture(scope="module")
def corpus_topics(kafka) -> dict[str, str]:
    """One single-partition topic per corpus case, its values in order (offset i holds value i)."""
    topics = {}
    for case in CASES:
        topic = kafka.create_topic(kafka.unique_name(f"plain-json-{case.name}"), partitions=1)
        kafka.produce(topic, [Record(0, None, value) for value in case.values])
        topics[case.name] = topic
    return topics


def _comparable(value):
    """A collected value with NaN made equal to itself (a Row holding NaN is never equal to another)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=True)
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _json_options(case: CorpusCase, **extra: str) -> dict[str, str]:
    # from_json's zone-less timestamps read in the session's zone, which a source cannot see: both are given UTC
    # unless the case sets one (the default's difference has a test of its own below)
    return {"timeZone": "UTC", **case.options, **extra}


def _kafkasource_values(spark, kafka, topic: str, case: CorpusCase, read_path: str, **extra: str) -> list:
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", readPath=read_path,
                           valueFormat="json", valueSchema=case.schema,
                           **{f"json.{k}": v for k, v in _json_options(case).items()}, **extra)
    return batch(spark, options).orderBy("offset").collect()


def _from_json_values(spark, case: CorpusCase, schema: str | None = None) -> list:
    df = spark.createDataFrame([(value,) for value in case.values], "value binary")
    parsed = F.from_json(F.col("value").cast("string"), schema or case.schema, _json_options(case))
    return [row.value for row in df.select(parsed.alias("value")).collect()]


def test_every_corpus_row_equals_from_json(spark, kafka, corpus_topics, read_path):
    compared = 0
    for case in CASES:
        rows = _kafkasource_values(spark, kafka, corpus_topics[case.name], case, read_path)
        expected = _from_json_values(spark, case)
        assert [row.offset for row in rows] == list(range(len(case.values))), case.name
        for row, want, value in zip(rows, expected, case.values, strict=True):
            assert row.value_raw == value, (case.name, value)
            assert _comparable(row.value) == _comparable(want), (case.name, value)
            compared += 1
    assert compared == sum(len(case.values) for case in CASES)


def _with_corrupt_field(schema: str) -> str:
    if schema.lstrip().startswith("{"):
        document = json.loads(schema)
        document["fields"].append({"name": "_corrupt_record", "type": "string", "nullable": True, "metadata": {}})
        return json.dumps(document)
    return f"{schema}, _corrupt_record STRING"


def test_failfast_marks_bad_exactly_the_records_from_json_finds_corrupt(spark, kafka, corpus_topics, read_path):
    """json.mode=FAILFAST with onDecodeError=keep: a null value and a reason where from_json (PERMISSIVE, with a
    corrupt-record field) fills that field, from_json's row everywhere else."""
    bad = 0
    for case in CASES:
        rows = _kafkasource_values(spark, kafka, corpus_topics[case.name], case, read_path,
                                   **{"json.mode": "FAILFAST", "onDecodeError": "keep"})
        if case.schema.upper().startswith(("ARRAY<", "MAP<")):  # no corrupt-record field: from_json FAILFAST itself
            _assert_failfast_fails_alike(spark, case, rows)
            continue
        has_field = "_corrupt_record" in case.schema  # the schema names the field itself: compared as it is
        marked = _from_json_values(spark, case, case.schema if has_field else _with_corrupt_field(case.schema))
        for row, want, value in zip(rows, marked, case.values, strict=True):
            corrupt = want is not None and want["_corrupt_record"] is not None
            assert (row.value is None and row.value_error is not None) == corrupt, (case.name, value, row)
            if corrupt:
                bad += 1
                assert row.value_error.startswith(("malformed JSON", "the record")), row.value_error
            else:
                assert row.value_error is None
                trimmed = None if want is None else {k: v for k, v in want.asDict(True).items()
                                                     if k != "_corrupt_record" or has_field}
                assert _comparable(row.value) == _comparable(trimmed), (case.name, value)
    assert bad > 50  # the corpus is rich in bad records: the comparison saw them


def _assert_failfast_fails_alike(spark, case: CorpusCase, rows: list) -> None:
    """Each value through from_json with mode FAILFAST alone: it fails exactly where kafkasource gave a reason."""
    for row, value in zip(rows, case.values, strict=True):
        df = spark.createDataFrame([(value,)], "value binary")
        parsed = F.from_json(F.col("value").cast("string"), case.schema, _json_options(case, mode="FAILFAST"))
        try:
            want, failed = df.select(parsed.alias("value")).collect()[0].value, False
        except Exception as exc:  # Spark's malformed-record error
            assert "MALFORMED_RECORD_IN_PARSING" in str(exc), exc
            want, failed = None, True
        assert (row.value_error is not None) == failed, (case.name, value, row)
        assert _comparable(row.value) == _comparable(want), (case.name, value)


def test_failfast_fails_the_query_naming_the_first_bad_record(spark, kafka, topic):
    kafka.produce(topic, [Record(0, None, b'{"id": 1}'), Record(0, None, b'{"id": "one"}'),
                          Record(0, None, b"[]")])
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", valueFormat="json",
                           valueSchema="id INT", **{"json.mode": "FAILFAST"})
    with pytest.raises(Exception) as error:
        batch(spark, options).collect()
    assert (f"cannot decode the value of the record at {topic}-0 offset 1 (json.mode=FAILFAST): the record does "
            "not fit the schema: field id: a string (\"one\") cannot be int (1 more in this batch). Set "
            "onDecodeError=keep") in str(error.value)


def test_keys_and_values_both_decode_and_select_value_star_gives_the_fields(spark, kafka, topic):
    kafka.produce(topic, [Record(1, b'{"customer": "ann"}', b'{"order_id": 7, "amount": 2.50}')])
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", valueFormat="json",
                           keyFormat="json", valueSchema="order_id BIGINT, amount DECIMAL(10,2)",
                           keySchema='{"type":"struct","fields":[{"name":"customer","type":"string",'
                                     '"nullable":true,"metadata":{}}]}')
    df = batch(spark, options)
    assert df.select("value.*").schema.simpleString() == "struct<order_id:bigint,amount:decimal(10,2)>"
    rows = df.select("key.customer", "value.*").collect()
    assert [tuple(r) for r in rows] == [("ann", 7, decimal.Decimal("2.50"))]
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                          "key_raw", "value_raw"]


def test_a_stream_decodes_plain_json_batch_by_batch_as_from_json_does(spark, kafka, topic, tmp_path):
    values = [b'{"id": 1, "tags": ["a"]}', b'{"id": "two"}', b"not json", b'{"id": 4, "tags": null}', b""]
    kafka.produce(topic, [Record(0, None, value) for value in values])
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="2",
                           valueFormat="json", valueSchema="id INT, tags ARRAY<STRING>")
    seen: list = []
    lock = threading.Lock()

    def collect(batch_df, batch_id):
        rows = batch_df.select("offset", "value").collect()
        with lock:
            seen.append(rows)

    query = (reader(spark, options).load().writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120) and query.exception() is None
    finally:
        query.stop()
    batches = [rows for rows in seen if rows]
    assert [len(rows) for rows in batches] == [2, 2, 1]  # maxOffsetsPerTrigger: the stream ran in three batches
    ours = [row.value for rows in batches for row in sorted(rows, key=lambda r: r.offset)]
    case = CorpusCase("stream", "id INT, tags ARRAY<STRING>", tuple(values))
    assert [_comparable(v) for v in ours] == [_comparable(v) for v in _from_json_values(spark, case)]
    assert _comparable(ours[1]) == {"id": None, "tags": None} and ours[4] is None


def test_a_plain_json_key_beside_an_avro_value_from_the_registry(spark, kafka, schema_registry, topic, read_path):
    from tests.support.registry_helpers import encode, item_serializer

    value = encode(item_serializer(schema_registry, "avro"), topic, {"id": 1, "name": "a"})
    kafka.produce(topic, [Record(0, b'{"customer": "ann", "n": 2}', value), Record(0, b"not json", value)])
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", readPath=read_path,
                           keyFormat="json", keySchema="customer STRING", valueFormat="avro",
                           onDecodeError="keep", **{"schema.registry.url": schema_registry, "json.mode": "FAILFAST"})
    rows = batch(spark, options).orderBy("offset").collect()
    assert [(r.key, r.key_error, tuple(r.value), r.value_error) for r in rows] == [
        (Row(customer="ann"), None, (1, "a"), None),
        (None, "malformed JSON: unexpected character 'n' at character 0", (1, "a"), None),
    ]


# ---- what docs/plain-json.md lists as differences -------------------------------------------------------------

DIFFERENCES = CorpusCase("differences", "ts TIMESTAMP", (
    b'{"ts": "2024-03-01T12:00:00"}',       # zone-less: the session's zone against json.timeZone's UTC
    b'{"ts": "12:00:00"}',                  # a time alone: today's date in from_json
))


def test_nesting_up_to_jacksons_limit_reads_as_from_json_and_past_it_differs_as_listed(spark, kafka, topic):
    values = [('{"a": 1, "x": ' + "[" * depth + "]" * depth + "}").encode() for depth in (999, 1000, 1500)]
    kafka.produce(topic, [Record(0, None, value) for value in values])
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", valueFormat="json",
                           valueSchema="a INT, x STRING")
    ours = [row.value for row in batch(spark, options).orderBy("offset").collect()]
    theirs = _from_json_values(spark, CorpusCase("deep", "a INT, x STRING", tuple(values)))
    assert ours[0] == theirs[0] and ours[0].x == "[" * 999 + "]" * 999  # 1,000 levels: read alike
    assert (tuple(ours[1]), tuple(theirs[1])) == ((None, None), (1, None))  # 1,001: Jackson fails the field only
    assert tuple(ours[2]) == tuple(theirs[2]) == (None, None)


def test_the_listed_differences_from_from_json(spark, kafka, topic):
    kafka.produce(topic, [Record(0, None, value) for value in DIFFERENCES.values])
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", valueFormat="json",
                           valueSchema=DIFFERENCES.schema)
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        ours = [row.value.ts for row in batch(spark, options).orderBy("offset").collect()]
        df = spark.createDataFrame([(v,) for v in DIFFERENCES.values], "value binary")
        theirs = [row.ts for row in df.select(
            F.from_json(F.col("value").cast("string"), DIFFERENCES.schema).alias("v")).select("v.*").collect()]
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    # collected as naive local datetimes: compared as instants
    utc = [None if t is None else datetime.datetime.fromtimestamp(t.timestamp(), datetime.UTC) for t in ours + theirs]
    ours_utc, theirs_utc = utc[:2], utc[2:]
    noon = datetime.datetime(2024, 3, 1, 12, 0, tzinfo=datetime.UTC)
    assert ours_utc[0] == noon and theirs_utc[0] == noon + datetime.timedelta(hours=5)  # New York's 12:00 is 17:00
    assert ours_utc[1] is None and theirs_utc[1].time() in (datetime.time(16, 0), datetime.time(17, 0))


DDL_STRINGS = [
    "a INT", "a INT, b STRING", "order_id BIGINT, customer STRING, amount DECIMAL(10,2), placed TIMESTAMP",
    "STRUCT<a: INT, b: ARRAY<STRING>>", "struct<a:int,b:map<string,double>>",
    "`weird name` STRING NOT NULL COMMENT 'a comment', `x``y` LONG",
    "t TINYINT, s SMALLINT, f FLOAT, r REAL, d DOUBLE, dt DATE, n TIMESTAMP_NTZ, l TIMESTAMP_LTZ, b BINARY",
    "d1 DECIMAL, d2 DEC(5), d3 NUMERIC(7, 3), z BOOLEAN",
    "deep STRUCT<a: STRUCT<b: ARRAY<MAP<STRING, STRUCT<c: INT>>>>>",
    "ARRAY<STRUCT<a: INT, b: STRING>>", "map<string, array<double>>", "array INT, map STRING",
]


@pytest.mark.parametrize("ddl", DDL_STRINGS)
def test_the_ddl_parser_reads_as_sparks_own_parser(spark, ddl):
    from pyspark.sql.types import _parse_datatype_string

    from kafkasource.formats.plain_json.ddl import parse_ddl
    from kafkasource.formats.plain_json.schema import nullable

    assert nullable(parse_ddl(ddl)).json() == nullable(_parse_datatype_string(ddl)).json()
