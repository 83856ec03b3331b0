"""Spark's DDL for a schema ("order_id BIGINT, customer STRING", or "STRUCT<order_id: BIGINT, ...>"), parsed in
Python into pyspark's types.

Why not pyspark's own _parse_datatype_string: it asks the JVM, and a Python data source's schema() runs in a Python
worker that has no JVM gateway (nor a SparkSession). The grammar here is the part of Spark's that from_json's
schemas use: the column list, or one struct, array or map type, names plain or `back-quoted`, an optional colon
before a field's type in a struct, NOT NULL and COMMENT '...' after it, and the types JSON can fill.
tests/integration/test_plain_json.py checks the parse against Spark's own parser, string by string.
"""

from __future__ import annotations

import re

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

SIMPLE: dict[str, DataType] = {
    "boolean": BooleanType(),
    "tinyint": ByteType(),
    "byte": ByteType(),
    "smallint": ShortType(),
    "short": ShortType(),
    "int": IntegerType(),
    "integer": IntegerType(),
    "bigint": LongType(),
    "long": LongType(),
    "float": FloatType(),
    "real": FloatType(),
    "double": DoubleType(),
    "date": DateType(),
    "timestamp": TimestampType(),
    "timestamp_ltz": TimestampType(),
    "timestamp_ntz": TimestampNTZType(),
    "string": StringType(),
    "binary": BinaryType(),
}
DECIMALS = ("decimal", "dec", "numeric")
# a token: a back-quoted name (`` inside is one `), a quoted comment, a word, a number, or one punctuation mark
_TOKEN = re.compile(
    r"\s*(?:(`(?:[^`]|``)*`)|('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|(\S))"
)


class DdlError(ValueError):
    """The text is not a DDL schema; the message says where and what was expected."""


class _Tokens:
    def __init__(self, text: str):
        self.items: list[tuple[str, str, int]] = []  # (kind, text, position)
        position = 0
        while True:
            match = _TOKEN.match(text, position)
            if match is None:
                break
            kind = ("name", "quoted", "word", "number", "mark")[match.lastindex - 1]  # type: ignore[operator]
            self.items.append((kind, match.group(match.lastindex), match.start(match.lastindex)))  # type: ignore[arg-type]
            position = match.end()
        self.index = 0

    def peek(self) -> tuple[str, str, int]:
        return self.items[self.index] if self.index < len(self.items) else ("end", "", -1)

    def take(self) -> tuple[str, str, int]:
        token = self.peek()
        self.index += 1
        return token

    def word(self, *words: str) -> bool:
        """Takes the next token if it is one of `words` (keywords, any case)."""
        kind, text, _ = self.peek()
        if kind == "word" and text.lower() in words:
            self.index += 1
            return True
        return False

    def mark(self, mark: str) -> bool:
        if self.peek()[:2] == ("mark", mark):
            self.index += 1
            return True
        return False

    def expect(self, mark: str, what: str) -> None:
        if not self.mark(mark):
            raise self.error(f"expected {what}")

    def error(self, expected: str) -> DdlError:
        kind, text, _ = self.peek()
        found = "the end" if kind == "end" else repr(text)
        return DdlError(f"{expected} at {found}")


def parse_ddl(text: str) -> DataType:
    """The type `text` names: a column list (`a INT, b STRING`, a struct), or one STRUCT<...>, ARRAY<...> or MAP<...>
    type, as from_json takes them; DdlError otherwise."""
    tokens = _Tokens(text)
    if not tokens.items:
        raise DdlError("the schema is empty")
    first = tokens.peek()
    opened = tokens.items[1:2] and tokens.items[1][1] == "<"
    if first[0] == "word" and first[1].lower() in ("struct", "array", "map") and opened:
        parsed = _type(tokens)
    else:
        parsed = StructType(_fields(tokens, closing=None))
    if tokens.peek()[0] != "end":
        raise tokens.error("expected a comma and the next field, or the end of the schema")
    return parsed


def _fields(tokens: _Tokens, closing: str | None) -> list[StructField]:
    fields = []
    while True:
        fields.append(_field(tokens, colon=closing is not None))
        if not tokens.mark(","):
            break
    if closing is not None:
        tokens.expect(closing, f"'{closing}' closing the struct or a comma")
    return fields


def _field(tokens: _Tokens, colon: bool) -> StructField:
    kind, text, _ = tokens.take()
    if kind == "name":
        name = text[1:-1].replace("``", "`")
    elif kind == "word":
        name = text
    else:
        tokens.index -= 1
        raise tokens.error("expected a field name")
    if colon:
        tokens.mark(":")
    data_type = _type(tokens)
    nullable = True
    if tokens.word("not"):
        if not tokens.word("null"):
            raise tokens.error("expected NULL after NOT")
        nullable = False
    metadata = {}
    if tokens.word("comment"):
        kind, quoted, _ = tokens.take()
        if kind != "quoted":
            tokens.index -= 1
            raise tokens.error("expected a quoted comment after COMMENT")
        metadata["comment"] = re.sub(r"\\(.)", r"\1", quoted[1:-1])
    return StructField(name, data_type, nullable, metadata)


def _type(tokens: _Tokens) -> DataType:
    kind, text, _ = tokens.take()
    word = text.lower()
    if kind != "word":
        tokens.index -= 1
        raise tokens.error("expected a type")
    if word in SIMPLE:
        return SIMPLE[word]
    if word in DECIMALS:
        if not tokens.mark("("):
            return DecimalType(10, 0)
        precision = _number(tokens)
        scale = _number(tokens) if tokens.mark(",") else 0
        tokens.expect(")", "')' closing the decimal's precision and scale")
        if not 1 <= precision <= 38 or scale > precision:
            raise DdlError(f"decimal({precision},{scale}) is not a Spark decimal: precision 1 to 38, scale at most it")
        return DecimalType(precision, scale)
    if word == "array":
        tokens.expect("<", "'<' after ARRAY")
        element = _type(tokens)
        tokens.expect(">", "'>' closing the array")
        return ArrayType(element, True)
    if word == "map":
        tokens.expect("<", "'<' after MAP")
        key = _type(tokens)
        tokens.expect(",", "a comma between the map's key and value types")
        value = _type(tokens)
        tokens.expect(">", "'>' closing the map")
        return MapType(key, value, True)
    if word == "struct":
        tokens.expect("<", "'<' after STRUCT")
        if tokens.mark(">"):
            return StructType([])
        return StructType(_fields(tokens, closing=">"))
    tokens.index -= 1
    raise tokens.error("expected a type (" + ", ".join(sorted(SIMPLE)) + ", decimal(p,s), array, map, struct)")


def _number(tokens: _Tokens) -> int:
    kind, text, _ = tokens.take()
    if kind != "number":
        tokens.index -= 1
        raise tokens.error("expected a number")
    return int(text)
