"""valueFormat / keyFormat and the options beside them, read into the specs kafkasource.formats defines: the source's
(kafkasource.formats.decoding's Decoding) and the sink's (kafkasource.formats.encoding's Encoding). Each column's
schema is fetched from the registry (or, for plain JSON, read from valueSchema / keySchema) as its options are read,
in the order they are read, so the first refusal is the one a user meets first.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkasource.errors import ColumnError, OptionError
from kafkasource.formats.decoding import (
    ColumnFormat,
    Decoding,
    OnDecodeError,
    PlainJson,
    checked_decoding,
    fetch_reader,
)
from kafkasource.formats.encoding import ColumnEncoding, Encoding, writer_column
from kafkasource.formats.plain_json.options import (
    JSON_OPTIONS,
    PREFIX,
    SINK_JSON_OPTIONS,
    read_json_options,
    read_writing_options,
)
from kafkasource.formats.plain_json.schema import SchemaRefused, read_schema
from kafkasource.formats.plain_json.sink_column import check_json_column
from kafkasource.formats.registry import SchemaChoice, registry_config
from kafkasource.formats.table import FORMAT_NAMES, FORMATS, PLAIN_JSON, Format
from kafkasource.options.values import check_topic_name, option_text, read_bool
from kafkasource.planning.subscription import Subscription

COLUMNS = ("key", "value")
# the source's options for registry formats; schema.registry.* besides
SOURCE_FORMAT_OPTIONS = (
    "valueFormat",
    "keyFormat",
    "valueSubject",
    "keySubject",
    "valueSchemaVersion",
    "keySchemaVersion",
    "valueSchemaId",
    "keySchemaId",
    "valueMessage",
    "keyMessage",
    "onDecodeError",
    # plain JSON (valueFormat=json): the schema, and from_json's options prefixed json.
    "valueSchema",
    "keySchema",
    *JSON_OPTIONS,
)
# the registry's options, which plain JSON takes none of
REGISTRY_COLUMN_OPTIONS = ("Subject", "SchemaVersion", "SchemaId", "Message")
# the sink's (the reader's, but for what to do with a record that does not decode and plain JSON's reading);
# schema.registry.* besides
SINK_FORMAT_OPTIONS = tuple(
    o for o in SOURCE_FORMAT_OPTIONS if o not in ("onDecodeError", "valueSchema", "keySchema", *JSON_OPTIONS)
) + ("auto.register.schemas", "deadLetterTopic", *SINK_JSON_OPTIONS)


def read_format(options: Mapping[str, str], column: str) -> Format:
    raw = options.get(f"{column}Format".lower())
    if raw is None:
        return "binary"
    chosen = raw.lower()
    if chosen not in FORMAT_NAMES:
        raise OptionError(
            f"option {column}Format must be one of {', '.join(FORMAT_NAMES)} (json: plain JSON with "
            f"{column}Schema; json-schema: JSON Schema in the registry's wire format), got {raw[:40]!r}"
        )
    return chosen  # type: ignore[return-value]


def read_schema_choice(options: Mapping[str, str], column: str, role: str) -> tuple[int | None, int | None]:
    """A column's {column}SchemaId and {column}SchemaVersion (None: latest), the id refused beside a subject or a
    version; `role` (reader, writer) names the schema in the message."""
    schema_id = read_schema_number(options, f"{column}SchemaId")
    version_raw = options.get(f"{column}SchemaVersion".lower())
    if schema_id is not None and (version_raw is not None or options.get(f"{column}Subject".lower()) is not None):
        raise OptionError(
            f"option {column}SchemaId names the {role} schema by itself; remove {column}Subject "
            f"and {column}SchemaVersion, or {column}SchemaId"
        )
    if version_raw is None or version_raw.lower() == "latest":
        return schema_id, None
    return schema_id, read_schema_number(options, f"{column}SchemaVersion")


def read_schema_number(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 2**31:
        raise OptionError(f"option {name} must be a positive whole number, got {raw[:40]!r}")
    return int(raw)


def _message(options: Mapping[str, str], column: str, fmt: Format) -> str | None:
    message = options.get(f"{column}Message".lower())
    if message is not None and not FORMATS[fmt].named_messages:
        raise OptionError(
            f"option {column}Message names a Protobuf message; it has no effect with {column}Format={fmt}; remove it"
        )
    return message


def _no_effect_while_binary(options: Mapping[str, str], names: tuple[str, ...]) -> None:
    named = [name for name in names[2:] if options.get(name.lower()) is not None]
    named += [name for name in options if name.startswith("schema.registry.")]
    if named:
        raise OptionError(
            f"option {named[0]} has no effect while valueFormat and keyFormat are binary; set "
            "valueFormat or keyFormat (json, avro, protobuf or json-schema), or remove it"
        )


# ---- the source ----------------------------------------------------------------------------------------------


def _reader_subject(options: Mapping[str, str], column: str, subscription: Subscription) -> str | None:
    subject = options.get(f"{column}Subject".lower())
    if subject is not None:
        return subject
    if options.get(f"{column}SchemaId".lower()) is not None:
        return None
    topics = subscription.named_topics()  # subscribe and assign name theirs; a pattern names none
    if len(topics) != 1:
        raise OptionError(
            f"option {column}Format reads every topic with one reader schema, and "
            f"{subscription.describe()} does not name exactly one topic to take it from "
            f"(<topic>-{column}): set {column}Subject (the subject whose schema to read with) or "
            f"{column}SchemaId"
        )
    return f"{topics[0]}-{column}"


def parse_decoding(options: Mapping[str, str], subscription: Subscription, read_path: str) -> Decoding | None:
    """The decoding the options ask for (None: key and value stay binary), its reader schemas fetched now.
    `options` holds the options given a value: lower-case names, values stripped (as options.parse_options
    reads them)."""
    formats = {column: read_format(options, column) for column in COLUMNS}
    on_error_raw = options.get("onDecodeError".lower()) or "fail"
    on_error: OnDecodeError
    if on_error_raw.lower() == "fail":
        on_error = "fail"
    elif on_error_raw.lower() == "keep":
        on_error = "keep"
    else:
        raise OptionError(f"option onDecodeError must be fail or keep, got {on_error_raw[:40]!r}")
    decoded = [column for column in COLUMNS if formats[column] != "binary"]
    if not decoded:
        _no_effect_while_binary(options, SOURCE_FORMAT_OPTIONS)
        return None
    _check_plain_json_options(options, formats)
    registry = any(formats[column] != PLAIN_JSON for column in decoded)
    config = registry_config(options) if registry else {}
    columns: list[ColumnFormat] = []
    subjects: dict[str, str | None] = {}
    for column in decoded:
        if formats[column] == PLAIN_JSON:
            columns.append(ColumnFormat(column, PLAIN_JSON, plain_json_reader(options, column)))
            subjects[column] = None
            continue
        schema_id, version = read_schema_choice(options, column, "reader")
        subject = _reader_subject(options, column, subscription)
        reader = fetch_reader(config, column, formats[column], SchemaChoice(subject, version, schema_id))
        columns.append(ColumnFormat(column, formats[column], reader, _message(options, column, formats[column])))
        subjects[column] = subject
    return checked_decoding(tuple(columns), subjects, on_error, config, read_path)


def _check_plain_json_options(options: Mapping[str, str], formats: Mapping[str, Format]) -> None:
    """Refuses plain JSON's options beside another format, and the registry's beside plain JSON."""
    for column in COLUMNS:
        if formats[column] == PLAIN_JSON:
            named = _given(options, [f"{column}{o}" for o in REGISTRY_COLUMN_OPTIONS])
            if named:
                raise OptionError(
                    f"option {named[0]} names a schema in the registry; {column}Format=json reads plain JSON with "
                    f"the schema {column}Schema gives: remove {named[0]}, or set {column}Format=json-schema to read "
                    "JSON Schema through the registry"
                )
        elif options.get(f"{column}Schema".lower()) is not None:
            raise OptionError(
                f"option {column}Schema is the schema of plain JSON; it has no effect with {column}Format="
                f"{formats[column]}: set {column}Format=json to read plain JSON with it, or remove it"
            )
    if PLAIN_JSON not in formats.values():
        _refuse_json_options(options, JSON_OPTIONS)
    elif not any(formats[column] in FORMATS for column in COLUMNS):
        named = [name for name in options if name.startswith("schema.registry.")]
        if named:
            raise OptionError(
                f"option {named[0]} has no effect with json (plain JSON, read with the schema valueSchema or "
                "keySchema gives, needs no registry): remove it, or set valueFormat/keyFormat=json-schema to read "
                "JSON Schema through the registry"
            )


def plain_json_reader(options: Mapping[str, str], column: str) -> PlainJson:
    """The schema {column}Schema gives, with the json.* options; OptionError saying what to write instead."""
    text = options.get(f"{column}Schema".lower())
    if text is None:
        raise OptionError(
            f"option {column}Schema is required with {column}Format=json: the schema to read the JSON with, as "
            f'Spark DDL ("order_id BIGINT, customer STRING") or Spark\'s JSON form of a StructType '
            f"(StructType.json()); for JSON Schema through the registry, set {column}Format=json-schema"
        )
    try:
        schema = read_schema(text)
    except SchemaRefused as exc:
        raise OptionError(
            f'option {column}Schema cannot be read: {exc}; write Spark DDL like "order_id BIGINT, customer STRING" '
            "or Spark's JSON form of a StructType"
        ) from None
    assert all(name.startswith(PREFIX) for name in JSON_OPTIONS)
    return PlainJson(schema.json(), read_json_options(options))


# ---- the sink ------------------------------------------------------------------------------------------------


def parse_encoding(raw_options: Mapping[str, str], schema, topic: str | None) -> Encoding | None:
    """The encoding the sink's options ask for (None: key and value written as they are), its writer schemas
    fetched or registered now and the DataFrame's `schema` (a pyspark StructType) checked against them; `topic`
    is the topic option."""
    options = {str(k).lower(): str(v).strip() for k, v in raw_options.items()}
    formats = {column: read_format(options, column) for column in COLUMNS}
    encoded = [column for column in COLUMNS if formats[column] != "binary"]
    if not encoded:
        _no_effect_while_binary(options, SINK_FORMAT_OPTIONS)
        return None
    auto_register = read_bool(options, "auto.register.schemas", False)
    dead_letter = option_text(options, "deadLetterTopic")
    if dead_letter is not None:
        check_topic_name("deadLetterTopic", dead_letter)
    types = {f.name: f.dataType for f in schema.fields}
    _check_plain_json_sink_options(options, formats)
    registry = any(formats[column] != PLAIN_JSON for column in encoded)
    config = registry_config(options) if registry else {}
    writing = read_writing_options(options) if PLAIN_JSON in formats.values() else None
    columns: list[ColumnEncoding] = []
    for column in encoded:
        fmt = formats[column]
        if fmt == PLAIN_JSON:
            assert writing is not None
            check_json_column(column, types.get(column))
            columns.append(ColumnEncoding(column, PLAIN_JSON, writing))
            continue
        if column not in types:
            raise ColumnError(
                f"option {column}Format is {fmt}, but the DataFrame has no {column} column; add one (a struct "
                f"of the schema's fields), or remove {column}Format"
            )
        message = _message(options, column, fmt)
        schema_id, version = read_schema_choice(options, column, "writer")
        choice = SchemaChoice(_writer_subject(options, column, schema_id, topic), version, schema_id)
        columns.append(writer_column(config, column, fmt, choice, message, types[column], auto_register))
    return Encoding(tuple(columns), dead_letter, config)


def _check_plain_json_sink_options(options: Mapping[str, str], formats: Mapping[str, Format]) -> None:
    """Refuses the registry's options beside plain JSON, and plain JSON's beside the other formats."""
    for column in COLUMNS:
        if formats[column] != PLAIN_JSON:
            continue
        named = _given(options, [f"{column}{o}" for o in REGISTRY_COLUMN_OPTIONS])
        if named:
            raise OptionError(
                f"option {named[0]} names a schema in the registry; {column}Format=json writes the {column} struct "
                f"as plain JSON (to_json's text): remove {named[0]}, or set {column}Format=json-schema to write "
                "JSON Schema through the registry"
            )
    if PLAIN_JSON not in formats.values():
        _refuse_json_options(options, SINK_JSON_OPTIONS)


def _given(options: Mapping[str, str], names) -> list[str]:
    """Those of `names` the (lower-cased) options set."""
    return [name for name in names if options.get(name.lower()) is not None]


def _refuse_json_options(options: Mapping[str, str], names) -> None:
    """Plain JSON's options refused where neither column is plain JSON."""
    named = _given(options, names)
    if named:
        raise OptionError(
            f"option {named[0]} applies to plain JSON; set valueFormat=json or keyFormat=json, or remove it"
        )


def _writer_subject(options: Mapping[str, str], column: str, schema_id: int | None, topic: str | None) -> str | None:
    subject = options.get(f"{column}Subject".lower())
    if schema_id is None and subject is None:
        if topic is None:
            raise OptionError(
                f"option {column}Format takes its writer schema from the subject <topic>-{column} (the topic name "
                f"strategy), and no topic option names the topic: set the topic option, or {column}Subject "
                f"(the subject whose schema to write with) or {column}SchemaId"
            )
        subject = f"{topic}-{column}"
    return subject
