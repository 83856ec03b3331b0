"""The resolution of a writer's Avro schema into the reader's (Avro's schema resolution rules, as avro_schema.py's
docstring lists them) as a plan the native decoder executes; both decoders take their verdict on whether a
writer schema resolves from `resolve`, so a schema refused is refused with the same reason whichever decodes.
Fields the reader adds take their defaults, encoded here once in Avro binary."""

from __future__ import annotations

import json
import struct

from kafkasource.formats.avro_schema import NO_DEFAULT, Field, Node, Unresolvable, union_shape

# ---- resolution: a plan for the native decoder ----
# A plan is nested tuples, read by native/src/avro.rs. Each step reads the writer's encoding of one value and
# appends it to the column of the reader's Arrow type:
#   ("null",)  ("bool",)  ("int", to)  ("long", to, factor)  ("float", to)  ("double",)   to: i32 i64 f32 f64
#   ("bytes", utf8)  ("fixed", size)  ("decimal", size or -1 for bytes, precision, scale)
#   ("enum", [(symbol or None, error or None), ...])
#   ("record", [("field", index, plan) | ("skip", skip) | ("default", index, encoded default, plan)])
#   ("array", plan)  ("map", plan)  ("union", [plan per writer branch])  ("member", index, plan)  ("error", why)
# A skip reads past a value the reader does not want: ("fixed", n) for n bytes (null, boolean, float, double,
# fixed), ("varint",), ("bytes",), ("array", skip), ("map", skip), ("record", [skip, ...]), ("union", [skip, ...]).

NUMERIC = {
    "int": ("i32", "i64", "f32", "f64"),
    "long": (None, "i64", "f32", "f64"),
    "float": (None, None, "f32", "f64"),
    "double": (None, None, None, "f64"),
}
NUMERIC_ORDER = ("int", "long", "float", "double")


def resolve(writer: Node, reader: Node) -> tuple:
    """The plan reading values written with `writer` as `reader`'s Arrow type; Unresolvable says why not."""
    return _plan(writer, reader, ())


def _plan(writer: Node, reader: Node, pairs: tuple) -> tuple:
    if writer.kind == "union":
        plans, reasons = [], []
        for branch in writer.branches:
            try:
                plans.append(_plan(branch, reader, pairs))
            except Unresolvable as e:
                plans.append(("error", str(e)))
                reasons.append(str(e))
        if len(reasons) == len(plans):
            raise Unresolvable(reasons[0])
        return ("union", plans)
    if reader.kind == "union":
        return _into_union(writer, reader, pairs)
    return _plan_same_shape(writer, reader, pairs)


def _into_union(writer: Node, reader: Node, pairs: tuple) -> tuple:
    """A non-union writer into a reader union: the first branch matching exactly, else the first it promotes to."""
    branch = next((b for b in reader.branches if _matches(writer, b, exact=True)), None) or next(
        (b for b in reader.branches if _matches(writer, b, exact=False)), None
    )
    if branch is None:
        raise Unresolvable(
            f"the writer's {writer.describe()} matches no branch of the reader's union "
            f"[{', '.join(b.describe() for b in reader.branches)}]"
        )
    if branch.kind == "null":
        return ("null",)
    shape = union_shape(reader)
    if isinstance(shape, Node):
        return _plan(writer, shape, pairs)  # the union reads as its one type (int/long, float/double: the wider)
    return ("member", shape.index(branch), _plan(writer, branch, pairs))


def _matches(writer: Node, reader: Node, exact: bool) -> bool:
    if writer.kind in ("record", "enum", "fixed"):
        return writer.kind == reader.kind and _same_name(writer, reader)
    if writer.kind == reader.kind:
        return True
    if exact:
        return False
    if writer.kind in NUMERIC and reader.kind in NUMERIC:
        return NUMERIC[writer.kind][NUMERIC_ORDER.index(reader.kind)] is not None
    return {writer.kind, reader.kind} == {"string", "bytes"}


def _same_name(writer: Node, reader: Node) -> bool:
    short = writer.name.rpartition(".")[2]
    return (
        short == reader.name.rpartition(".")[2]
        or writer.name in reader.aliases
        or short in (alias.rpartition(".")[2] for alias in reader.aliases)
    )


def _logical_kind(node: Node) -> str | None:
    return None if node.logical in (None, "uuid") else node.logical  # a uuid is a string


def _plan_same_shape(writer: Node, reader: Node, pairs: tuple) -> tuple:
    cannot = Unresolvable(f"the writer's {writer.describe()} cannot be read as the reader's {reader.describe()}")
    if _logical_kind(writer) != _logical_kind(reader):
        raise cannot
    kind = writer.kind
    if kind in NUMERIC and reader.kind in NUMERIC:
        to = NUMERIC[kind][NUMERIC_ORDER.index(reader.kind)]
        if to is None:
            raise cannot
        if kind == "long":
            return ("long", to, 1000 if reader.logical in ("timestamp-millis", "local-timestamp-millis") else 1)
        return ("double",) if kind == "double" else (kind, to)
    if reader.logical == "decimal":
        return _decimal(writer, reader, cannot)
    if kind in ("string", "bytes") and reader.kind in ("string", "bytes"):
        return ("bytes", reader.kind == "string")
    if kind != reader.kind:
        raise cannot
    if kind in ("null", "boolean"):
        return ("null",) if kind == "null" else ("bool",)
    if kind in ("record", "enum", "fixed") and not _same_name(writer, reader):
        raise Unresolvable(f"the writer's {writer.describe()} and the reader's {reader.describe()} differ in name")
    if kind == "fixed":
        if writer.size != reader.size:
            raise Unresolvable(f"the writer's {writer.describe()} has {writer.size} bytes, the reader's {reader.size}")
        return ("fixed", writer.size)
    if kind == "enum":
        return ("enum", [_symbol(s, writer, reader) for s in writer.symbols])
    if kind == "array":
        return ("array", _plan(writer.items, reader.items, pairs))
    if kind == "map":
        return ("map", _plan(writer.items, reader.items, pairs))
    return _record(writer, reader, pairs)


def _decimal(writer: Node, reader: Node, cannot: Unresolvable) -> tuple:
    if writer.kind != reader.kind or (writer.kind == "fixed" and not _same_name(writer, reader)):
        raise cannot
    if writer.scale != reader.scale or writer.precision > reader.precision:
        raise Unresolvable(
            f"the writer's decimal({writer.precision}, {writer.scale}) does not fit the reader's "
            f"decimal({reader.precision}, {reader.scale})"
        )
    if writer.kind == "fixed" and writer.size != reader.size:
        raise Unresolvable(f"the writer's {writer.describe()} has {writer.size} bytes, the reader's {reader.size}")
    return ("decimal", writer.size if writer.kind == "fixed" else -1, reader.precision, reader.scale)


def _symbol(symbol: str, writer: Node, reader: Node) -> tuple:
    if symbol in reader.symbols:
        return (symbol, None)
    if reader.enum_default in reader.symbols:
        return (reader.enum_default, None)
    return (None, f"symbol {symbol} of the writer's enum {writer.name} is not in the reader's, which has no default")


def _record(writer: Node, reader: Node, pairs: tuple) -> tuple:
    pair = (writer.name, reader.name)
    if pair in pairs:
        raise Unresolvable(f"record {reader.name} refers to itself")
    pairs += (pair,)
    index = {}
    for i, f in enumerate(reader.fields):
        for name in (f.name, *f.aliases):
            index.setdefault(name, i)
    steps, seen = [], set()
    for f in writer.fields:
        i = index.get(f.name)
        if i is None or i in seen:
            steps.append(("skip", _skip(f.type, (), f"{writer.name}.{f.name}")))
            continue
        seen.add(i)
        try:
            steps.append(("field", i, _plan(f.type, reader.fields[i].type, pairs)))
        except Unresolvable as e:
            raise Unresolvable(f"field {reader.name}.{reader.fields[i].name}: {e}") from None
    for i, f in enumerate(reader.fields):
        if i not in seen:
            if f.default is NO_DEFAULT:
                raise Unresolvable(
                    f"the reader's field {reader.name}.{f.name} has no default and the writer's "
                    f"{writer.name} has no such field"
                )
            steps.append(
                (
                    "default",
                    i,
                    encode_default(f.type, f.default, f"{reader.name}.{f.name}"),
                    _plan(f.type, f.type, pairs),
                )
            )
    return ("record", steps)


def _skip(node: Node, named: tuple, where: str) -> tuple:
    kind = node.kind
    if kind in ("null", "boolean", "float", "double", "fixed"):
        return ("fixed", {"null": 0, "boolean": 1, "float": 4, "double": 8}.get(kind, node.size))
    if kind in ("int", "long", "enum"):
        return ("varint",)
    if kind in ("bytes", "string"):
        return ("bytes",)
    if kind in ("array", "map"):
        return (kind, _skip(node.items, named, where))
    if kind == "union":
        return ("union", [_skip(branch, named, where) for branch in node.branches])
    if node.name in named:
        raise Unresolvable(f"the writer's field {where}, which the reader lacks, has a recursive type")
    return ("record", [_skip(f.type, named + (node.name,), where) for f in node.fields])


# ---- defaults, encoded once in Avro binary so the decoder reads them as it reads data ----


def encode_default(node: Node, value, where: str) -> bytes:
    out = bytearray()
    try:
        _encode(node, value, out)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, struct.error) as e:
        raise Unresolvable(
            f"the default of {where}, {json.dumps(value)[:100]}, is not a {node.describe()}: {e}"
        ) from None
    return bytes(out)


def _varint(value: int, out: bytearray) -> None:
    value = (value << 1) ^ (value >> 63)
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _encode(node: Node, value, out: bytearray) -> None:
    kind = node.kind
    if kind == "null":
        if value is not None:
            raise ValueError("not null")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise TypeError("not a boolean")
        out.append(int(value))
    elif kind in ("int", "long"):
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not -(2**63) <= value < 2**63
            or (kind == "int" and not -(2**31) <= value < 2**31)
        ):
            raise TypeError(f"not an {kind}")
        _varint(value, out)
    elif kind in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("not a number")
        out += struct.pack("<f" if kind == "float" else "<d", value)
    elif kind in ("bytes", "string"):
        data = value.encode("latin-1" if kind == "bytes" else "utf-8")
        _varint(len(data), out)
        out += data
    elif kind == "fixed":
        data = value.encode("latin-1")
        if len(data) != node.size:
            raise ValueError(f"{len(data)} bytes, not {node.size}")
        out += data
    elif kind == "enum":
        out += _encoded_int(node.symbols.index(value))
    elif kind in ("array", "map"):
        entries = list(value.items()) if kind == "map" else list(value)
        if entries:
            _varint(len(entries), out)
            for entry in entries:
                if kind == "map":
                    _encode(Node("string"), entry[0], out)
                    entry = entry[1]
                _encode(node.items, entry, out)
        out.append(0)
    elif kind == "union":
        # the first branch the value fits (the specification's first branch, or a later one as Avro 1.12 allows)
        for i, branch in enumerate(node.branches):
            attempt = bytearray()
            try:
                _encode(branch, value, attempt)
            except (TypeError, ValueError, KeyError, AttributeError, OverflowError, struct.error):
                continue
            _varint(i, out)
            out += attempt
            return
        raise ValueError("fits no branch of the union")
    else:
        for f in node.fields:
            _encode(f.type, value[f.name] if f.name in value else _field_default(f), out)


def _encoded_int(value: int) -> bytes:
    out = bytearray()
    _varint(value, out)
    return bytes(out)


def _field_default(f: Field):
    if f.default is NO_DEFAULT:
        raise KeyError(f"no value for field {f.name}")
    return f.default
