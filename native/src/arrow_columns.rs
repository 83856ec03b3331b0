//! The Arrow columns the native decoders (avro.rs, json_decode.rs) build, any type nested in any other, and the
//! binary column of payloads they read: a column can be cut back to an earlier length, so a record that fails
//! halfway leaves nothing behind.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arrow_buffers::{buffer, set_bit, BufferData};

/// An Arrow column being built; every kind keeps its own length and can be cut back to an earlier one.
#[derive(Clone)]
pub(crate) enum Column {
    Null {
        len: usize,
    },
    Bool {
        validity: Vec<u8>,
        bits: Vec<u8>,
        len: usize,
    },
    /// int32, int64, float32, float64, date32, timestamp, decimal128: `width` bytes a value, little-endian
    Fixed {
        validity: Vec<u8>,
        data: Vec<u8>,
        width: usize,
    },
    /// binary or string
    Bytes {
        validity: Vec<u8>,
        offsets: Vec<i32>,
        data: Vec<u8>,
    },
    Struct {
        validity: Vec<u8>,
        len: usize,
        children: Vec<Column>,
    },
    /// a list, or a map (a list of key-value structs)
    List {
        validity: Vec<u8>,
        offsets: Vec<i32>,
        child: Box<Column>,
    },
}

pub(crate) fn offset(end: usize) -> Result<i32, String> {
    i32::try_from(end).map_err(|_| "more than 2 GiB of values in one Arrow batch".to_string())
}

impl Column {
    /// The empty column a spec names: ("null",) ("bool",) ("fixed", width) ("bytes",) ("struct", [spec, ...])
    /// ("list", spec).
    pub(crate) fn from_spec(spec: &Bound<'_, PyAny>) -> PyResult<Column> {
        let spec = spec.downcast::<PyTuple>()?;
        let tag: String = spec.get_item(0)?.extract()?;
        Ok(match tag.as_str() {
            "null" => Column::Null { len: 0 },
            "bool" => Column::Bool { validity: Vec::new(), bits: Vec::new(), len: 0 },
            "fixed" => Column::Fixed { validity: Vec::new(), data: Vec::new(), width: spec.get_item(1)?.extract()? },
            "bytes" => Column::Bytes { validity: Vec::new(), offsets: vec![0], data: Vec::new() },
            "struct" => {
                let children =
                    spec.get_item(1)?.try_iter()?.map(|c| Column::from_spec(&c?)).collect::<PyResult<_>>()?;
                Column::Struct { validity: Vec::new(), len: 0, children }
            }
            "list" => Column::List {
                validity: Vec::new(),
                offsets: vec![0],
                child: Box::new(Column::from_spec(&spec.get_item(1)?)?),
            },
            other => return Err(PyValueError::new_err(format!("unknown column kind {other:?}"))),
        })
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Column::Null { len } | Column::Bool { len, .. } | Column::Struct { len, .. } => *len,
            Column::Fixed { data, width, .. } => data.len() / *width,
            Column::Bytes { offsets, .. } | Column::List { offsets, .. } => offsets.len() - 1,
        }
    }

    pub(crate) fn push_null(&mut self) {
        let row = self.len();
        match self {
            Column::Null { len } => *len += 1,
            Column::Bool { validity, bits, len } => {
                set_bit(validity, row, false);
                set_bit(bits, row, false);
                *len += 1;
            }
            Column::Fixed { validity, data, width } => {
                set_bit(validity, row, false);
                data.resize(data.len() + *width, 0);
            }
            Column::Bytes { validity, offsets, .. } | Column::List { validity, offsets, .. } => {
                set_bit(validity, row, false);
                offsets.push(offsets[row]);
            }
            Column::Struct { validity, len, children } => {
                set_bit(validity, row, false);
                children.iter_mut().for_each(Column::push_null); // a struct's children are as long as it is
                *len += 1;
            }
        }
    }

    pub(crate) fn push_bytes(&mut self, value: &[u8]) -> Result<(), String> {
        let row = self.len();
        match self {
            Column::Bytes { validity, offsets, data } => {
                set_bit(validity, row, true);
                data.extend_from_slice(value);
                offsets.push(offset(data.len())?);
                Ok(())
            }
            Column::Fixed { validity, data, width } if *width == value.len() => {
                set_bit(validity, row, true);
                data.extend_from_slice(value);
                Ok(())
            }
            _ => Err("internal error: a value does not fit its column".into()),
        }
    }

    /// Cuts the column back to its first `rows` rows (a record that failed halfway leaves nothing behind).
    pub(crate) fn truncate(&mut self, rows: usize) {
        match self {
            Column::Null { len } | Column::Bool { len, .. } => *len = rows,
            Column::Fixed { data, width, .. } => data.truncate(rows * *width),
            Column::Bytes { offsets, data, .. } => {
                offsets.truncate(rows + 1);
                data.truncate(offsets[rows] as usize);
            }
            Column::Struct { len, children, .. } => {
                *len = rows;
                children.iter_mut().for_each(|child| child.truncate(rows));
            }
            Column::List { offsets, child, .. } => {
                offsets.truncate(rows + 1);
                child.truncate(offsets[rows] as usize);
            }
        }
    }

    /// (length, validity, [buffers], [children]) for pyarrow's Array.from_buffers.
    pub(crate) fn into_py(self, py: Python<'_>) -> PyResult<PyObject> {
        let len = self.len();
        let bytes = |v: Vec<u8>| buffer(py, BufferData::Bytes(v));
        let (validity, buffers, children) = match self {
            Column::Null { .. } => (None, vec![], vec![]),
            Column::Bool { validity, bits, .. } => (Some(bytes(validity)?), vec![bytes(bits)?], vec![]),
            Column::Fixed { validity, data, .. } => (Some(bytes(validity)?), vec![bytes(data)?], vec![]),
            Column::Bytes { validity, offsets, data } => {
                (Some(bytes(validity)?), vec![buffer(py, BufferData::I32(offsets))?, bytes(data)?], vec![])
            }
            Column::Struct { validity, children, .. } => (Some(bytes(validity)?), vec![], children),
            Column::List { validity, offsets, child } => {
                (Some(bytes(validity)?), vec![buffer(py, BufferData::I32(offsets))?], vec![*child])
            }
        };
        let children = children.into_iter().map(|c| c.into_py(py)).collect::<PyResult<Vec<_>>>()?;
        Ok((len, validity, buffers, children).into_pyobject(py)?.into_any().unbind())
    }
}

/// A read-only buffer's bytes, borrowed for as long as the PyBuffer lives.
fn bytes_of(buffer: &PyBuffer<i8>) -> PyResult<&[u8]> {
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err("a payload buffer is not contiguous"));
    }
    // SAFETY: a contiguous buffer holds len_bytes() bytes at buf_ptr() for as long as the PyBuffer is held.
    Ok(unsafe { std::slice::from_raw_parts(buffer.buf_ptr() as *const u8, buffer.len_bytes()) })
}

/// The payloads of an Arrow binary array as Python hands its buffers over, checked once so that every row's bytes
/// lie inside the data.
pub(crate) struct Payloads<'a> {
    validity: Option<&'a [u8]>,
    offsets: &'a [u8],
    data: &'a [u8],
}

impl<'a> Payloads<'a> {
    /// The array's `length` rows from row `offset` of its buffers.
    pub(crate) fn new(
        length: usize,
        offset: usize,
        validity: Option<&'a PyBuffer<i8>>,
        offsets: &'a PyBuffer<i8>,
        data: &'a PyBuffer<i8>,
    ) -> PyResult<Self> {
        let validity = validity.map(bytes_of).transpose()?;
        let payloads = Payloads { validity, offsets: bytes_of(offsets)?, data: bytes_of(data)? };
        if payloads.offsets.len() < (offset + length + 1) * 4 || validity.is_some_and(|v| v.len() * 8 < offset + length)
        {
            return Err(PyValueError::new_err("the payload buffers are shorter than the array"));
        }
        let mut previous = payloads.at(offset);
        for row in offset + 1..=offset + length {
            let next = payloads.at(row);
            if next < previous || next > payloads.data.len() {
                return Err(PyValueError::new_err("the payload offsets are not ascending within the data"));
            }
            previous = next;
        }
        Ok(payloads)
    }

    fn at(&self, row: usize) -> usize {
        i32::from_le_bytes(self.offsets[row * 4..row * 4 + 4].try_into().unwrap()) as usize
    }

    /// Row `row`'s payload, None where it is null.
    pub(crate) fn get(&self, row: usize) -> Option<&'a [u8]> {
        if self.validity.is_some_and(|v| v[row / 8] & (1 << (row % 8)) == 0) {
            return None;
        }
        Some(&self.data[self.at(row)..self.at(row + 1)])
    }
}
