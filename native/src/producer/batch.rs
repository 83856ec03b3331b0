//! The sink's record batch as the producer (producer.rs) reads it: its columns by name, checked against the layouts
//! the Python side casts them to, and each row's topic, key, value, headers and partition read straight from the
//! columns' buffers.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::ptr;

use rdkafka_sys as rd;

use super::ProducerHandle;
use crate::arrow_ffi::{ArrowArray, ArrowSchema};
use crate::cstr;

/// The layouts the Python side casts the sink's columns to: string (utf8) or binary with i32 offsets, int32, and
/// list<struct<key: string, value: binary>>. large_binary, large_string and string_view columns are cast to these
/// first: librdkafka takes a record's bytes as one contiguous piece either way, a batch from Spark is far below
/// 2 GiB, and one layout keeps this reader short and its checks exact.
enum Layout {
    Bytes,
    Int32,
    Headers,
}

/// # Safety
/// `schema` is a live ArrowSchema.
unsafe fn format_of(schema: *const ArrowSchema) -> String {
    cstr((*schema).format)
}

/// # Safety
/// `schema` is a live ArrowSchema with `n_children` children.
unsafe fn schema_child(schema: *const ArrowSchema, index: usize) -> *const ArrowSchema {
    *(*schema).children.add(index)
}

/// Whether `schema` has `layout`; the reason when it does not.
///
/// # Safety
/// `schema` is a live ArrowSchema.
unsafe fn check_layout(schema: *const ArrowSchema, layout: &Layout, column: &str) -> Result<(), String> {
    let format = format_of(schema);
    let fits = match layout {
        Layout::Bytes => format == "z" || format == "u",
        Layout::Int32 => format == "i",
        Layout::Headers => {
            format == "+l" && (*schema).n_children == 1 && {
                let entry = schema_child(schema, 0);
                format_of(entry) == "+s"
                    && (*entry).n_children == 2
                    && cstr((*schema_child(entry, 0)).name) == "key"
                    && format_of(schema_child(entry, 0)) == "u"
                    && cstr((*schema_child(entry, 1)).name) == "value"
                    && matches!(format_of(schema_child(entry, 1)).as_str(), "z" | "u")
            }
        }
    };
    if fits {
        Ok(())
    } else {
        Err(format!("column {column} has the Arrow format {format:?}, which the native producer does not read"))
    }
}

/// One column of the batch: an ArrowArray and the offset its parent adds (a struct's children start at the
/// struct's offset plus their own).
#[derive(Clone, Copy)]
pub(super) struct Column<'a> {
    array: &'a ArrowArray,
    shift: usize,
}

impl<'a> Column<'a> {
    fn buffer(&self, index: usize) -> *const c_void {
        if (index as i64) < self.array.n_buffers {
            // SAFETY: the array has n_buffers buffer pointers (some null).
            unsafe { *self.array.buffers.add(index) }
        } else {
            ptr::null()
        }
    }

    /// The physical index of `row`: the array's offset (a sliced array) and its parent's added.
    fn at(&self, row: usize) -> usize {
        self.array.offset as usize + self.shift + row
    }

    fn is_valid(&self, row: usize) -> bool {
        let validity = self.buffer(0) as *const u8;
        if self.array.null_count == 0 || validity.is_null() {
            return true;
        }
        let index = self.at(row);
        // SAFETY: a validity bitmap has a bit for every physical index of the array.
        unsafe { (*validity.add(index / 8) >> (index % 8)) & 1 == 1 }
    }

    /// A binary or string value; None for null. An empty value is an empty slice (never null: librdkafka writes
    /// a null pointer as a null key or value).
    pub(super) fn bytes(&self, row: usize) -> Option<&'a [u8]> {
        if !self.is_valid(row) {
            return None;
        }
        let offsets = self.buffer(1) as *const i32;
        let data = self.buffer(2) as *const u8;
        let index = self.at(row);
        // SAFETY: a binary array's i32 offsets hold length + offset + 1 entries, each within its data buffer.
        unsafe {
            let (start, end) = (*offsets.add(index) as usize, *offsets.add(index + 1) as usize);
            if end <= start || data.is_null() {
                Some(&[])
            } else {
                Some(std::slice::from_raw_parts(data.add(start), end - start))
            }
        }
    }

    pub(super) fn int32(&self, row: usize) -> Option<i32> {
        if !self.is_valid(row) {
            return None;
        }
        // SAFETY: an int32 array's values buffer holds an i32 for every physical index.
        Some(unsafe { *(self.buffer(1) as *const i32).add(self.at(row)) })
    }

    /// The entries of a list's row, as indices into its child (which carries its own offset).
    fn list_range(&self, row: usize) -> Option<std::ops::Range<usize>> {
        if !self.is_valid(row) {
            return None;
        }
        let offsets = self.buffer(1) as *const i32;
        let index = self.at(row);
        // SAFETY: a list array's i32 offsets hold length + offset + 1 entries.
        unsafe { Some(*offsets.add(index) as usize..*offsets.add(index + 1) as usize) }
    }

    /// A list's values (their indices are the list's offsets).
    fn list_values(&self) -> Column<'a> {
        // SAFETY: a list array has one child.
        Column { array: unsafe { &**self.array.children }, shift: 0 }
    }

    /// A struct's field: the struct's offset applies to its fields too.
    fn field(&self, index: usize) -> Column<'a> {
        // SAFETY: the struct has this child (the schema said so).
        let array = unsafe { &**self.array.children.add(index) };
        Column { array, shift: self.array.offset as usize + self.shift }
    }
}

/// Where each row's topic comes from.
pub(super) enum Topics<'a> {
    Fixed(*mut rd::rd_kafka_topic_t, &'a [u8]),
    Column(Column<'a>),
}

/// The sink's columns of one batch.
pub(super) struct Batch<'a> {
    pub(super) rows: usize,
    pub(super) topics: Topics<'a>,
    pub(super) keys: Option<Column<'a>>,
    pub(super) values: Column<'a>,
    pub(super) headers: Option<Column<'a>>,
    pub(super) partitions: Option<Column<'a>>,
}

/// An rd_kafka_headers_t of ours until librdkafka takes it with its record.
pub(super) struct Headers(*mut rd::rd_kafka_headers_t);

impl Headers {
    /// The headers of a list row; None for a null or empty list (a record without headers), and the bytes they
    /// hold.
    pub(super) fn of(column: &Column<'_>, row: usize) -> Result<(Option<Headers>, usize), String> {
        let range = match column.list_range(row) {
            Some(range) if !range.is_empty() => range,
            _ => return Ok((None, 0)),
        };
        let entries = column.list_values();
        let (keys, values) = (entries.field(0), entries.field(1));
        // SAFETY: rd_kafka_headers_new has no preconditions; the guard owns what it returns.
        let headers = Headers(unsafe { rd::rd_kafka_headers_new(range.len()) });
        let mut size = 0;
        for entry in range {
            let key = match (entries.is_valid(entry), keys.bytes(entry)) {
                (true, Some(key)) => key,
                // the Python side refuses these before any row moves; never a header without a key
                _ => return Err("the headers column holds a header with a null key (or a null header)".to_string()),
            };
            let value = values.bytes(entry);
            let (value_ptr, value_len) = match value {
                Some(v) => (v.as_ptr() as *const c_void, v.len()),
                None => (ptr::null(), 0), // a null header value
            };
            size += key.len() + value_len;
            // SAFETY: the headers are live; librdkafka copies `key.len()` bytes of the name (no NUL needed when the
            // size is given) and the value's bytes.
            unsafe {
                rd::rd_kafka_header_add(
                    headers.0,
                    key.as_ptr() as *const c_char,
                    key.len() as isize,
                    value_ptr,
                    value_len as isize,
                );
            }
        }
        Ok((Some(headers), size))
    }

    pub(super) fn ptr(headers: &Option<Headers>) -> *mut rd::rd_kafka_headers_t {
        headers.as_ref().map_or(ptr::null_mut(), |h| h.0)
    }

    /// librdkafka took the headers with the record it accepted.
    pub(super) fn handed_over(headers: Option<Headers>) {
        if let Some(h) = headers {
            std::mem::forget(h);
        }
    }
}

impl Drop for Headers {
    fn drop(&mut self) {
        // SAFETY: the guard owns the headers (produce did not take them).
        unsafe { rd::rd_kafka_headers_destroy(self.0) }
    }
}

/// The batch's columns by name, checked against the layouts read here.
///
/// # Safety
/// `schema` and `array` are a live, matching struct schema and array.
pub(super) unsafe fn batch_columns<'a>(
    handle: &mut ProducerHandle,
    schema: &ArrowSchema,
    array: &'a ArrowArray,
    topic: Option<&'a str>,
) -> Result<Batch<'a>, String> {
    if format_of(schema) != "+s" || schema.n_children != array.n_children {
        return Err("the native producer takes a record batch (an Arrow struct array)".to_string());
    }
    let top = Column { array, shift: 0 };
    let mut found: HashMap<String, usize> = HashMap::new();
    for index in 0..schema.n_children as usize {
        found.insert(cstr((*schema_child(schema, index)).name), index);
    }
    let column = |name: &str, layout: Layout| -> Result<Option<Column<'a>>, String> {
        match found.get(name) {
            None => Ok(None),
            Some(&index) => {
                check_layout(schema_child(schema, index), &layout, name)?;
                Ok(Some(top.field(index)))
            }
        }
    };
    let topics = match topic {
        Some(name) => Topics::Fixed(handle.topic(name.as_bytes())?, name.as_bytes()),
        None => Topics::Column(column("topic", Layout::Bytes)?.ok_or("no topic, and no topic column")?),
    };
    Ok(Batch {
        rows: array.length as usize,
        topics,
        keys: column("key", Layout::Bytes)?,
        values: column("value", Layout::Bytes)?.ok_or("no value column")?,
        headers: column("headers", Layout::Headers)?,
        partitions: column("partition", Layout::Int32)?,
    })
}
