"""valueFormat / keyFormat and the options beside them, read into the specs kafkasource.formats defines: the source's
(kafkasource.formats.decoding's Decoding) and the sink's (kafkasource.formats.encoding's Encoding). Each column's
schema is fetched from the registry as its options are read, in the order they are read, so the first refusal
is the one a user meets first.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkasource.errors import ColumnError, OptionError
from kafkasource.formats.decoding import ColumnFormat, Decoding, OnDecodeError, checked_decoding, fetch_reader
from kafkasource.formats.encoding import ColumnEncoding, Encoding, writer_column
from kafkasource.formats.registry import SchemaChoice, registry_config
from kafkasource.formats.table import FORMAT_NAMES, FORMATS, Format
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
)
# the sink's (the reader's, but for what to do with a record that does not decode); schema.registry.* besides
SINK_FORMAT_OPTIONS = tuple(o for o in SOURCE_FORMAT_OPTIONS if o != "onDecodeError") + (
    "auto.register.schemas",
    "deadLetterTopic",
)


def read_format(options: Mapping[str, str], column: str) -> Format:
    raw = options.get(f"{column}Format".lower())
    if raw is None:
        return "binary"
    chosen = raw.lower()
    if chosen not in FORMAT_NAMES:
        raise OptionError(
            f"option {column}Format must be one of {', '.join(FORMAT_NAMES)} (json: JSON Schema in the "
            f"registry's wire format), got {raw[:40]!r}"
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
            "valueFormat or keyFormat (avro, protobuf or json), or remove it"
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
    config = registry_config(options)
    columns: list[ColumnFormat] = []
    subjects: dict[str, str | None] = {}
    for column in decoded:
        schema_id, version = read_schema_choice(options, column, "reader")
        subject = _reader_subject(options, column, subscription)
        reader = fetch_reader(config, column, formats[column], SchemaChoice(subject, version, schema_id))
        columns.append(ColumnFormat(column, formats[column], reader, _message(options, column, formats[column])))
        subjects[column] = subject
    return checked_decoding(tuple(columns), subjects, on_error, config, read_path)


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
    config = registry_config(options)
    columns: list[ColumnEncoding] = []
    for column in encoded:
        fmt = formats[column]
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
