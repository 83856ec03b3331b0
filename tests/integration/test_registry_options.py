"""valueFormat/keyFormat options are checked, and the reader schema fetched, when the query is defined: before
any data moves, with errors naming the option and never a registry secret."""

from __future__ import annotations

import json

import pytest

from kafkasource.errors import OptionError
from kafkasource.options import parse_options
from tests.support.registry_helpers import avro_serializer, encode

ORDER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}


@pytest.fixture(scope="module")
def subject_topic(schema_registry) -> str:
    """A topic name whose <topic>-value subject holds ORDER (no Kafka topic is needed to define a read)."""
    topic = "registry-options-orders"
    encode(avro_serializer(schema_registry, ORDER), topic, {"id": 1})
    return topic


def parse(schema_registry, **options):
    return parse_options({"kafka.bootstrap.servers": "127.0.0.1:9", "schema.registry.url": schema_registry,
                          **options})


def refused(schema_registry, **options) -> str:
    with pytest.raises(OptionError) as error:
        parse(schema_registry, **options)
    return str(error.value)


def test_the_latest_version_of_the_topics_subject_is_the_reader_schema(schema_registry, subject_topic):
    parsed = parse(schema_registry, subscribe=subject_topic, valueFormat="AVRO")
    (column,) = parsed.decoding.columns
    assert (column.column, column.format, json.loads(column.reader.text)) == ("value", "avro", ORDER)
    assert parsed.decoding.on_error == "fail"


@pytest.mark.parametrize("options, message", [
    ({"valueFormat": "xml"}, "option valueFormat must be one of binary, json, avro, protobuf, json-schema (json: "
                             "plain JSON with valueSchema; json-schema: JSON Schema in the registry's wire format), "
                             "got 'xml'"),
    ({"valueFormat": "avro", "onDecodeError": "skip"}, "option onDecodeError must be fail or keep, got 'skip'"),
    ({"valueSchemaVersion": "2"}, "option valueSchemaVersion has no effect while valueFormat and keyFormat are "
                                  "binary; set valueFormat or keyFormat (json, avro, protobuf or json-schema), or "
                                  "remove it"),
    ({"valueFormat": "avro", "valueMessage": "Order"}, "option valueMessage names a Protobuf message; it has no "
                                                        "effect with valueFormat=avro; remove it"),
    ({"valueFormat": "protobuf"}, "valueFormat is protobuf, but the reader schema (id {id}) is of type AVRO; set "
                                  "valueFormat to match it"),
    ({"valueFormat": "avro", "valueSchemaVersion": "two"},
     "option valueSchemaVersion must be a positive whole number, got 'two'"),
    ({"valueFormat": "avro", "valueSchemaId": "1", "valueSubject": "x"},
     "option valueSchemaId names the reader schema by itself; remove valueSubject and valueSchemaVersion, or "
     "valueSchemaId"),
    ({"keyFormat": "avro", "schema.registry.max.retries": "many"},
     "option schema.registry.max.retries must be a number, got 'many'"),
])
def test_bad_decoding_options_are_refused_naming_the_option(schema_registry, subject_topic, options, message):
    reader_id = parse(schema_registry, subscribe=subject_topic, valueFormat="avro").decoding.columns[0].reader.schema_id
    assert refused(schema_registry, subscribe=subject_topic, **options) == message.replace("{id}", str(reader_id))


def test_several_topics_need_a_subject_or_schema_id(schema_registry, subject_topic):
    message = refused(schema_registry, subscribe=f"{subject_topic},other", valueFormat="avro")
    assert message == (f"option valueFormat reads every topic with one reader schema, and subscribe={subject_topic},"
                       "other does not name exactly one topic to take it from (<topic>-value): set valueSubject "
                       "(the subject whose schema to read with) or valueSchemaId")
    parsed = parse(schema_registry, subscribe=f"{subject_topic},other", valueFormat="avro",
                   valueSubject=f"{subject_topic}-value")
    assert json.loads(parsed.decoding.columns[0].reader.text) == ORDER


def test_assign_takes_the_subject_of_its_one_topic_and_over_two_topics_needs_a_subject(schema_registry, subject_topic):
    parsed = parse(schema_registry, assign=json.dumps({subject_topic: [0, 1]}), valueFormat="avro")
    assert json.loads(parsed.decoding.columns[0].reader.text) == ORDER
    message = refused(schema_registry, assign=json.dumps({subject_topic: [0], "other": [0, 1]}), valueFormat="avro")
    assert message == ("option valueFormat reads every topic with one reader schema, and assign=other-0,other-1,"
                       f"{subject_topic}-0 does not name exactly one topic to take it from (<topic>-value): set "
                       "valueSubject (the subject whose schema to read with) or valueSchemaId")


def test_a_subject_the_registry_lacks_is_refused_naming_it(schema_registry):
    message = refused(schema_registry, subscribe="no-such-topic", keyFormat="avro")
    assert message.startswith(f"the schema registry at {schema_registry} has no subject 'no-such-topic-key' for "
                              "the key column (")
    assert message.endswith("register the schema, or name another with keySubject, keySchemaVersion or keySchemaId")


def test_the_registry_url_is_required(schema_registry, subject_topic):
    with pytest.raises(OptionError) as error:
        parse_options({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": subject_topic, "valueFormat": "avro"})
    assert str(error.value) == ("option schema.registry.url is required with valueFormat or keyFormat avro, protobuf "
                                "or json-schema: the schema registry's address, like http://registry:8081")


def test_registry_credentials_never_show_in_errors_or_the_options_repr(schema_registry, subject_topic):
    secret = "reader:pa55-w0rd"
    parsed = parse(schema_registry, subscribe=subject_topic, valueFormat="avro",
                   **{"schema.registry.basic.auth.user.info": secret})
    assert parsed.decoding.registry["basic.auth.user.info"] == secret  # the client gets it
    assert secret not in repr(parsed) and "bootstrap_servers='127.0.0.1:9'" in repr(parsed)
    assert secret not in repr(parsed.decoding) and schema_registry not in repr(parsed.decoding)
    assert "ColumnFormat(column='value'" in repr(parsed.decoding)
    # the registry refuses nothing here, but a URL that holds credentials besides basic.auth is refused unseen
    with_password = schema_registry.replace("http://", "http://user:pa55-w0rd@")
    with pytest.raises(OptionError) as error:
        parse_options({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": subject_topic, "valueFormat": "avro",
                       "schema.registry.url": with_password, "schema.registry.basic.auth.user.info": secret})
    assert str(error.value).startswith("the schema.registry.* options were refused: basic.auth.user.info "
                                       "configured with userinfo credentials in the URL")
    assert "pa55-w0rd" not in str(error.value)
