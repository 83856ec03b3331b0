"""The resolution of a writer's Avro schema into the reader's (Avro's schema resolution rules, as avro/schema.py's
docstring lists them) as a plan the native decoder executes; both decoders take their verdict on whether a
writer schema resolves from `resolve`, so a schema refused is refused with the same reason whichever decodes.

Fields the reader adds take their defaults, written in Avro binary by fastavro once per reader field: the native
decoder reads that as it reads data, and the Python decoder hands over what fastavro reads of it, so both give
the same value. A default's JSON is its type's without the logical type (a date's is its days), bytes and fixed
are latin-1 text, and a union's is for its first branch or, as Avro 1.12 allows, any branch it fits.
"""

from __future__ import annotations

import io
import json
import math
import weakref

from kafkasource.formats.avro.schema import NO_DEFAULT, PRIMITIVES, AvroJson, Field, Node, Unresolvable, union_shape

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
    if writer.name is None or reader.name is None:  # the parser names every record, enum and fixed
        return False
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
        return ("array", _plan(writer.inner, reader.inner, pairs))
    if kind == "map":
        return ("map", _plan(writer.inner, reader.inner, pairs))
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
    index: dict[str, int] = {}
    for i, f in enumerate(reader.fields):
        for name in (f.name, *f.aliases):
            index.setdefault(name, i)
    steps: list[tuple] = []
    seen: set[int] = set()
    for f in writer.fields:
        found = index.get(f.name)
        if found is None or found in seen:
            steps.append(("skip", _skip(f.type, (), f"{writer.name}.{f.name}")))
            continue
        seen.add(found)
        try:
            steps.append(("field", found, _plan(f.type, reader.fields[found].type, pairs)))
        except Unresolvable as e:
            raise Unresolvable(f"field {reader.name}.{reader.fields[found].name}: {e}") from None
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
                    written_default(reader, i),
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
        return (kind, _skip(node.inner, named, where))
    if kind == "union":
        return ("union", [_skip(branch, named, where) for branch in node.branches])
    if node.name in named:
        raise Unresolvable(f"the writer's field {where}, which the reader lacks, has a recursive type")
    return ("record", [_skip(f.type, named + (node.name,), where) for f in node.fields])


# ---- defaults: Avro binary written by fastavro from the default's JSON ----

FLOAT_MAX = 3.4028234663852886e38  # the largest finite float; fastavro writes a larger one as infinity
_WRITTEN: weakref.WeakKeyDictionary[Field, bytes | str] = weakref.WeakKeyDictionary()  # a default, or why not


class _NoFit(ValueError):
    """A default's value does not fit its type; the message says where and how."""


def written_default(record: Node, index: int) -> bytes:
    """The default of the reader's field record.fields[index] in Avro binary, written once per reader field;
    Unresolvable says why there is none to read."""
    spec = record.fields[index]
    found = _WRITTEN.get(spec)
    if found is None:
        try:
            found = _written(spec, f"{record.name}.{spec.name}")
        except Unresolvable as e:
            found = str(e)
        _WRITTEN[spec] = found
    if isinstance(found, str):
        raise Unresolvable(found)
    return found


def _written(spec: Field, where: str) -> bytes:
    import fastavro

    names: dict[object, str] = {}
    schema = fastavro_schema(spec.type, names, exact=False)
    try:
        datum = _datum(spec.type, spec.default, names, where)
    except _NoFit as e:
        raise Unresolvable(
            f"the default of {where}, {json.dumps(spec.default)[:100]}, is not a {spec.type.describe()}: {e}"
        ) from None
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), datum)
    return out.getvalue()


def fastavro_schema(node: Node, names: dict[object, str], exact: bool) -> AvroJson:
    """The JSON fastavro parses for a value of `node`, standing alone: each named type defined at its first use.
    exact: with the schema's names, enum symbols and logical types, as a reader reads values. Otherwise the same
    binary encoding under names of our own, enum symbols S0, S1, ..., no logical types (a default's JSON is the
    underlying type's): fastavro takes that from any schema our parser reads, whatever fastavro thinks of its
    names, symbols and annotations. `names` keeps the named types defined so far (a name, or a Node's id)."""
    kind = node.kind
    if kind in ("array", "map"):
        return {"type": kind, "items" if kind == "array" else "values": fastavro_schema(node.inner, names, exact)}
    if kind == "union":
        return [fastavro_schema(branch, names, exact) for branch in node.branches]
    if kind in PRIMITIVES:
        schema: dict[str, object] = {"type": kind}
    else:
        key = node.name if exact else id(node)
        if key in names:
            return names[key]
        name = names[key] = node.name if exact and node.name else f"kafkasource.N{len(names)}"
        schema = {"type": kind, "name": name}
        if kind == "fixed":
            schema["size"] = node.size
        elif kind == "enum":
            schema["symbols"] = node.symbols if exact else [f"S{i}" for i in range(len(node.symbols))]
        else:
            schema["fields"] = [
                {"name": f.name if exact else f"f{i}", "type": fastavro_schema(f.type, names, exact)}
                for i, f in enumerate(node.fields)
            ]
    if exact and node.logical:
        schema["logicalType"] = node.logical
        if node.logical == "decimal":
            schema.update(precision=node.precision, scale=node.scale)
    return schema if len(schema) > 1 else kind


def _datum(node: Node, value: object, names: dict[object, str], where: str) -> object:
    """A default's JSON `value` as fastavro writes it for fastavro_schema(node, names, exact=False): bytes and
    fixed from their latin-1 text, an enum's symbol as ours, a record's missing fields from their own defaults,
    and a union's value as (branch name, value), fastavro's tuple notation, for the first branch it fits. A
    primitive is checked by fastavro's validation; _NoFit says where a value does not fit."""
    from fastavro.validation import ValidationError, validate

    kind = node.kind
    if kind == "union":
        for branch in node.branches:
            try:
                written = _datum(branch, value, names, where)
            except _NoFit:
                continue
            return (names[id(branch)] if id(branch) in names else branch.kind), written
        raise _NoFit(f"{where} fits no branch of the union")
    if kind == "record":
        if not isinstance(value, dict):
            raise _NoFit(f"{where} is {json.dumps(value)[:40]}, not an object")
        return {
            f"f{i}": _datum(
                f.type, value[f.name] if f.name in value else _field_default(f, where), names, f"{where}.{f.name}"
            )
            for i, f in enumerate(node.fields)
        }
    if kind in ("array", "map"):
        if not isinstance(value, list if kind == "array" else dict):
            raise _NoFit(f"{where} is {json.dumps(value)[:40]}, not an {'array' if kind == 'array' else 'object'}")
        if isinstance(value, list):
            return [_datum(node.inner, item, names, f"{where}[{i}]") for i, item in enumerate(value)]
        return {key: _datum(node.inner, item, names, f"{where}.{key}") for key, item in value.items()}
    if kind == "enum":
        if value not in node.symbols:
            raise _NoFit(f"{where} is {json.dumps(value)[:40]}, not one of its symbols")
        return f"S{node.symbols.index(value)}"
    if kind in ("bytes", "fixed") and isinstance(value, str):
        try:
            value = value.encode("latin-1")
        except UnicodeEncodeError as e:
            raise _NoFit(f"{where}: {e}") from None
    if kind == "fixed":
        if not isinstance(value, bytes):
            raise _NoFit(f"{where} is {json.dumps(value)[:40]}, not latin-1 text")
        if len(value) != node.size:
            raise _NoFit(f"{where} has {len(value)} bytes, not {node.size}")
        return value
    if kind == "float" and isinstance(value, float) and math.isfinite(value) and abs(value) > FLOAT_MAX:
        raise _NoFit(f"{where} is {value}, beyond a float's range")
    try:
        validate(value, kind, field=where, raise_errors=True)
    except ValidationError as e:
        raise _NoFit("; ".join(map(str, e.errors))) from None
    return value


def _field_default(spec: Field, where: str) -> object:
    if spec.default is NO_DEFAULT:
        raise _NoFit(f"{where} has no value for field {spec.name}, which has no default")
    return spec.default
