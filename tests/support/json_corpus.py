"""A corpus of plain JSON values to read with valueFormat=json and compare with Spark's from_json: each CorpusCase is a
schema (DDL or Spark's JSON form), the json.* options (from_json's, unprefixed here), and the values (bytes, None
for a null value), covering what from_json does with each kind of token in each type, malformed text, and the
parser's flags."""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CorpusCase:
    name: str
    schema: str
    values: tuple[bytes | None, ...]
    options: dict[str, str] = field(default_factory=dict)  # from_json's names (mode, timeZone, allowComments, ...)


def _b(*texts: str) -> tuple[bytes, ...]:
    return tuple(t.encode() for t in texts)


ORDERS = CorpusCase("orders", "order_id BIGINT, customer STRING, amount DOUBLE, paid BOOLEAN", _b(
    '{"order_id": 1, "customer": "ann", "amount": 12.5, "paid": true}',
    '{"order_id": 2, "customer": "bob", "amount": 3, "paid": false}',
    '{"order_id": 3}',                                          # missing fields
    '{}',
    '{"order_id": 4, "extra": {"deep": [1, 2]}, "customer": "x"}',  # extra fields skipped
    '{"order_id": null, "customer": null, "amount": null, "paid": null}',
    '{"order_id": "5", "customer": "c"}',                       # a string in a BIGINT: that field null
    '{"order_id": 6.0, "customer": "d"}',                       # a float in a BIGINT
    '{"order_id": 7, "paid": "true"}',                          # a string in a BOOLEAN
    '{"order_id": 8, "paid": 1}',
    '{"order_id": 9, "amount": "12.5"}',                        # a string in a DOUBLE
    '{"order_id": 10, "amount": true}',
    '{"order_id": 11, "order_id": 12}',                         # duplicate keys
    '{"order_id": 13, "order_id": "x"}',                        # duplicate, the second does not convert
    '{"order_id": "x", "order_id": 14}',
    '{"Order_Id": 15, "CUSTOMER": "upper"}',                    # field names are case-sensitive
    '{"order_id": 16, "customer": "ann"} trailing garbage',
    '{"order_id": 17, "customer": "ann"}{"order_id": 18}',
    '  {"order_id": 19}  ',
    '\n\t{"order_id": 20}\r\n',
    '',                                                         # empty value
    '   ',                                                      # whitespace only
    '\n',
    'null',
    'true',
    '42',
    '"a string"',
    '[{"order_id": 21}]',                                       # a top-level array
    '[]',
    '{"order_id": 22,',                                         # truncated
    '{"order_id": 23 "customer": "no comma"}',
    '{order_id: 24}',                                           # unquoted name
    "{'order_id': 25, 'customer': 'single'}",                   # single quotes (allowed by default)
    '{"order_id": 26, "customer": \'mixed\'}',
    '{"order_id": 027}',                                        # leading zero
    '{"order_id": 28 /* comment */}',
    '{"order_id": 29, "amount": NaN}',
    '{"order_id": 30, "amount": -Infinity}',
    '{"order_id": 31, "amount": 1e400}',
    '{"order_id": 32, "customer": "tab\there"}',                # an unescaped control character
    'not json at all',
    '{"order_id": 33, "amount": 1.5, "paid": true, "customer": "last"}',
    '{"order_id": 9223372036854775807}',
    '{"order_id": 9223372036854775808}',
    '{"order_id": -9223372036854775808}',
    '{"order_id": -0}',
    '{"order_id": 1E2}',
    '{"order_id": 34, "customer": ""}',
    '{"order_id": 35, "amount": ""}',
    '{"order_id": 36, "paid": null, "paid": true}',
) + (None,))


STRINGS = CorpusCase("strings", "s STRING, n STRING", _b(
    '{"s": "plain"}',
    '{"s": 1}',
    '{"s": -17}',
    '{"s": 12345678901234567890}',
    '{"s": 1.50}',
    '{"s": 1e3}',
    '{"s": 1E-5}',
    '{"s": 0.001}',
    '{"s": 0.0001}',
    '{"s": 1234567.0}',
    '{"s": 12345678.9}',
    '{"s": 3.141592653589793}',
    '{"s": -0.0}',
    '{"s": 1e20}',
    '{"s": 2.5e-10}',
    '{"s": true}',
    '{"s": false}',
    '{"s": null}',
    '{"s": {"a": 1, "b": [true, null, "x"]}}',
    '{"s": [1, 2.0, "three"]}',
    '{"s": {"nested": {"deeper": {}}}, "n": []}',
    '{"s": { "spaced" : [ 1 , 2 ] }}',
    '{"s": {"quote": "a\\"b", "slash": "a\\/b", "back": "a\\\\b"}}',
    '{"s": {"ctl": "\\u0001\\u001f\\b\\f\\n\\r\\t"}}',
    '{"s": {"uni": "é€😀", "esc": "\\u00e9\\u20ac\\ud83d\\ude00"}}',
    '{"s": "\\u00e9\\u20ac\\ud83d\\ude00"}',
    '{"s": "é€😀 direct"}',
    '{"s": "\\ud800 lone surrogate"}',
    '{"s": "line\\nbreak and \\"quotes\\""}',
    '{"s": "\\/slash"}',
    '{"s": "\\q bad escape"}',
    '{"s": "\\u12 short escape"}',
    '{"s": NaN}',
    '{"s": Infinity}',
    '{"s": {"n": NaN}}',
    '{"s": ""}',
    '{"s": "a", "n": 1, "s": "b"}',
    '{"s": [{"k": 1.0}, {"k": 100}]}',
    '{"s": {"big": 1e300, "small": 1e-300}}',
    '{"s": {"single": \'q\'}}',
) + (b'{"s": "invalid \xff\xfe utf8"}', b'{"s": "cut \xe2\x82"}', b'\xef\xbb\xbf{"s": "bom"}',
     b'{"s": "latin1 \xe9"}', None))


INTEGERS = CorpusCase("integers", "i INT, l BIGINT, t TINYINT, sm SMALLINT", _b(
    '{"i": 2147483647, "l": 9223372036854775807, "t": 127, "sm": 32767}',
    '{"i": -2147483648, "l": -9223372036854775808, "t": -128, "sm": -32768}',
    '{"i": 2147483648}',
    '{"i": -2147483649}',
    '{"l": 9223372036854775808}',
    '{"t": 128}',
    '{"t": 255}',
    '{"t": 256}',
    '{"t": -129}',
    '{"sm": 32768}',
    '{"i": 1.0}',
    '{"i": 1e0}',
    '{"i": "12"}',
    '{"i": true}',
    '{"i": [1]}',
    '{"i": {"v": 1}}',
    '{"i": 0, "l": 0, "t": 0, "sm": 0}',
    '{"i": -0}',
    '{"i": 7, "l": "x", "t": 1, "sm": 2}',
    '{"i": 99999999999999999999999}',
    '{"i": ""}',
))


FLOATS = CorpusCase("floats", "f FLOAT, d DOUBLE", _b(
    '{"f": 1.5, "d": 1.5}',
    '{"f": 0.1, "d": 0.1}',
    '{"f": 3, "d": 3}',
    '{"f": 1e38, "d": 1e308}',
    '{"f": 1e39, "d": 1e309}',
    '{"f": -1e-45, "d": 5e-324}',
    '{"f": 16777217, "d": 9007199254740993}',
    '{"d": "NaN"}',
    '{"d": "Infinity"}',
    '{"d": "+Infinity"}',
    '{"d": "-Infinity"}',
    '{"d": "+INF"}',
    '{"d": "-INF"}',
    '{"d": "INF"}',
    '{"d": "nan"}',
    '{"d": "1.5"}',
    '{"d": ""}',
    '{"f": "NaN", "d": "-INF"}',
    '{"d": NaN}',
    '{"d": Infinity}',
    '{"d": -Infinity}',
    '{"d": +Infinity}',
    '{"d": +INF}',
    '{"d": -INF}',
    '{"d": 1.}',
    '{"d": .5}',
    '{"d": +1}',
    '{"d": 12345678901234567890123}',
    '{"d": true}',
))


DECIMALS = CorpusCase("decimals", "dec DECIMAL(10,2), big DECIMAL(38,0), tiny DECIMAL(3,3)", _b(
    '{"dec": 12.34, "big": 12345678901234567890123456789012345678, "tiny": 0.123}',
    '{"dec": 12.345}',
    '{"dec": 12.355}',
    '{"dec": -12.345}',
    '{"dec": 12.3449}',
    '{"dec": 1}',
    '{"dec": 1e2}',
    '{"dec": 1.5e-1}',
    '{"dec": 99999999.99}',
    '{"dec": 99999999.995}',
    '{"dec": 100000000}',
    '{"dec": "12.34"}',
    '{"dec": "1,234.5"}',
    '{"dec": "1e3"}',
    '{"dec": " 1"}',
    '{"dec": "abc"}',
    '{"dec": ""}',
    '{"dec": true}',
    '{"dec": NaN}',
    '{"big": 123456789012345678901234567890123456789}',
    '{"big": 0.5}',
    '{"big": 1.5}',
    '{"big": -0.5}',
    '{"tiny": 0.9995}',
    '{"tiny": 1}',
    '{"tiny": -0.0004}',
    '{"dec": "+5"}',
    '{"dec": "-.5"}',
))


DATETIMES = CorpusCase("datetimes", "ts TIMESTAMP, d DATE, ntz TIMESTAMP_NTZ", _b(
    '{"ts": "2024-03-01T12:34:56Z", "d": "2024-03-01", "ntz": "2024-03-01T12:34:56"}',
    '{"ts": "2024-03-01T12:34:56.123456Z", "ntz": "2024-03-01 12:34:56.5"}',
    '{"ts": "2024-03-01T12:34:56.1234567Z"}',
    '{"ts": "2024-03-01T12:34:56+02:00"}',
    '{"ts": "2024-03-01T12:34:56-0530"}',
    '{"ts": "2024-03-01T12:34:56+01"}',
    '{"ts": "2024-03-01 12:34:56"}',
    '{"ts": "2024-03-01T12:34:56"}',
    '{"ts": "2024-03-01T12:34"}',
    '{"ts": "2024-03-01T12:34Z"}',
    '{"ts": "2024-03-01"}',
    '{"ts": "2024-03"}',
    '{"ts": "2024"}',
    '{"ts": "2024-3-1T1:2:3Z"}',
    '{"ts": "2024-03-01T12:34:56 UTC"}',
    '{"ts": "2024-03-01T12:34:56GMT+01:00"}',
    '{"ts": "2024-03-01T12:34:56UTC+01:00"}',
    '{"ts": "2024-03-01T12:34:56 Europe/Paris"}',
    '{"ts": "2024-03-01T12:34:56 EST"}',                        # java.time's short ids
    '{"ts": "2024-07-01T12:34:56 PST"}',
    '{"ts": "2024-07-01T12:34:56 CET"}',
    '{"ts": "2024-07-01T12:34:56 Japan"}',
    '{"ts": "2024-07-01T12:34:56 utc"}',
    '{"ts": "2024-07-01T12:34:56 Nowhere/Special"}',
    '{"ts": "2024-07-01T12:34:56+01:30:15"}',
    '{"ts": "2024-07-01T12:34:56 UTC+5"}',
    '{"ts": "2024-03-01T12:34:56.000+00:00"}',
    '{"ts": 1700000000}',
    '{"ts": 1700000000.5}',
    '{"ts": "1700000000"}',
    '{"ts": ""}',
    '{"ts": "not a time"}',
    '{"ts": "2024-02-30T00:00:00Z"}',
    '{"ts": "2024-03-01T25:00:00Z"}',
    '{"ts": "  2024-03-01T12:34:56Z  "}',
    '{"ts": true}',
    '{"d": "2024-03-01T12:34:56Z"}',
    '{"d": "2024-03-01 anything"}',
    '{"d": "2024-3-1"}',
    '{"d": "2024-03"}',
    '{"d": "2024"}',
    '{"d": "12345678901"}',
    '{"d": "123"}',
    '{"d": "-5"}',
    '{"d": "2024-02-29"}',
    '{"d": "2023-02-29"}',
    '{"d": "03/01/2024"}',
    '{"d": 19000}',
    '{"d": ""}',
    '{"d": "+2024-03-01"}',
    '{"ntz": "2024-03-01T12:34:56Z"}',
    '{"ntz": "2024-03-01"}',
    '{"ntz": 1700000000}',
    '{"ntz": "2024-03-01T12:34:56.999999"}',
))


NESTED = CorpusCase(
    "nested",
    "o STRUCT<a: INT, b: ARRAY<STRING>>, arr ARRAY<INT>, m MAP<STRING, INT>, aos ARRAY<STRUCT<x: INT, y: STRING>>, "
    "mm MAP<STRING, STRUCT<v: DOUBLE>>, aa ARRAY<ARRAY<BIGINT>>",
    _b(
        '{"o": {"a": 1, "b": ["x", "y"]}, "arr": [1, 2, 3], "m": {"k": 1, "j": 2}}',
        '{"o": {"a": "bad", "b": ["x"]}}',                           # partial nested struct
        '{"o": {"a": 1, "b": "not an array"}}',
        '{"o": {"a": 1, "b": [1, true, {"z": 1}]}}',                  # non-strings in an array of strings
        '{"o": [1, 2]}',
        '{"o": "str"}',
        '{"o": null, "arr": null, "m": null}',
        '{"arr": [1, "two", 3]}',                                     # a bad element fails the array
        '{"arr": [1, null, 3]}',
        '{"arr": []}',
        '{"arr": {"0": 1}}',
        '{"arr": 5}',
        '{"m": {"a": 1, "b": "x"}}',                                  # a bad value fails the map
        '{"m": {"a": 1, "a": 2}}',                                    # duplicate map keys
        '{"m": {}}',
        '{"m": {"": 0, "é": 1}}',
        '{"m": [1]}',
        '{"aos": [{"x": 1, "y": "a"}, {"x": "bad", "y": "b"}, null]}',  # a partial element kept
        '{"aos": [{"x": 1}, 5]}',
        '{"aos": [[{"x": 1}]]}',
        '{"aos": {"x": 1}}',
        '{"mm": {"k": {"v": 1.5}, "j": {"v": "x"}}}',                  # a partial map value kept
        '{"mm": {"k": {"v": 1.5}, "j": 7}}',
        '{"aa": [[1, 2], [], null, [3]]}',
        '{"aa": [[1, "x"], [2]]}',
        '{"aa": [1, 2]}',
        '{"o": {"a": 2, "a": "late"}, "arr": [9]}',
        '{"o": {"b": ["x"], "extra": {"y": 1}}}',
        '{"o": {}}',
        '{"arr": [1, 2,]}',
        '{"o": {"a": 1}, "o": {"b": ["z"]}}',
        '{"aos": []}',
    ),
)


BINARY_AND_CORRUPT = CorpusCase("binary-corrupt", "b BINARY, note STRING, _corrupt_record STRING", _b(
    '{"b": "aGVsbG8=", "note": "hello"}',
    '{"b": "", "note": "empty"}',
    '{"b": "aGVsbG8", "note": "no padding"}',
    '{"b": "not base64!"}',
    '{"b": 12}',
    '{"note": "fine"}',
    '{"note": 1, "b": "AA=="}',
    '{"note": "x", "b": true}',
    'broken {',
    '[1, 2]',
    '{"_corrupt_record": "given", "note": "y"}',
))


CASE_AND_JSON_FORM = CorpusCase(
    "json-form-schema",
    json.dumps({"type": "struct", "fields": [
        {"name": "Id", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True},
         "nullable": True, "metadata": {}},
    ]}),
    _b(
        '{"Id": 1, "id": 2, "tags": ["a"]}',
        '{"id": 3}',
        '{"ID": 4}',
        '{"Id": 5}',
        '{"iD": 6, "Id": 7}',
        '{"tags": null}',
        '{"id": null}',
    ),
)


FLAGS = CorpusCase(
    "flags",
    "a BIGINT, b STRING, c DOUBLE",
    _b(
        '{"a": 007, "b": "zeros"}',
        '{"a": 1 /* block */, "b": "c" // line\n}',
        '{a: 2, b: "unquoted"}',
        "{'a': 3, 'b': 'single'}",
        '{"a": 4, "c": NaN}',
        '{"a": 5, "b": "\\q"}',
        '{"a": 6, "b": "raw\ttab"}',
        '{"a": 7, "c": "NaN"}',
        '{"a": 8, "c": 0.5}',
    ),
    {"allowNumericLeadingZeros": "true", "allowComments": "true", "allowUnquotedFieldNames": "true",
     "allowSingleQuotes": "false", "allowNonNumericNumbers": "false", "allowBackslashEscapingAnyCharacter": "true",
     "allowUnquotedControlChars": "true"},
)


ZONED = CorpusCase(
    "zoned",
    "ts TIMESTAMP, d DATE",
    _b(
        '{"ts": "2024-07-01T12:00:00"}',
        '{"ts": "2024-01-01 00:00:00"}',
        '{"ts": "2024-03-31T02:30:00"}',          # in Paris's spring gap
        '{"ts": "2024-10-27T02:30:00"}',          # in Paris's autumn overlap
        '{"ts": "2024-07-01T12:00:00Z"}',
        '{"ts": "2024-07-01"}',
        '{"ts": 0, "d": "1970-01-01"}',
    ),
    {"timeZone": "Europe/Paris"},
)


ARRAY_ROOT = CorpusCase("array-root", "ARRAY<STRUCT<a: INT, b: STRING>>", _b(
    '[{"a": 1, "b": "x"}, {"a": 2}]',
    '[]',
    '{"a": 3, "b": "one object"}',                    # an object: an array of that one struct
    '{"a": "bad", "b": "partial object"}',
    '[{"a": 1}, {"a": "bad"}]',                       # a partial element kept
    '[{"a": 1}, 5]',                                  # an element that is no object fails the array
    '[{"a": 1}, null]',
    '5',
    '"text"',
    'null',
    '',
    '[{"a": 1}',
) + (None,))


ARRAY_OF_SCALARS = CorpusCase("array-of-scalars", "ARRAY<INT>", _b(
    '[1, 2, 3]', '[1, "x"]', '[1, null]', '{"a": 1}', '[]', '[[1]]', '1',
))


MAP_ROOT = CorpusCase("map-root", "MAP<STRING, STRUCT<n: BIGINT>>", _b(
    '{"k": {"n": 1}, "j": {"n": 2}}',
    '{"k": {"n": "bad"}}',                           # a partial value kept
    '{"k": 5}',                                      # a value that is no object fails the map
    '{}',
    '[{"k": {"n": 1}}]',
    '{"k": null, "k": {"n": 3}}',
    'null',
    '  ',
    '{"k": {"n": 1}',
))


CASES = (ORDERS, STRINGS, INTEGERS, FLOATS, DECIMALS, DATETIMES, NESTED, BINARY_AND_CORRUPT, CASE_AND_JSON_FORM,
         FLAGS, ZONED, ARRAY_ROOT, ARRAY_OF_SCALARS, MAP_ROOT)
