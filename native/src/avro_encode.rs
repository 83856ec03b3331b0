//! The sink's Avro encoding: a column (a struct, or the schema's type) handed over through the Arrow C Data
//! Interface, written as schema-registry framed Avro records into an Arrow binary column, with no Python object
//! per row.
//!
//! As for decoding (avro.rs), schemas are parsed in Python (kafkasource/formats/avro/schema.py), which hands over
//! a plan per writer schema, built once per process (kafkasource/formats/avro/native_encode.py). Each call binds the
//! plan to the column's Arrow type; a pairing this encoder does not cover (a union of several types, a field the
//! column lacks that has a default, an Arrow type it does not read) raises NotImplementedError and Python encodes
//! the column itself, so a column is never encoded wrongly. The bytes are fastavro's (the Python encoder's) for
//! the same rows, and a row that does not fit the schema is a null payload beside the reason formats/shapes.py words
//! for it; where that wording needs Python's repr of a non-ASCII string, the reason is left to Python (None).

use std::collections::{HashMap, HashSet};

use pyo3::exceptions::{PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::arrow_buffers::{set_bit, BinaryBuffers, BinaryColumn};
use crate::arrow_ffi::{ArrowArray, ArrowSchema, Binary, Node, Offsets, Owned};

type Bind<T> = Result<T, String>; // Err: why this pairing is not covered (Python encodes the column)

/// An integer array of 1, 2, 4 or 8 bytes a value.
#[derive(Clone, Copy)]
struct Ints<'a> {
    raw: &'a [u8],
    width: usize,
}

impl Ints<'_> {
    fn get(&self, p: usize) -> i64 {
        let b = &self.raw[p * self.width..(p + 1) * self.width];
        match self.width {
            1 => i64::from(b[0] as i8),
            2 => i64::from(i16::from_le_bytes(b.try_into().unwrap())),
            4 => i64::from(i32::from_le_bytes(b.try_into().unwrap())),
            _ => i64::from_le_bytes(b.try_into().unwrap()),
        }
    }
}

fn ints<'a>(node: &Node<'a>, widest: usize) -> Bind<Ints<'a>> {
    let width = match node.format() {
        "c" => 1,
        "s" => 2,
        "i" => 4,
        "l" => 8,
        other => return Err(format!("Arrow type {other} where an integer is wanted")),
    };
    if width > widest {
        return Err(format!("Arrow type {} into an Avro int", node.format()));
    }
    Ok(Ints { raw: node.buffer(1, node.extent() * width)?, width })
}

// ---- the plan Python hands over: the writer schema's types, as native_encode.plan describes them ----

enum Plan {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Str,
    Bytes,
    Fixed(usize),
    Enum { symbols: Vec<String>, index: HashMap<Vec<u8>, i64> },
    Decimal { size: Option<usize>, precision: u32, scale: u32 },
    Date,
    Timestamp { millis: bool, utc: bool },
    Record(Vec<FieldPlan>),
    Array(Box<Plan>),
    Map(Box<Plan>),
    Union { null: Option<i64>, value: i64, plan: Box<Plan> },
    Unsupported(String),
}

struct FieldPlan {
    name: String,
    plan: Plan,
    missing_null: bool, // a column that lacks the field writes a null (fastavro's default for it)
}

impl Plan {
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Plan> {
        let t = obj.downcast::<PyTuple>()?;
        let tag: String = t.get_item(0)?.extract()?;
        let item = |i: usize| t.get_item(i);
        Ok(match tag.as_str() {
            "boolean" => Plan::Boolean,
            "int" => Plan::Int,
            "long" => Plan::Long,
            "float" => Plan::Float,
            "double" => Plan::Double,
            "string" => Plan::Str,
            "bytes" => Plan::Bytes,
            "fixed" => Plan::Fixed(item(1)?.extract()?),
            "enum" => {
                let symbols: Vec<String> = item(1)?.extract()?;
                let index = symbols.iter().enumerate().map(|(i, s)| (s.as_bytes().to_vec(), i as i64)).collect();
                Plan::Enum { symbols, index }
            }
            "decimal" => {
                let size: i64 = item(1)?.extract()?;
                let precision: u32 = item(2)?.extract()?;
                if precision > 38 {
                    return Ok(Plan::Unsupported(format!("decimal precision {precision}")));
                }
                Plan::Decimal { size: usize::try_from(size).ok(), precision, scale: item(3)?.extract()? }
            }
            "date" => Plan::Date,
            "timestamp" => Plan::Timestamp { millis: item(1)?.extract()?, utc: item(2)?.extract()? },
            "record" => Plan::Record(
                item(1)?
                    .try_iter()?
                    .map(|f| {
                        let f = f?;
                        let f = f.downcast::<PyTuple>()?;
                        Ok(FieldPlan {
                            name: f.get_item(0)?.extract()?,
                            plan: Plan::from_py(&f.get_item(1)?)?,
                            missing_null: f.get_item(2)?.extract()?,
                        })
                    })
                    .collect::<PyResult<_>>()?,
            ),
            "array" => Plan::Array(Box::new(Plan::from_py(&item(1)?)?)),
            "map" => Plan::Map(Box::new(Plan::from_py(&item(1)?)?)),
            "union" => Plan::Union {
                null: item(1)?.extract()?,
                value: item(2)?.extract()?,
                plan: Box::new(Plan::from_py(&item(3)?)?),
            },
            "unsupported" => Plan::Unsupported(item(1)?.extract()?),
            other => return Err(PyValueError::new_err(format!("unknown encoding plan step {other:?}"))),
        })
    }
}

// ---- the plan bound to the column's arrays ----

/// One place of the schema over one Arrow array: physical row = `shift` + the row asked for.
struct Slot<'a> {
    validity: Option<&'a [u8]>,
    shift: usize,
    null: Option<i64>,  // the union index of null, where the schema takes one
    value: Option<i64>, // the union index of the value, where the place is a union
    enc: Enc<'a>,
}

enum Enc<'a> {
    Bool(&'a [u8]),
    Int(Ints<'a>),
    F32(&'a [u8]),
    F32AsF64(&'a [u8]),
    F64(&'a [u8]),
    Bytes(Binary<'a>),
    Fixed(Binary<'a>, usize),
    Enum(Binary<'a>, &'a [String], &'a HashMap<Vec<u8>, i64>),
    Decimal { from: Decimals<'a>, precision: u32, scale: u32, size: Option<usize> },
    Timestamp { raw: &'a [u8], multiply: i64, divide: i64 },
    Date(&'a [u8]),
    Record(Vec<FieldSlot<'a>>),
    Array(Offsets<'a>, Box<Slot<'a>>),
    Map(Offsets<'a>, Binary<'a>, usize, Box<Slot<'a>>), // keys, their shift, values
}

enum Decimals<'a> {
    D128(&'a [u8], u32), // unscaled little-endian i128, and the column's scale
    Int(Ints<'a>),
}

struct FieldSlot<'a> {
    name: &'a str,
    slot: Option<Slot<'a>>, // None: the column lacks the field, whose null is written
    null: Option<i64>,
}

fn bind<'a>(plan: &'a Plan, node: Node<'a>, shift: usize) -> Bind<Slot<'a>> {
    let (null, value, plan) = match plan {
        Plan::Union { null, value, plan } => (*null, Some(*value), plan.as_ref()),
        plan => (None, None, plan),
    };
    let format = node.format();
    let fixed = |width: usize| node.buffer(1, node.extent() * width);
    let enc = match (plan, format) {
        (Plan::Boolean, "b") => Enc::Bool(node.buffer(1, node.extent().div_ceil(8))?),
        (Plan::Int, _) => Enc::Int(ints(&node, 4)?),
        (Plan::Long, _) => Enc::Int(ints(&node, 8)?),
        (Plan::Float, "f") => Enc::F32(fixed(4)?),
        (Plan::Double, "f") => Enc::F32AsF64(fixed(4)?),
        (Plan::Double, "g") => Enc::F64(fixed(8)?),
        (Plan::Str, "u" | "U") | (Plan::Bytes, "z" | "Z") => Enc::Bytes(node.binary()?),
        (Plan::Fixed(size), "z" | "Z") => Enc::Fixed(node.binary()?, *size),
        (Plan::Fixed(size), f) if f.starts_with("w:") => Enc::Fixed(node.binary()?, *size),
        (Plan::Enum { symbols, index }, "u" | "U") => Enc::Enum(node.binary()?, symbols, index),
        (Plan::Decimal { size, precision, scale }, f) => {
            let from = if let Some(spec) = f.strip_prefix("d:") {
                let parts: Vec<&str> = spec.split(',').collect();
                let column_scale = match parts.as_slice() {
                    [_, s] | [_, s, "128"] => s.parse::<u32>().map_err(|_| format!("Arrow type {f}"))?,
                    _ => return Err(format!("Arrow type {f}")),
                };
                Decimals::D128(fixed(16)?, column_scale)
            } else {
                Decimals::Int(ints(&node, 8)?)
            };
            Enc::Decimal { from, precision: *precision, scale: *scale, size: *size }
        }
        (Plan::Date, "tdD") => Enc::Date(fixed(4)?),
        (Plan::Timestamp { millis, utc }, f) if f.starts_with("ts") && f.len() >= 4 => {
            // tz-aware for timestamp-*, naive for local-timestamp-* (the pairs the driver lets through)
            if &f[3..4] != ":" || f[4..].is_empty() == *utc {
                return Err(format!("Arrow type {f} for an Avro {}timestamp", if *utc { "" } else { "local-" }));
            }
            let per_second: i64 = match &f[2..3] {
                "s" => 1,
                "m" => 1_000,
                "u" => 1_000_000,
                _ => return Err(format!("Arrow type {f}")),
            };
            let wanted = if *millis { 1_000 } else { 1_000_000 };
            let (multiply, divide) =
                if per_second <= wanted { (wanted / per_second, 1) } else { (1, per_second / wanted) };
            Enc::Timestamp { raw: fixed(8)?, multiply, divide }
        }
        (Plan::Record(fields), "+s") => {
            let children = node.children()?;
            let mut by_name = HashMap::new();
            for (i, child) in children.iter().enumerate() {
                if by_name.insert(child.name(), i).is_some() {
                    return Err(format!("a struct with two fields named {}", child.name()));
                }
            }
            let mut slots = Vec::with_capacity(fields.len());
            for field in fields {
                let field_null = match &field.plan {
                    Plan::Union { null, .. } => *null,
                    _ => None,
                };
                let slot = match by_name.get(field.name.as_str()) {
                    Some(&i) => {
                        let child = children[i];
                        Some(bind(&field.plan, child, child.offset() + shift)?) // a child's row: its offset + the struct's
                    }
                    None if field.missing_null && field_null.is_some() => None,
                    None => return Err(format!("the column lacks field {}, which has a default", field.name)),
                };
                slots.push(FieldSlot { name: &field.name, slot, null: field_null });
            }
            Enc::Record(slots)
        }
        (Plan::Array(items), "+l" | "+L") => {
            let [child] = node.children()?[..] else { return Err("a list without one child".into()) };
            Enc::Array(node.offsets(format == "+L")?, Box::new(bind(items, child, child.offset())?))
        }
        (Plan::Map(values), "+m") => {
            let [entries] = node.children()?[..] else { return Err("a map without one child".into()) };
            let [keys, items] = entries.children()?[..] else { return Err("map entries without two fields".into()) };
            if !matches!(keys.format(), "u" | "U") {
                return Err(format!("a map with keys of Arrow type {}", keys.format()));
            }
            Enc::Map(
                node.offsets(false)?,
                keys.binary()?,
                keys.offset() + entries.offset(),
                Box::new(bind(values, items, items.offset() + entries.offset())?),
            )
        }
        (Plan::Unsupported(why), _) => return Err(why.clone()),
        (_, f) => return Err(format!("Arrow type {f} for this place of the schema ({})", describe(plan))),
    };
    Ok(Slot { validity: node.validity()?, shift, null, value, enc })
}

fn describe(plan: &Plan) -> &'static str {
    match plan {
        Plan::Boolean => "boolean",
        Plan::Int => "int",
        Plan::Long => "long",
        Plan::Float => "float",
        Plan::Double => "double",
        Plan::Str => "string",
        Plan::Bytes => "bytes",
        Plan::Fixed(_) => "fixed",
        Plan::Enum { .. } => "enum",
        Plan::Decimal { .. } => "decimal",
        Plan::Date => "date",
        Plan::Timestamp { .. } => "timestamp",
        Plan::Record(_) => "record",
        Plan::Array(_) => "array",
        Plan::Map(_) => "map",
        Plan::Union { .. } => "union",
        Plan::Unsupported(_) => "unsupported",
    }
}

// ---- writing rows ----

/// Where a row's value sits, from the column down (kept leaf first while unwinding).
enum Seg<'a> {
    Field(&'a str),
    Index(usize),
    Key(Option<String>), // Python's repr of the key; None where it is not ASCII
}

enum Fail<'a> {
    Row(Vec<Seg<'a>>, Option<String>), // the path and the reason, as formats/shapes.py words them
    Unsupported(String),
}

impl<'a> Fail<'a> {
    fn within(mut self, seg: Seg<'a>) -> Self {
        if let Fail::Row(path, _) = &mut self {
            path.push(seg);
        }
        self
    }
}

type Written<'a> = Result<(), Fail<'a>>;

fn row_fail<'a>(seg: Option<Seg<'a>>, reason: Option<String>) -> Fail<'a> {
    Fail::Row(seg.into_iter().collect(), reason)
}

/// Avro's long: zig-zag, then a varint.
fn write_long(out: &mut Vec<u8>, value: i64) {
    let mut n = ((value << 1) ^ (value >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn write_bytes(out: &mut Vec<u8>, value: &[u8]) {
    write_long(out, value.len() as i64);
    out.extend_from_slice(value);
}

fn bit(bits: &[u8], p: usize) -> bool {
    bits[p / 8] & (1 << (p % 8)) != 0
}

impl<'a> Slot<'a> {
    fn valid(&self, i: usize) -> bool {
        self.validity.is_none_or(|v| bit(v, self.shift + i))
    }

    /// Row `i` where the schema's place is: a null (its union index, or `why` at `seg` where it takes none), or
    /// the value after its union index.
    fn write_or_null(&'a self, i: usize, out: &mut Vec<u8>, seg: impl Fn() -> Seg<'a>, why: &str) -> Written<'a> {
        if !self.valid(i) {
            return match self.null {
                Some(index) => {
                    write_long(out, index);
                    Ok(())
                }
                None => Err(row_fail(Some(seg()), Some(why.to_string()))),
            };
        }
        self.write(i, out).map_err(|fail| fail.within(seg()))
    }

    /// A non-null row `i`, after its union index.
    fn write(&'a self, i: usize, out: &mut Vec<u8>) -> Written<'a> {
        if let Some(index) = self.value {
            write_long(out, index);
        }
        let p = self.shift + i;
        match &self.enc {
            Enc::Bool(bits) => out.push(u8::from(bit(bits, p))),
            Enc::Int(ints) => write_long(out, ints.get(p)),
            Enc::F32(raw) => out.extend_from_slice(&raw[p * 4..p * 4 + 4]),
            Enc::F32AsF64(raw) => {
                let value = f32::from_le_bytes(raw[p * 4..p * 4 + 4].try_into().unwrap());
                out.extend_from_slice(&f64::from(value).to_le_bytes());
            }
            Enc::F64(raw) => out.extend_from_slice(&raw[p * 8..p * 8 + 8]),
            Enc::Bytes(values) => write_bytes(out, values.get(p)),
            Enc::Fixed(values, size) => {
                let value = values.get(p);
                if value.len() != *size {
                    return Err(row_fail(None, Some(format!("{} bytes for a fixed of {size}", value.len()))));
                }
                out.extend_from_slice(value);
            }
            Enc::Enum(values, symbols, index) => {
                let value = values.get(p);
                match index.get(value) {
                    Some(&at) => write_long(out, at),
                    None => {
                        let names = symbols.iter().take(8).map(String::as_str).collect::<Vec<_>>().join(", ");
                        let reason = py_repr(value).map(|v| format!("{v} is not one of the enum's names ({names})"));
                        return Err(row_fail(None, reason));
                    }
                }
            }
            Enc::Decimal { from, precision, scale, size } => {
                let (unscaled, column_scale) = match from {
                    Decimals::D128(raw, s) => (i128::from_le_bytes(raw[p * 16..p * 16 + 16].try_into().unwrap()), *s),
                    Decimals::Int(ints) => (i128::from(ints.get(p)), 0),
                };
                let Some(value) = rescale(unscaled, column_scale, *scale, *precision) else {
                    let shown = py_decimal(unscaled, column_scale);
                    return Err(row_fail(None, Some(format!("{shown} does not fit decimal({precision},{scale})"))));
                };
                let be = value.to_be_bytes();
                let fill = if value < 0 { 0xFF } else { 0 };
                match size {
                    None => {
                        // fastavro's length: (bit length of |value| + 8) / 8 bytes, in two's complement
                        let bits = 128 - value.unsigned_abs().leading_zeros() as usize;
                        write_bytes(out, &be[16 - (bits + 8) / 8..]);
                    }
                    Some(size) if *size >= 16 => {
                        out.resize(out.len() + size - 16, fill);
                        out.extend_from_slice(&be);
                    }
                    Some(size) => out.extend_from_slice(&be[16 - size..]),
                }
            }
            Enc::Timestamp { raw, multiply, divide } => {
                let value = i64::from_le_bytes(raw[p * 8..p * 8 + 8].try_into().unwrap());
                let Some(scaled) = value.checked_mul(*multiply) else {
                    return Err(Fail::Unsupported(format!("timestamp {value} out of range")));
                };
                write_long(out, scaled.div_euclid(*divide)); // fastavro floors to milliseconds
            }
            Enc::Date(raw) => write_long(out, i64::from(i32::from_le_bytes(raw[p * 4..p * 4 + 4].try_into().unwrap()))),
            Enc::Record(fields) => {
                for field in fields {
                    match &field.slot {
                        Some(slot) => {
                            slot.write_or_null(i, out, || Seg::Field(field.name), "null for a non-nullable field")?
                        }
                        None => write_long(out, field.null.unwrap_or(0)),
                    }
                }
            }
            Enc::Array(offsets, items) => {
                let (start, end) = (offsets.at(p), offsets.at(p + 1));
                if end > start {
                    write_long(out, (end - start) as i64);
                    for j in start..end {
                        items.write_or_null(j, out, || Seg::Index(j - start), "null where the schema takes none")?;
                    }
                }
                write_long(out, 0);
            }
            Enc::Map(offsets, keys, key_shift, values) => {
                let (start, end) = (offsets.at(p), offsets.at(p + 1));
                if end > start {
                    if has_duplicates((start..end).map(|j| keys.get(key_shift + j))) {
                        // fastavro writes a dict: the last value of a key, at its first place
                        return Err(Fail::Unsupported("a map with a duplicate key".into()));
                    }
                    write_long(out, (end - start) as i64);
                    for j in start..end {
                        let key = keys.get(key_shift + j);
                        write_bytes(out, key);
                        values.write_or_null(j, out, || Seg::Key(py_repr(key)), "null where the schema takes none")?;
                    }
                }
                write_long(out, 0);
            }
        }
        Ok(())
    }
}

fn has_duplicates<'a>(keys: impl ExactSizeIterator<Item = &'a [u8]>) -> bool {
    if keys.len() <= 8 {
        let keys: Vec<&[u8]> = keys.collect();
        return keys.iter().enumerate().any(|(i, key)| keys[..i].contains(key));
    }
    let mut seen = HashSet::with_capacity(keys.len());
    keys.into_iter().any(|key| !seen.insert(key))
}

/// `unscaled` at `from` digits after the point, as the unscaled value at `to` digits, if it fits decimal(precision,
/// to) exactly (formats/shapes.py quantizes, then counts the digits before the point).
fn rescale(unscaled: i128, from: u32, to: u32, precision: u32) -> Option<i128> {
    let value = if to >= from {
        unscaled.checked_mul(10i128.checked_pow(to - from)?)?
    } else {
        let divisor = 10i128.checked_pow(from - to)?;
        if unscaled % divisor != 0 {
            return None;
        }
        unscaled / divisor
    };
    (value == 0 || value.unsigned_abs() < 10u128.pow(precision)).then_some(value)
}

/// Python's str() of the Decimal with this unscaled value and scale (as pyarrow gives it).
fn py_decimal(unscaled: i128, scale: u32) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let exponent = -i64::from(scale);
    let left = exponent + digits.len() as i64;
    let dot = if left > -6 { left } else { 1 };
    let (int, frac) = if dot <= 0 {
        ("0".to_string(), format!(".{}{digits}", "0".repeat((-dot) as usize)))
    } else if dot as usize >= digits.len() {
        (format!("{digits}{}", "0".repeat(dot as usize - digits.len())), String::new())
    } else {
        (digits[..dot as usize].to_string(), format!(".{}", &digits[dot as usize..]))
    };
    let exp = if left == dot { String::new() } else { format!("E{:+}", left - dot) };
    format!("{}{int}{frac}{exp}", if unscaled < 0 { "-" } else { "" })
}

/// Python's repr() of an ASCII string; None for any other (Python's printable test is Unicode's).
fn py_repr(value: &[u8]) -> Option<String> {
    if !value.is_ascii() {
        return None;
    }
    let quote = if value.contains(&b'\'') && !value.contains(&b'"') { b'"' } else { b'\'' };
    let mut shown = String::with_capacity(value.len() + 2);
    shown.push(quote as char);
    for &b in value {
        match b {
            b'\\' => shown.push_str("\\\\"),
            b'\t' => shown.push_str("\\t"),
            b'\n' => shown.push_str("\\n"),
            b'\r' => shown.push_str("\\r"),
            _ if b == quote => {
                shown.push('\\');
                shown.push(b as char);
            }
            0x20..=0x7E => shown.push(b as char),
            _ => shown.push_str(&format!("\\x{b:02x}")),
        }
    }
    shown.push(quote as char);
    Some(shown)
}

fn path_text(column: &str, path: &[Seg<'_>]) -> Option<String> {
    let mut text = column.to_string();
    for seg in path.iter().rev() {
        match seg {
            Seg::Field(name) => {
                text.push('.');
                text.push_str(name);
            }
            Seg::Index(i) => text.push_str(&format!("[{i}]")),
            Seg::Key(Some(key)) => text.push_str(&format!("[{key}]")),
            Seg::Key(None) => return None,
        }
    }
    Some(text)
}

/// A writer schema's encoding plan, built once per process and schema (kafkasource.formats.avro.native_encode.plan).
#[pyclass(frozen)]
pub struct AvroEncodePlan {
    plan: Plan,
}

#[pymethods]
impl AvroEncodePlan {
    #[new]
    fn new(plan: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(AvroEncodePlan { plan: Plan::from_py(plan)? })
    }
}

/// A row that does not fit the schema and why ("value.amount: null for a non-nullable field"; None: Python words it).
type BadRow = (usize, Option<String>);

/// Encodes `column` (any object with `__arrow_c_array__`) with `plan` as schema-registry framed Avro (schema id
/// `schema_id`); `path` names the column in reasons. Returns the payloads as an Arrow binary column's buffers
/// (a null row is a null payload, as is a row that does not fit) with their count, and the rows that do not fit.
/// NotImplementedError: this encoder does not cover the schema and column (Python encodes it).
#[pyfunction]
pub fn encode_avro(
    py: Python<'_>,
    plan: &AvroEncodePlan,
    schema_id: u32,
    column: &Bound<'_, PyAny>,
    path: &str,
) -> PyResult<(usize, Py<BinaryBuffers>, Vec<BadRow>)> {
    let capsules = column.call_method0("__arrow_c_array__")?;
    let (schema_capsule, array_capsule): (Bound<'_, PyAny>, Bound<'_, PyAny>) = capsules.extract()?;
    let schema: Owned<ArrowSchema> = Owned::take(schema_capsule.downcast::<PyCapsule>()?, c"arrow_schema")?;
    let array: Owned<ArrowArray> = Owned::take(array_capsule.downcast::<PyCapsule>()?, c"arrow_array")?;
    let node = Node { schema: &schema.0, array: &array.0 };
    let root = bind(&plan.plan, node, node.offset()).map_err(PyNotImplementedError::new_err)?;
    let rows = node.len();
    let mut prefix = [0u8; 5];
    prefix[1..].copy_from_slice(&schema_id.to_be_bytes());
    let result = py.allow_threads(|| -> Result<(BinaryColumn, Vec<BadRow>), String> {
        let mut out = BinaryColumn::new();
        out.offsets.reserve(rows);
        let mut bad = Vec::new();
        for i in 0..rows {
            if !root.valid(i) {
                out.push(None)?; // a null key, a tombstone: null, as the built-in writes them
                continue;
            }
            let start = out.data.len();
            out.data.extend_from_slice(&prefix);
            match root.write(i, &mut out.data) {
                Ok(()) => {
                    set_bit(&mut out.validity, i, true);
                    let end = i32::try_from(out.data.len())
                        .map_err(|_| "more than 2 GiB of payloads in one batch".to_string())?;
                    out.offsets.push(end);
                }
                Err(Fail::Row(segs, reason)) => {
                    out.data.truncate(start);
                    out.push(None)?;
                    let text = path_text(path, &segs).zip(reason).map(|(at, why)| format!("{at}: {why}"));
                    bad.push((i, text));
                }
                Err(Fail::Unsupported(why)) => return Err(why),
            }
        }
        Ok((out, bad))
    });
    match result {
        Ok((out, bad)) => Ok((rows, out.into_buffers(py)?, bad)),
        Err(why) => Err(PyNotImplementedError::new_err(why)),
    }
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<AvroEncodePlan>()?;
    module.add_function(wrap_pyfunction!(encode_avro, module)?)
}
