"""The from_json options plain JSON takes, each under its Spark name prefixed "json" and a dot (json.mode,
json.timeZone, json.allowSingleQuotes, ...), shared by the key and the value, read into PlainJsonOptions. Spark's
names and defaults; the ones from_json takes that are not read here yet are refused, naming what to do instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from kafkasource.errors import OptionError
from kafkasource.formats.plain_json.datetimes import zone
from kafkasource.formats.plain_json.text import Flags

JsonMode = Literal["PERMISSIVE", "FAILFAST"]
PREFIX = "json."
# the parser's flags: option name -> Flags field
FLAG_OPTIONS = {
    "json.allowComments": "allow_comments",
    "json.allowUnquotedFieldNames": "allow_unquoted_field_names",
    "json.allowSingleQuotes": "allow_single_quotes",
    "json.allowNumericLeadingZeros": "allow_numeric_leading_zeros",
    "json.allowNonNumericNumbers": "allow_non_numeric_numbers",
    "json.allowBackslashEscapingAnyCharacter": "allow_backslash_escaping_any_character",
    "json.allowUnquotedControlChars": "allow_unquoted_control_chars",
}
# from_json's options that are not read here (yet): why, and what to do
NOT_READ = {
    "json.timestampFormat": "timestamps are read in Spark's default forms (ISO 8601 and the like); remove it, or "
    "read the field as STRING and convert it with to_timestamp(field, format)",
    "json.timestampNTZFormat": "remove it, or read the field as STRING and convert it with to_timestamp_ntz",
    "json.dateFormat": "dates are read in Spark's default forms (yyyy-MM-dd and the like); remove it, or read the "
    "field as STRING and convert it with to_date(field, format)",
    "json.locale": "numbers and dates are read as in the en-US locale; remove it",
    "json.dropFieldIfAllNull": "it applies to schema inference, which plain JSON does not do; remove it",
    "json.primitivesAsString": "it applies to schema inference; declare the fields STRING instead",
    "json.prefersDecimal": "it applies to schema inference; declare the fields DECIMAL instead",
}
JSON_OPTIONS = ("json.mode", "json.timeZone", "json.columnNameOfCorruptRecord", *FLAG_OPTIONS, *NOT_READ)


@dataclass(frozen=True)
class PlainJsonOptions:
    """How plain JSON is read: from_json's mode, flags, time zone and corrupt-record column."""

    mode: JsonMode = "PERMISSIVE"
    flags: Flags = field(default_factory=Flags)
    time_zone: str = "UTC"  # zone-less timestamps; from_json's default is the session's, which a source cannot see
    corrupt_record_column: str = "_corrupt_record"


def read_json_options(options: Mapping[str, str]) -> PlainJsonOptions:
    """The json.* options (lower-case names, values stripped) read; OptionError naming the first bad one."""
    for name, why in NOT_READ.items():
        if options.get(name.lower()) is not None:
            raise OptionError(f"option {name} is not read by kafkasource's plain JSON: {why}")
    mode_raw = options.get("json.mode", "PERMISSIVE")
    mode = mode_raw.upper()
    if mode not in ("PERMISSIVE", "FAILFAST"):
        hint = " (DROPMALFORMED drops rows, which from_json does not do either)" if mode == "DROPMALFORMED" else ""
        raise OptionError(f"option json.mode must be PERMISSIVE or FAILFAST, got {mode_raw[:40]!r}{hint}")
    flags = {}
    for name, attribute in FLAG_OPTIONS.items():
        flag = _flag(options, name)
        if flag is not None:
            flags[attribute] = flag
    time_zone = options.get("json.timezone", "UTC")
    if zone(time_zone) is None:
        raise OptionError(
            f"option json.timeZone must be a region (Europe/Paris) or an offset (+01:00, UTC), got {time_zone[:40]!r}"
        )
    corrupt = options.get("json.columnnameofcorruptrecord", "_corrupt_record")
    return PlainJsonOptions(mode, Flags(**flags), time_zone, corrupt)  # type: ignore[arg-type]


# ---- the sink's ------------------------------------------------------------------------------------------------

# the to_json options the sink's plain JSON reads; the json.* options of the source are refused on the sink
SINK_JSON_OPTIONS = ("json.timeZone", "json.ignoreNullFields")


@dataclass(frozen=True)
class PlainJsonWriting:
    """How the sink writes a struct column as plain JSON: to_json's time zone and ignoreNullFields."""

    # to_json's default is the session's time zone, which a Python sink cannot see: UTC unless json.timeZone says
    time_zone: str = "UTC"
    ignore_null_fields: bool = True


def read_writing_options(options: Mapping[str, str]) -> PlainJsonWriting:
    """The sink's json.* options (lower-case names, values stripped) read; OptionError naming the first bad one."""
    for name in JSON_OPTIONS:
        if name not in SINK_JSON_OPTIONS and options.get(name.lower()) is not None:
            raise OptionError(
                f"option {name} is a source option of plain JSON; the sink writes JSON as to_json does, with "
                f"{' and '.join(SINK_JSON_OPTIONS)} only: remove it"
            )
    ignore_null_fields = _flag(options, "json.ignoreNullFields")
    time_zone = options.get("json.timezone", "UTC")
    if zone(time_zone) is None:
        raise OptionError(
            f"option json.timeZone must be a region (Europe/Paris) or an offset (+01:00, UTC), got {time_zone[:40]!r}"
        )
    return PlainJsonWriting(time_zone, ignore_null_fields is not False)


def _flag(options: Mapping[str, str], name: str) -> bool | None:
    """A true/false json.* option (None: not given)."""
    raw = options.get(name.lower())
    if raw is None:
        return None
    if raw.lower() not in ("true", "false"):
        raise OptionError(f"option {name} must be true or false, got {raw[:40]!r}")
    return raw.lower() == "true"
