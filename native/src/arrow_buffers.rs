//! The Arrow column buffers Rust builds and hands to Python: a buffer Rust owns that Python reads through the buffer
//! protocol (pyarrow wraps it without copying), and the binary (or string) column built of them. The consumer's
//! columns (consumer/columns.rs), the Avro decoder (avro.rs) and the Avro encoder (avro_encode.rs) build theirs so.

use std::ffi::{c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;

/// One Arrow binary (or string) column being built: validity bits, i32 offsets, bytes.
pub(crate) struct BinaryColumn {
    pub(crate) validity: Vec<u8>,
    pub(crate) offsets: Vec<i32>,
    pub(crate) data: Vec<u8>,
}

impl BinaryColumn {
    /// No rows: Arrow's offsets of an empty column are the one 0.
    pub(crate) fn new() -> Self {
        BinaryColumn { validity: Vec::new(), offsets: vec![0], data: Vec::new() }
    }

    pub(crate) fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub(crate) fn push(&mut self, value: Option<&[u8]>) -> Result<(), String> {
        let row = self.len();
        set_bit(&mut self.validity, row, value.is_some());
        if let Some(bytes) = value {
            self.data.extend_from_slice(bytes);
        }
        let end = i32::try_from(self.data.len())
            .map_err(|_| "more than 2 GiB of keys, values or headers in one Arrow batch".to_string())?;
        self.offsets.push(end);
        Ok(())
    }

    /// Room for as many rows and bytes as `previous` held.
    pub(crate) fn reserve_like(&mut self, previous: &BinaryColumn) {
        self.validity.reserve(previous.validity.len());
        self.offsets.reserve(previous.offsets.len());
        self.data.reserve(previous.data.len());
    }

    pub(crate) fn into_buffers(self, py: Python<'_>) -> PyResult<Py<BinaryBuffers>> {
        Py::new(
            py,
            BinaryBuffers {
                validity: buffer(py, BufferData::Bytes(self.validity))?,
                offsets: buffer(py, BufferData::I32(self.offsets))?,
                data: buffer(py, BufferData::Bytes(self.data))?,
            },
        )
    }

    pub(crate) fn truncate(&mut self, rows: usize) {
        self.offsets.truncate(rows + 1);
        self.data.truncate(self.offsets[rows] as usize);
        self.validity.truncate(rows.div_ceil(8));
    }
}

pub(crate) fn set_bit(bits: &mut Vec<u8>, index: usize, value: bool) {
    if bits.len() <= index / 8 {
        bits.resize(index / 8 + 1, 0);
    }
    if value {
        bits[index / 8] |= 1 << (index % 8);
    } else {
        bits[index / 8] &= !(1 << (index % 8));
    }
}

/// A buffer Rust owns and Python reads through the buffer protocol (pyarrow wraps it without copying).
#[pyclass(frozen)]
pub(crate) struct Buffer {
    data: BufferData,
}

pub(crate) enum BufferData {
    Bytes(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

pub(crate) fn buffer(py: Python<'_>, data: BufferData) -> PyResult<Py<Buffer>> {
    Py::new(py, Buffer { data })
}

impl Buffer {
    fn raw(&self) -> (*const u8, usize) {
        match &self.data {
            BufferData::Bytes(v) => (v.as_ptr(), v.len()),
            BufferData::I32(v) => (v.as_ptr() as *const u8, v.len() * 4),
            BufferData::I64(v) => (v.as_ptr() as *const u8, v.len() * 8),
        }
    }
}

#[pymethods]
impl Buffer {
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let (data, len) = slf.get().raw();
        // SAFETY: `view` is Python's to fill; the view is read-only (PyBuffer_FillInfo refuses writable requests) and
        // keeps `slf` alive, whose data never moves (the class is frozen).
        if ffi::PyBuffer_FillInfo(view, slf.as_ptr(), data as *mut c_void, len as ffi::Py_ssize_t, 1, flags) == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.raw().1
    }
}

/// An Arrow binary (or string) column's buffers: validity bits, i32 offsets, bytes.
#[pyclass(frozen, get_all)]
pub(crate) struct BinaryBuffers {
    validity: Py<Buffer>,
    offsets: Py<Buffer>,
    data: Py<Buffer>,
}
