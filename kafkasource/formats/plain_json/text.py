"""A JSON text read as Spark's Jackson parser reads it (its JsonReadFeature flags set from the json.* options), into
a document the converter walks: objects as Obj (the (name, value) pairs in order, duplicates kept, as Jackson's
token stream gives them), arrays as lists, strings as str, integers as int, other numbers as Flt (the text: a
DECIMAL wants it exact, a STRING wants the number), true/false/null as Python's.

Jackson reads the first JSON value and stops: what follows it is never read (`{"a": 1} trailing` reads as
{"a": 1}). Python's json module reads the strict grammar quickly (its C scanner); only a text it refuses is read
again by the parser here, which knows Jackson's lenient flags (single quotes, Spark's default, and the others) and
whose error is the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


class Obj(list):
    """A JSON object: its (name, value) pairs in the text's order."""


@dataclass(frozen=True)
class Flt:
    """A JSON number with a fraction or an exponent, or NaN / Infinity / -Infinity (allowNonNumericNumbers)."""

    text: str


@dataclass(frozen=True)
class Flags:
    """Jackson's read features, as Spark's JSONOptions sets them (its defaults here)."""

    allow_comments: bool = False
    allow_unquoted_field_names: bool = False
    allow_single_quotes: bool = True
    allow_numeric_leading_zeros: bool = False
    allow_non_numeric_numbers: bool = True
    allow_backslash_escaping_any_character: bool = False
    allow_unquoted_control_chars: bool = False


class Malformed(ValueError):
    """The text is not JSON as the flags read it."""


# Jackson's StreamReadConstraints: a document nested deeper is malformed. Python's own limit on recursion is raised
# past it where documents are parsed (kafkasource.formats.plain_json.decode), so that what Jackson reads is read
MAX_DEPTH = 1000
_WHITESPACE = " \t\n\r"
_NON_NUMERIC = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_LEADING_ZEROS_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_NAME = re.compile(r"[A-Za-z0-9_$]+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_PAIR = re.compile(r"[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _strict_constant(name: str) -> Flt:
    raise ValueError(f"non-numeric number {name} (json.allowNonNumericNumbers is false)")


def _decoder(flags: Flags) -> json.JSONDecoder:
    constant = (lambda name: Flt(_NON_NUMERIC[name])) if flags.allow_non_numeric_numbers else _strict_constant
    return json.JSONDecoder(object_pairs_hook=Obj, parse_float=Flt, parse_constant=constant, strict=True)


_DECODERS: dict[Flags, json.JSONDecoder] = {}


def parse_document(text: str, flags: Flags) -> tuple[bool, object]:
    """(False, None) for a text of only whitespace (Jackson's first token is none: from_json gives null), else
    (True, the first JSON value); Malformed if that value is not JSON."""
    start = len(text) - len(text.lstrip(_WHITESPACE))
    if start == len(text):
        return False, None
    decoder = _DECODERS.get(flags) or _DECODERS.setdefault(flags, _decoder(flags))
    try:
        value, _ = decoder.raw_decode(text, start)
    except (ValueError, RecursionError):
        value = _Lenient(text, flags).document(start)
    # a walk of the whole document, only where it can change something: a surrogate can only come of a \u escape,
    # and a document nested past the limit holds that many brackets
    if _SURROGATE_ESCAPE.search(text) or text.count("[") + text.count("{") >= MAX_DEPTH:
        value = _clean(value)
    return True, value


def _clean(value: object, depth: int = 0) -> object:
    """Strings with lone surrogates (an escaped \\ud800 alone) as Java's UTF-8 encoder writes them: '?'; Malformed
    past Jackson's nesting limit, which Python's scanner does not keep."""
    if isinstance(value, list) and depth >= MAX_DEPTH:  # `depth` containers are open around it
        raise Malformed(f"nesting deeper than {MAX_DEPTH}")
    if isinstance(value, str):
        if _SURROGATE.search(value) is None:
            return value
        paired = _PAIR.sub(lambda m: m.group(0).encode("utf-16-le", "surrogatepass").decode("utf-16-le"), value)
        return _SURROGATE.sub("?", paired)
    if isinstance(value, Obj):
        return Obj((_clean(k), _clean(v, depth + 1)) for k, v in value)
    if isinstance(value, list):
        return [_clean(v, depth + 1) for v in value]
    return value


class _Lenient:
    """A recursive-descent JSON parser with Jackson's lenient flags; Malformed names the position."""

    def __init__(self, text: str, flags: Flags):
        self.text, self.flags, self.depth = text, flags, 0

    def fail(self, at: int, what: str) -> Malformed:
        return Malformed(f"{what} at character {at}")

    def skip(self, at: int) -> int:
        text = self.text
        while at < len(text):
            if text[at] in _WHITESPACE:
                at += 1
            elif self.flags.allow_comments and text.startswith("//", at):
                end = text.find("\n", at)
                at = len(text) if end < 0 else end + 1
            elif self.flags.allow_comments and text.startswith("/*", at):
                end = text.find("*/", at + 2)
                if end < 0:
                    raise self.fail(at, "unclosed comment")
                at = end + 2
            else:
                break
        return at

    def document(self, at: int) -> object:
        value, _ = self.value(self.skip(at))
        return value

    def value(self, at: int) -> tuple[object, int]:
        text = self.text
        if at >= len(text):
            raise self.fail(at, "unexpected end of input")
        char = text[at]
        if char == "{":
            return self.obj(at)
        if char == "[":
            return self.array(at)
        if char == '"' or (char == "'" and self.flags.allow_single_quotes):
            return self.string(at)
        for word, value in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, at):
                return value, at + len(word)
        return self.number(at)

    def number(self, at: int) -> tuple[object, int]:
        text = self.text
        if self.flags.allow_non_numeric_numbers:
            for word, shown in (
                ("NaN", "NaN"),
                ("Infinity", "Infinity"),
                ("+Infinity", "Infinity"),
                ("-Infinity", "-Infinity"),
                ("+INF", "Infinity"),
                ("-INF", "-Infinity"),
            ):
                if text.startswith(word, at):
                    return Flt(shown), at + len(word)
        pattern = _LEADING_ZEROS_NUMBER if self.flags.allow_numeric_leading_zeros else _NUMBER
        match = pattern.match(text, at)
        if match is None:
            raise self.fail(at, f"unexpected character {text[at]!r}")
        end = match.end()
        if end < len(text) and (text[end].isdigit() or text[end] in ".eE"):
            raise self.fail(end, "malformed number")
        found = match.group(0)
        if match.group(1) or match.group(2):
            return Flt(found), end
        return int(found), end

    def string(self, at: int) -> tuple[str, int]:
        text, quote = self.text, self.text[at]
        out: list[str] = []
        at += 1
        while True:
            if at >= len(text):
                raise self.fail(at, "unclosed string")
            char = text[at]
            if char == quote:
                return "".join(out), at + 1
            if char == "\\":
                at += 1
                escaped = text[at : at + 1]
                if escaped == "u":
                    digits = text[at + 1 : at + 5]
                    if len(digits) < 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                        raise self.fail(at, "malformed \\u escape")
                    out.append(chr(int(digits, 16)))
                    at += 5
                    continue
                if escaped in _ESCAPES:
                    out.append(_ESCAPES[escaped])
                elif escaped == "'" and quote == "'" or self.flags.allow_backslash_escaping_any_character:
                    out.append(escaped)
                else:
                    raise self.fail(at, f"unrecognized escape {escaped!r}")
                at += 1
                continue
            if char < " " and not self.flags.allow_unquoted_control_chars:
                raise self.fail(at, "unescaped control character in a string")
            out.append(char)
            at += 1

    def name(self, at: int) -> tuple[str, int]:
        text = self.text
        if at < len(text) and (text[at] == '"' or (text[at] == "'" and self.flags.allow_single_quotes)):
            return self.string(at)
        if self.flags.allow_unquoted_field_names:
            match = _NAME.match(text, at)
            if match is not None:
                return match.group(0), match.end()
        raise self.fail(at, "expected a field name in double quotes")

    def nested(self, at: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(at, f"nesting deeper than {MAX_DEPTH}")

    def obj(self, at: int) -> tuple[Obj, int]:
        self.nested(at)
        pairs = Obj()
        at = self.skip(at + 1)
        if self.text[at : at + 1] == "}":
            self.depth -= 1
            return pairs, at + 1
        while True:
            name, at = self.name(self.skip(at))
            at = self.skip(at)
            if self.text[at : at + 1] != ":":
                raise self.fail(at, "expected ':' after a field name")
            value, at = self.value(self.skip(at + 1))
            pairs.append((name, value))
            at = self.skip(at)
            closing = self.text[at : at + 1]
            if closing == "}":
                self.depth -= 1
                return pairs, at + 1
            if closing != ",":
                raise self.fail(at, "expected ',' or '}' in an object")
            at += 1

    def array(self, at: int) -> tuple[list, int]:
        self.nested(at)
        items: list = []
        at = self.skip(at + 1)
        if self.text[at : at + 1] == "]":
            self.depth -= 1
            return items, at + 1
        while True:
            value, at = self.value(self.skip(at))
            items.append(value)
            at = self.skip(at)
            closing = self.text[at : at + 1]
            if closing == "]":
                self.depth -= 1
                return items, at + 1
            if closing != ",":
                raise self.fail(at, "expected ',' or ']' in an array")
            at += 1
