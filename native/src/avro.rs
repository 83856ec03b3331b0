//! Avro records in the schema-registry wire format, decoded straight into Arrow column buffers: no Python object
//! per record.
//!
//! Why not arrow-rs's arrow-avro (60.1.0, bench/AVRO_RS.md): its decoder has no per-record outcome (a record cut
//! short leaves half a row behind and loses the batch, an unknown or unresolvable writer schema fails the call or
//! the whole decoder) where this one nulls the record and gives its reason. Its build alone took 30 minutes on
//! the loaded test machine, past the evaluation's limit, so its speed was not measured.
//!
//! Only the hot loop lives here. Parsing schemas, mapping them to Arrow types and resolving each writer schema
//! into the reader schema happen once per schema in Python (kafkasource/formats/avro/schema.py), which hands over
//! a plan: for every value, how to read the writer's encoding and which reader column it lands in (defaults come
//! encoded in Avro binary, read like data). The decoder follows the plan; a record it cannot follow is rolled
//! back and becomes a null with its reason.

use std::collections::HashMap;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arrow_buffers::set_bit;
use crate::arrow_columns::{offset, Column, Payloads};

const HEADER_SIZE: usize = 5; // magic byte 0, then the schema id in 4 bytes, big-endian

/// Why a record could not be read.
enum Failure {
    /// The bytes do not follow the writer schema.
    Malformed(String),
    /// The record holds a value the reader schema has no place for (an enum symbol, a union branch).
    Unresolved(String),
}

type Outcome<T> = Result<T, Failure>;

/// A column's own failure (a batch past Arrow's 2 GiB offsets) fails the record as malformed.
impl From<String> for Failure {
    fn from(why: String) -> Self {
        Failure::Malformed(why)
    }
}

fn malformed<T>(why: impl Into<String>) -> Outcome<T> {
    Err(Failure::Malformed(why.into()))
}

fn child(children: &mut [Column], i: usize) -> Outcome<&mut Column> {
    match children.get_mut(i) {
        Some(column) => Ok(column),
        None => misfit(),
    }
}

fn misfit<T>() -> Outcome<T> {
    malformed("internal error: the resolution plan does not fit the reader's column")
}

/// The Arrow type a number lands in.
#[derive(Clone, Copy)]
enum To {
    I32,
    I64,
    F32,
    F64,
}

/// How to read one writer value into the reader's column (kafkasource/formats/avro/schema.py describes each step).
enum Plan {
    Null,
    Bool,
    Int(To),
    Long(To, i64),
    Float(To),
    Double,
    Bytes { utf8: bool },
    Fixed(usize),
    Decimal { size: Option<usize>, precision: u32, scale: u32, limit: u128 }, // limit: 10^precision
    Enum(Vec<Result<String, String>>),
    Record(Vec<Step>),
    Array(Box<Plan>),
    Map(Box<Plan>),
    Union(Vec<Plan>),
    Member(usize, Box<Plan>),
    Error(String),
}

enum Step {
    Field(usize, Plan),
    Skip(Skip),
    Default(usize, Vec<u8>, Plan),
}

/// How to read past a writer value the reader does not want.
enum Skip {
    Bytes(usize),
    Varint,
    LengthPrefixed,
    Array(Box<Skip>),
    Map(Box<Skip>),
    Record(Vec<Skip>),
    Union(Vec<Skip>),
}

fn tuple_tag<'py>(obj: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyTuple>, String)> {
    let tuple = obj.downcast::<PyTuple>()?.clone();
    let tag = tuple.get_item(0)?.extract()?;
    Ok((tuple, tag))
}

fn each<T>(obj: &Bound<'_, PyAny>, f: impl Fn(&Bound<'_, PyAny>) -> PyResult<T>) -> PyResult<Vec<T>> {
    obj.try_iter()?.map(|item| f(&item?)).collect()
}

fn to(obj: &Bound<'_, PyAny>) -> PyResult<To> {
    let name: String = obj.extract()?;
    Ok(match name.as_str() {
        "i32" => To::I32,
        "i64" => To::I64,
        "f32" => To::F32,
        "f64" => To::F64,
        other => return Err(PyValueError::new_err(format!("unknown number type {other:?}"))),
    })
}

impl Plan {
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Plan> {
        let (t, tag) = tuple_tag(obj)?;
        let item = |i: usize| t.get_item(i);
        Ok(match tag.as_str() {
            "null" => Plan::Null,
            "bool" => Plan::Bool,
            "int" => Plan::Int(to(&item(1)?)?),
            "long" => Plan::Long(to(&item(1)?)?, item(2)?.extract()?),
            "float" => Plan::Float(to(&item(1)?)?),
            "double" => Plan::Double,
            "bytes" => Plan::Bytes { utf8: item(1)?.extract()? },
            "fixed" => Plan::Fixed(item(1)?.extract()?),
            "decimal" => {
                let size: i64 = item(1)?.extract()?;
                let precision: u32 = item(2)?.extract()?;
                let limit =
                    10u128.checked_pow(precision).ok_or_else(|| PyValueError::new_err("decimal precision over 38"))?;
                Plan::Decimal { size: usize::try_from(size).ok(), precision, scale: item(3)?.extract()?, limit }
            }
            "enum" => Plan::Enum(each(&item(1)?, |s| {
                let (symbol, error): (Option<String>, Option<String>) = s.extract()?;
                Ok(symbol.ok_or_else(|| error.unwrap_or_default()))
            })?),
            "record" => Plan::Record(each(&item(1)?, |s| {
                let (step, kind) = tuple_tag(s)?;
                Ok(match kind.as_str() {
                    "field" => Step::Field(step.get_item(1)?.extract()?, Plan::from_py(&step.get_item(2)?)?),
                    "skip" => Step::Skip(Skip::from_py(&step.get_item(1)?)?),
                    _ => Step::Default(
                        step.get_item(1)?.extract()?,
                        step.get_item(2)?.extract()?,
                        Plan::from_py(&step.get_item(3)?)?,
                    ),
                })
            })?),
            "array" => Plan::Array(Box::new(Plan::from_py(&item(1)?)?)),
            "map" => Plan::Map(Box::new(Plan::from_py(&item(1)?)?)),
            "union" => Plan::Union(each(&item(1)?, Plan::from_py)?),
            "member" => Plan::Member(item(1)?.extract()?, Box::new(Plan::from_py(&item(2)?)?)),
            "error" => Plan::Error(item(1)?.extract()?),
            other => return Err(PyValueError::new_err(format!("unknown plan step {other:?}"))),
        })
    }
}

impl Skip {
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Skip> {
        let (t, tag) = tuple_tag(obj)?;
        Ok(match tag.as_str() {
            "fixed" => Skip::Bytes(t.get_item(1)?.extract()?),
            "varint" => Skip::Varint,
            "bytes" => Skip::LengthPrefixed,
            "array" => Skip::Array(Box::new(Skip::from_py(&t.get_item(1)?)?)),
            "map" => Skip::Map(Box::new(Skip::from_py(&t.get_item(1)?)?)),
            "record" => Skip::Record(each(&t.get_item(1)?, Skip::from_py)?),
            "union" => Skip::Union(each(&t.get_item(1)?, Skip::from_py)?),
            other => return Err(PyValueError::new_err(format!("unknown skip step {other:?}"))),
        })
    }
}

/// Avro binary, read from the front.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Outcome<&'a [u8]> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.data.len() => {
                self.pos = end;
                Ok(&self.data[end - n..end])
            }
            _ => malformed(format!("the record ends {} bytes early", n - (self.data.len() - self.pos))),
        }
    }

    /// A zig-zag varint long.
    fn long(&mut self) -> Outcome<i64> {
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let Some(&byte) = self.data.get(self.pos) else { return malformed("the record ends within a number") };
            self.pos += 1;
            value |= u64::from(byte & 0x7F) << shift;
            if byte & 0x80 == 0 {
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        malformed("a number longer than 10 bytes")
    }

    fn int(&mut self) -> Outcome<i32> {
        let value = self.long()?;
        i32::try_from(value).or_else(|_| malformed(format!("int {value} out of range")))
    }

    fn length(&mut self) -> Outcome<usize> {
        let value = self.long()?;
        usize::try_from(value).or_else(|_| malformed(format!("negative length {value}")))
    }

    fn length_prefixed(&mut self) -> Outcome<&'a [u8]> {
        let n = self.length()?;
        self.take(n)
    }

    /// The item count of an array or map block, 0 at the end; a negative count is followed by the block's size.
    fn block(&mut self) -> Outcome<usize> {
        let count = self.long()?;
        if count < 0 {
            self.long()?;
        }
        let count = count.unsigned_abs();
        // every item takes a byte or more, but for nulls and empty records: a bound on what a damaged count costs
        if count > (self.data.len() - self.pos) as u64 + 65536 {
            return malformed(format!("a block of {count} items in a record of {} bytes", self.data.len()));
        }
        Ok(count as usize)
    }

    fn utf8(&mut self) -> Outcome<&'a [u8]> {
        let bytes = self.length_prefixed()?;
        match std::str::from_utf8(bytes) {
            Ok(_) => Ok(bytes),
            Err(e) => malformed(format!("a string that is not UTF-8: {e}")),
        }
    }
}

fn push_number(column: &mut Column, to: To, int: i64, float: f64) -> Outcome<()> {
    let row = column.len();
    match (column, to) {
        (Column::Fixed { validity, data, width: 4 }, To::I32) => {
            set_bit(validity, row, true);
            data.extend_from_slice(&(int as i32).to_le_bytes());
        }
        (Column::Fixed { validity, data, width: 8 }, To::I64) => {
            set_bit(validity, row, true);
            data.extend_from_slice(&int.to_le_bytes());
        }
        (Column::Fixed { validity, data, width: 4 }, To::F32) => {
            set_bit(validity, row, true);
            data.extend_from_slice(&(float as f32).to_le_bytes());
        }
        (Column::Fixed { validity, data, width: 8 }, To::F64) => {
            set_bit(validity, row, true);
            data.extend_from_slice(&float.to_le_bytes());
        }
        _ => return misfit(),
    }
    Ok(())
}

/// A decimal's unscaled value from its big-endian two's complement bytes.
fn unscaled(raw: &[u8]) -> Outcome<i128> {
    let negative = raw.first().is_some_and(|b| b & 0x80 != 0);
    let fill = if negative { 0xFF } else { 0 };
    let mut be = [fill; 16];
    if raw.len() > 16 {
        let (high, low) = raw.split_at(raw.len() - 16);
        if high.iter().any(|&b| b != fill) || (low[0] & 0x80 != 0) != negative {
            return malformed(format!("a decimal of {} bytes, wider than 128 bits", raw.len()));
        }
        be.copy_from_slice(low);
    } else {
        be[16 - raw.len()..].copy_from_slice(raw);
    }
    Ok(i128::from_be_bytes(be))
}

/// Reads one writer value as `plan` says and appends it to `column`.
fn read(plan: &Plan, r: &mut Reader<'_>, column: &mut Column) -> Outcome<()> {
    match plan {
        Plan::Null => column.push_null(),
        Plan::Bool => {
            let value = r.take(1)?[0] != 0;
            let Column::Bool { validity, bits, len } = column else { return misfit() };
            set_bit(validity, *len, true);
            set_bit(bits, *len, value);
            *len += 1;
        }
        Plan::Int(to) => {
            let value = r.int()?;
            push_number(column, *to, value.into(), value.into())?;
        }
        Plan::Long(to, factor) => {
            let value = r.long()?;
            let Some(scaled) = value.checked_mul(*factor) else {
                return malformed(format!("timestamp {value} out of range"));
            };
            push_number(column, *to, scaled, value as f64)?;
        }
        Plan::Float(to) => {
            let value = f32::from_le_bytes(r.take(4)?.try_into().unwrap());
            push_number(column, *to, 0, value.into())?;
        }
        Plan::Double => {
            let value = f64::from_le_bytes(r.take(8)?.try_into().unwrap());
            push_number(column, To::F64, 0, value)?;
        }
        Plan::Bytes { utf8 } => {
            let value = if *utf8 { r.utf8()? } else { r.length_prefixed()? };
            column.push_bytes(value)?;
        }
        Plan::Fixed(size) => column.push_bytes(r.take(*size)?)?,
        Plan::Decimal { size, precision, scale, limit } => {
            let raw = match size {
                Some(size) => r.take(*size)?,
                None => r.length_prefixed()?,
            };
            let value = unscaled(raw)?;
            if value.unsigned_abs() >= *limit {
                return malformed(format!("the unscaled value {value} does not fit decimal({precision}, {scale})"));
            }
            column.push_bytes(&value.to_le_bytes())?;
        }
        Plan::Enum(symbols) => {
            let index = r.int()?;
            match usize::try_from(index).ok().and_then(|i| symbols.get(i)) {
                Some(Ok(symbol)) => column.push_bytes(symbol.as_bytes())?,
                Some(Err(why)) => return Err(Failure::Unresolved(why.clone())),
                None => return malformed(format!("enum symbol {index} of {}", symbols.len())),
            }
        }
        Plan::Record(steps) => {
            let Column::Struct { validity, len, children } = column else { return misfit() };
            for step in steps {
                match step {
                    Step::Field(i, plan) => read(plan, r, child(children, *i)?)?,
                    Step::Skip(skip) => skip_value(skip, r)?,
                    Step::Default(i, encoded, plan) => {
                        read(plan, &mut Reader { data: encoded, pos: 0 }, child(children, *i)?)?;
                    }
                }
            }
            set_bit(validity, *len, true);
            *len += 1;
        }
        Plan::Array(items) => {
            let Column::List { validity, offsets, child } = column else { return misfit() };
            loop {
                let count = r.block()?;
                if count == 0 {
                    break;
                }
                for _ in 0..count {
                    read(items, r, child)?;
                }
            }
            set_bit(validity, offsets.len() - 1, true);
            offsets.push(offset(child.len())?);
        }
        Plan::Map(values) => {
            let Column::List { validity, offsets, child } = column else { return misfit() };
            let Column::Struct { validity: entry_validity, len, children } = child.as_mut() else { return misfit() };
            let [keys, items] = children.as_mut_slice() else { return misfit() };
            loop {
                let count = r.block()?;
                if count == 0 {
                    break;
                }
                for _ in 0..count {
                    keys.push_bytes(r.utf8()?)?;
                    read(values, r, items)?;
                    set_bit(entry_validity, *len, true);
                    *len += 1;
                }
            }
            set_bit(validity, offsets.len() - 1, true);
            offsets.push(offset(*len)?);
        }
        Plan::Union(branches) => {
            let index = r.long()?;
            match usize::try_from(index).ok().and_then(|i| branches.get(i)) {
                Some(branch) => read(branch, r, column)?,
                None => return malformed(format!("union branch {index} of {}", branches.len())),
            }
        }
        Plan::Member(member, plan) => {
            let Column::Struct { validity, len, children } = column else { return misfit() };
            for (i, child) in children.iter_mut().enumerate() {
                if i == *member {
                    read(plan, r, child)?;
                } else {
                    child.push_null();
                }
            }
            set_bit(validity, *len, true);
            *len += 1;
        }
        Plan::Error(why) => return Err(Failure::Unresolved(why.clone())),
    }
    Ok(())
}

fn skip_value(skip: &Skip, r: &mut Reader<'_>) -> Outcome<()> {
    match skip {
        Skip::Bytes(n) => {
            r.take(*n)?;
        }
        Skip::Varint => {
            r.long()?;
        }
        Skip::LengthPrefixed => {
            r.length_prefixed()?;
        }
        Skip::Array(items) | Skip::Map(items) => loop {
            let count = r.long()?;
            if count == 0 {
                break;
            }
            if count < 0 {
                let size = r.length()?; // a block that says its size is skipped whole
                r.take(size)?;
                continue;
            }
            for _ in 0..count {
                if matches!(skip, Skip::Map(_)) {
                    r.length_prefixed()?;
                }
                skip_value(items, r)?;
            }
        },
        Skip::Record(fields) => {
            for field in fields {
                skip_value(field, r)?;
            }
        }
        Skip::Union(branches) => {
            let index = r.long()?;
            match usize::try_from(index).ok().and_then(|i| branches.get(i)) {
                Some(branch) => skip_value(branch, r)?,
                None => return malformed(format!("union branch {index} of {}", branches.len())),
            }
        }
    }
    Ok(())
}

/// Decodes schema-registry framed Avro payloads into the reader schema's Arrow column, with writer schemas
/// registered by id as resolution plans (or as the reason they cannot be resolved).
#[pyclass]
pub struct AvroDecoder {
    empty: Column,
    writers: HashMap<u32, Result<Plan, String>>,
}

#[pymethods]
impl AvroDecoder {
    /// `column`: the reader's Arrow type as column builders (kafkasource.formats.avro.decode._column_spec).
    #[new]
    fn new(column: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(AvroDecoder { empty: Column::from_spec(column)?, writers: HashMap::new() })
    }

    /// Registers the plan reading records written with schema `id`.
    fn add_writer(&mut self, id: u32, plan: &Bound<'_, PyAny>) -> PyResult<()> {
        self.writers.insert(id, Ok(Plan::from_py(plan)?));
        Ok(())
    }

    /// Registers why records written with schema `id` cannot be read (the whole reason, as given).
    fn add_unresolvable(&mut self, id: u32, reason: String) {
        self.writers.insert(id, Err(reason));
    }

    /// Decodes the `length` payloads of an Arrow binary array from row `offset` of its buffers; returns the
    /// values column and the reasons column (a string column), each as (length, validity, buffers, children).
    fn decode(
        &self,
        py: Python<'_>,
        length: usize,
        offset: usize,
        validity: Option<PyBuffer<i8>>,
        offsets: PyBuffer<i8>,
        data: PyBuffer<i8>,
    ) -> PyResult<(PyObject, PyObject)> {
        let payloads = Payloads::new(length, offset, validity.as_ref(), &offsets, &data)?;
        let mut values = self.empty.clone();
        let mut reasons = Column::Bytes { validity: Vec::new(), offsets: vec![0], data: Vec::new() };
        let failed = py.allow_threads(|| -> Outcome<()> {
            for row in offset..offset + length {
                let Some(payload) = payloads.get(row) else {
                    values.push_null();
                    reasons.push_null();
                    continue;
                };
                let rows = values.len();
                match self.decode_one(payload, &mut values) {
                    Ok(()) => reasons.push_null(),
                    Err(reason) => {
                        values.truncate(rows);
                        values.push_null();
                        reasons.push_bytes(reason.as_bytes())?;
                    }
                }
            }
            Ok(())
        });
        if let Err(Failure::Malformed(why) | Failure::Unresolved(why)) = failed {
            return Err(PyValueError::new_err(why));
        }
        Ok((values.into_py(py)?, reasons.into_py(py)?))
    }
}

impl AvroDecoder {
    /// Appends one payload's value, or says why it has none.
    fn decode_one(&self, payload: &[u8], values: &mut Column) -> Result<(), String> {
        if payload.len() < HEADER_SIZE || payload[0] != 0 {
            return Err("no schema-registry wire-format prefix".into());
        }
        let id = u32::from_be_bytes(payload[1..HEADER_SIZE].try_into().unwrap());
        let plan = match self.writers.get(&id) {
            None => return Err(format!("unknown schema id {id}")),
            Some(Err(reason)) => return Err(reason.clone()),
            Some(Ok(plan)) => plan,
        };
        read(plan, &mut Reader { data: &payload[HEADER_SIZE..], pos: 0 }, values).map_err(|failure| match failure {
            Failure::Malformed(why) => format!("malformed Avro record: {why}"),
            Failure::Unresolved(why) => format!("writer schema {id} cannot be resolved into the reader schema: {why}"),
        })
    }
}
