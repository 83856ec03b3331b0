//! The consumed records as Arrow columns: the consumer (consumer.rs) appends each record it reads, straight from
//! librdkafka's message, and hands the rows to Python as Arrow buffers, so reading makes no Python object per record.

use std::ffi::{c_char, c_void, CStr};
use std::ptr;

use pyo3::prelude::*;
use rdkafka_sys as rd;

use crate::arrow_buffers::{buffer, set_bit, BinaryBuffers, BinaryColumn, Buffer, BufferData};

/// The rows consumed so far, column by column, in the layout Arrow expects.
pub(super) struct Columns {
    keys: BinaryColumn,
    values: BinaryColumn,
    offsets: Vec<i64>,
    timestamps_us: Vec<i64>,
    timestamp_types: Vec<i32>,
    // headers: list<struct<key: string, value: binary>>; a record without headers is a null list
    header_validity: Vec<u8>,
    header_offsets: Vec<i32>,
    header_keys: BinaryColumn,
    header_values: BinaryColumn,
}

impl Columns {
    pub(super) fn new() -> Self {
        Columns {
            keys: BinaryColumn::new(),
            values: BinaryColumn::new(),
            offsets: Vec::new(),
            timestamps_us: Vec::new(),
            timestamp_types: Vec::new(),
            header_validity: Vec::new(),
            header_offsets: vec![0],
            header_keys: BinaryColumn::new(),
            header_values: BinaryColumn::new(),
        }
    }

    /// Empty columns with room for a batch like `previous`: a range's batches are alike, and growing a batch's
    /// values by doubling would copy them again on the way.
    pub(super) fn like(previous: &Columns) -> Self {
        let mut next = Columns::new();
        next.keys.reserve_like(&previous.keys);
        next.values.reserve_like(&previous.values);
        next.offsets.reserve(previous.offsets.len());
        next.timestamps_us.reserve(previous.timestamps_us.len());
        next.timestamp_types.reserve(previous.timestamp_types.len());
        next
    }

    pub(super) fn rows(&self) -> usize {
        self.offsets.len()
    }

    pub(super) fn bytes(&self) -> usize {
        self.keys.data.len() + self.values.data.len() + self.header_keys.data.len() + self.header_values.data.len()
    }

    /// Appends one record.
    ///
    /// # Safety
    /// `message` is a live message without error from librdkafka.
    pub(super) unsafe fn push(
        &mut self,
        message: *mut rd::rd_kafka_message_t,
        with_headers: bool,
    ) -> Result<(), String> {
        let m = &*message;
        self.keys.push(bytes_or_null(m.key, m.key_len))?;
        self.values.push(bytes_or_null(m.payload, m.len))?;
        self.offsets.push(m.offset);
        let mut kind = rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        let millis = rd::rd_kafka_message_timestamp(message, &mut kind);
        self.timestamps_us.push(millis.saturating_mul(1000));
        // Kafka's TimestampType ids: -1 none, 0 CreateTime, 1 LogAppendTime (librdkafka counts from 0 = none)
        self.timestamp_types.push(kind as i32 - 1);
        if with_headers {
            self.push_headers(message)?;
        }
        Ok(())
    }

    /// # Safety
    /// As for `push`.
    unsafe fn push_headers(&mut self, message: *mut rd::rd_kafka_message_t) -> Result<(), String> {
        let row = self.offsets.len() - 1;
        let mut headers: *mut rd::rd_kafka_headers_t = ptr::null_mut();
        let found =
            rd::rd_kafka_message_headers(message, &mut headers) == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR;
        set_bit(&mut self.header_validity, row, found);
        if found {
            let mut index = 0;
            loop {
                let mut name: *const c_char = ptr::null();
                let mut value: *const c_void = ptr::null();
                let mut size: usize = 0;
                if rd::rd_kafka_header_get_all(headers, index, &mut name, &mut value, &mut size)
                    != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR
                {
                    break;
                }
                // header keys are Java strings on the wire, so UTF-8; anything else is replaced, never unsafe
                let key = String::from_utf8_lossy(CStr::from_ptr(name).to_bytes()).into_owned();
                self.header_keys.push(Some(key.as_bytes()))?;
                self.header_values.push(bytes_or_null(value as *mut c_void, size))?;
                index += 1;
            }
        }
        let entries = i32::try_from(self.header_keys.len()).map_err(|_| "too many headers in one Arrow batch")?;
        self.header_offsets.push(entries);
        Ok(())
    }

    pub(super) fn truncate(&mut self, rows: usize) {
        if rows >= self.rows() {
            return;
        }
        self.keys.truncate(rows);
        self.values.truncate(rows);
        self.offsets.truncate(rows);
        self.timestamps_us.truncate(rows);
        self.timestamp_types.truncate(rows);
        if self.header_offsets.len() > rows + 1 {
            self.header_offsets.truncate(rows + 1);
            let entries = self.header_offsets[rows] as usize;
            self.header_keys.truncate(entries);
            self.header_values.truncate(entries);
            self.header_validity.truncate(rows.div_ceil(8));
        }
    }

    /// The rows as Arrow buffers (the headers' only `with_headers`).
    pub(super) fn into_taken(self, py: Python<'_>, with_headers: bool) -> PyResult<TakenRows> {
        let headers = if with_headers {
            Some(Py::new(
                py,
                HeaderBuffers {
                    validity: buffer(py, BufferData::Bytes(self.header_validity))?,
                    offsets: buffer(py, BufferData::I32(self.header_offsets))?,
                    keys: self.header_keys.into_buffers(py)?,
                    values: self.header_values.into_buffers(py)?,
                },
            )?)
        } else {
            None
        };
        Ok(TakenRows {
            rows: self.offsets.len(),
            keys: self.keys.into_buffers(py)?,
            values: self.values.into_buffers(py)?,
            offsets: buffer(py, BufferData::I64(self.offsets))?,
            timestamps_us: buffer(py, BufferData::I64(self.timestamps_us))?,
            timestamp_types: buffer(py, BufferData::I32(self.timestamp_types))?,
            headers,
        })
    }
}

/// # Safety
/// A non-null `data` points at `len` bytes that outlive `'a`.
unsafe fn bytes_or_null<'a>(data: *mut c_void, len: usize) -> Option<&'a [u8]> {
    if data.is_null() {
        None // librdkafka's null key or value (a tombstone); an empty one has a pointer and length 0
    } else {
        Some(std::slice::from_raw_parts(data as *const u8, len))
    }
}

/// The headers column's buffers: the lists' validity bits and i32 offsets, and their entries' keys and values.
#[pyclass(frozen, get_all)]
pub(crate) struct HeaderBuffers {
    validity: Py<Buffer>,
    offsets: Py<Buffer>,
    keys: Py<BinaryBuffers>,
    values: Py<BinaryBuffers>,
}

/// The rows `Consumer.take` hands over, column by column as Arrow buffers; `headers` is None without headers.
#[pyclass(frozen, get_all)]
pub(crate) struct TakenRows {
    rows: usize,
    keys: Py<BinaryBuffers>,
    values: Py<BinaryBuffers>,
    offsets: Py<Buffer>,
    timestamps_us: Py<Buffer>,
    timestamp_types: Py<Buffer>,
    headers: Option<Py<HeaderBuffers>>,
}
