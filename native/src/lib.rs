//! kafkasource's native read path: a librdkafka consumer that appends the records it consumes straight into
//! Arrow column buffers, so reading makes no Python object per record. Its write path (producer.rs) is the
//! reverse: a producer that hands librdkafka the rows of Arrow record batches.
//!
//! Only the hot loop lives here. What to do about an error event (skip lost records, raise, retry), when a
//! range is done and how positions move stay in Python (kafkasource/reading/task_reader.py), shared with the
//! pure-Python path. librdkafka is linked statically from the `rdkafka-sys` crate; the extension exports only its
//! Python entry point, so this copy never clashes with confluent-kafka's own librdkafka in the same process.
//!
//! The system allocator serves librdkafka: a faster one saved CPU only in a process that did nothing but read,
//! not through Spark (bench/TUNING.md).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;
use std::sync::Mutex;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use rdkafka_sys as rd;

mod arrow_ffi;
mod avro;
mod producer;
mod token;

const ERRSTR_SIZE: usize = 512;

/// librdkafka's "no offset": what `position` sends, to be overwritten with the partition's position.
const OFFSET_INVALID: i64 = rd::RD_KAFKA_OFFSET_INVALID as i64;

/// One Arrow binary (or string) column being built: validity bits, i32 offsets, bytes.
struct BinaryColumn {
    validity: Vec<u8>,
    offsets: Vec<i32>,
    data: Vec<u8>,
}

impl BinaryColumn {
    /// No rows: Arrow's offsets of an empty column are the one 0.
    fn new() -> Self {
        BinaryColumn { validity: Vec::new(), offsets: vec![0], data: Vec::new() }
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    fn push(&mut self, value: Option<&[u8]>) -> Result<(), String> {
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
    fn reserve_like(&mut self, previous: &BinaryColumn) {
        self.validity.reserve(previous.validity.len());
        self.offsets.reserve(previous.offsets.len());
        self.data.reserve(previous.data.len());
    }

    fn into_buffers(self, py: Python<'_>) -> PyResult<Py<BinaryBuffers>> {
        Py::new(
            py,
            BinaryBuffers {
                validity: buffer(py, BufferData::Bytes(self.validity))?,
                offsets: buffer(py, BufferData::I32(self.offsets))?,
                data: buffer(py, BufferData::Bytes(self.data))?,
            },
        )
    }

    fn truncate(&mut self, rows: usize) {
        self.offsets.truncate(rows + 1);
        self.data.truncate(self.offsets[rows] as usize);
        self.validity.truncate(rows.div_ceil(8));
    }
}

fn set_bit(bits: &mut Vec<u8>, index: usize, value: bool) {
    if bits.len() <= index / 8 {
        bits.resize(index / 8 + 1, 0);
    }
    if value {
        bits[index / 8] |= 1 << (index % 8);
    } else {
        bits[index / 8] &= !(1 << (index % 8));
    }
}

/// The rows consumed so far, column by column, in the layout Arrow expects.
struct Columns {
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
    fn new() -> Self {
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
    fn like(previous: &Columns) -> Self {
        let mut next = Columns::new();
        next.keys.reserve_like(&previous.keys);
        next.values.reserve_like(&previous.values);
        next.offsets.reserve(previous.offsets.len());
        next.timestamps_us.reserve(previous.timestamps_us.len());
        next.timestamp_types.reserve(previous.timestamp_types.len());
        next
    }

    fn rows(&self) -> usize {
        self.offsets.len()
    }

    fn bytes(&self) -> usize {
        self.keys.data.len() + self.values.data.len() + self.header_keys.data.len() + self.header_values.data.len()
    }

    /// Appends one record.
    ///
    /// # Safety
    /// `message` is a live message without error from librdkafka.
    unsafe fn push(&mut self, message: *mut rd::rd_kafka_message_t, with_headers: bool) -> Result<(), String> {
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

    fn truncate(&mut self, rows: usize) {
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

/// A buffer Rust owns and Python reads through the buffer protocol (pyarrow wraps it without copying).
#[pyclass(frozen)]
struct Buffer {
    data: BufferData,
}

enum BufferData {
    Bytes(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

fn buffer(py: Python<'_>, data: BufferData) -> PyResult<Py<Buffer>> {
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
struct BinaryBuffers {
    validity: Py<Buffer>,
    offsets: Py<Buffer>,
    data: Py<Buffer>,
}

/// The headers column's buffers: the lists' validity bits and i32 offsets, and their entries' keys and values.
#[pyclass(frozen, get_all)]
struct HeaderBuffers {
    validity: Py<Buffer>,
    offsets: Py<Buffer>,
    keys: Py<BinaryBuffers>,
    values: Py<BinaryBuffers>,
}

/// The rows `Consumer.take` hands over, column by column as Arrow buffers; `headers` is None without headers.
#[pyclass(frozen, get_all)]
struct TakenRows {
    rows: usize,
    keys: Py<BinaryBuffers>,
    values: Py<BinaryBuffers>,
    offsets: Py<Buffer>,
    timestamps_us: Py<Buffer>,
    timestamp_types: Py<Buffer>,
    headers: Option<Py<HeaderBuffers>>,
}

/// Properties for a librdkafka client, destroyed on drop unless a client took them over.
struct KafkaConfig(*mut rd::rd_kafka_conf_t);

impl KafkaConfig {
    fn new(properties: &[(String, String)]) -> PyResult<Self> {
        // SAFETY: rd_kafka_conf_new has no preconditions; the guard owns what it returns.
        let config = KafkaConfig(unsafe { rd::rd_kafka_conf_new() });
        for (name, value) in properties {
            config.set(name, value)?;
        }
        Ok(config)
    }

    fn set(&self, name: &str, value: &str) -> PyResult<()> {
        let c_name = c_string(name, "a Kafka property name")?;
        let c_value = c_string(value, &format!("the value of {name}"))?;
        let mut errstr = [0 as c_char; ERRSTR_SIZE];
        // SAFETY: the configuration is live, both strings are NUL-terminated and errstr holds ERRSTR_SIZE bytes.
        let result = unsafe {
            rd::rd_kafka_conf_set(self.0, c_name.as_ptr(), c_value.as_ptr(), errstr.as_mut_ptr(), ERRSTR_SIZE)
        };
        if result != rd::rd_kafka_conf_res_t::RD_KAFKA_CONF_OK {
            // the value may be a secret: name the property only
            return Err(PyValueError::new_err(format!("{name}: {}", error_text(&errstr))));
        }
        Ok(())
    }
}

impl Drop for KafkaConfig {
    fn drop(&mut self) {
        // SAFETY: the guard still owns the configuration (Handle::new forgets the guard once librdkafka took it).
        unsafe { rd::rd_kafka_conf_destroy(self.0) }
    }
}

/// Errors librdkafka reports about the client rather than a partition (authentication, TLS handshake, brokers
/// unreachable), as (code, text): it hands these to an error callback, or to its log without one, never to the
/// consumer among the messages.
type ClientErrors = Mutex<Vec<(i32, String)>>;

/// What the consumer's callbacks reach through its opaque: the errors they keep, the token provider they call.
#[derive(Default)]
struct ConsumerShared {
    client_errors: ClientErrors,
    token_provider: Option<Py<PyAny>>,
}

impl token::TokenSource for ConsumerShared {
    fn token_provider(&self) -> Option<&Py<PyAny>> {
        self.token_provider.as_ref()
    }
}

/// librdkafka's error callback, served on the thread that serves the consumer's queue (consume, close): keeps the
/// error for `Consumer.client_errors`.
///
/// # Safety
/// `opaque` is the `ConsumerShared` of the Handle whose client calls back; a non-null `reason` is NUL-terminated.
unsafe extern "C" fn keep_client_error(
    _kafka: *mut rd::rd_kafka_t,
    err: c_int,
    reason: *const c_char,
    opaque: *mut c_void,
) {
    let errors = &(*(opaque as *const ConsumerShared)).client_errors;
    errors.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push((err, cstr(reason)));
}

/// A librdkafka consumer and its consumer queue, closed (without committing) and freed on drop.
struct Handle {
    kafka: *mut rd::rd_kafka_t,
    queue: *mut rd::rd_kafka_queue_t,
    // boxed: librdkafka holds its address, which must stay put and outlive the client (fields drop after `drop`)
    shared: Box<ConsumerShared>,
}

impl Handle {
    fn new(config: KafkaConfig, token_provider: Option<Py<PyAny>>) -> PyResult<Self> {
        let shared = Box::new(ConsumerShared { client_errors: Mutex::default(), token_provider });
        // SAFETY: the configuration is live; the opaque stays valid as long as the client (see the field).
        unsafe {
            rd::rd_kafka_conf_set_error_cb(config.0, Some(keep_client_error));
            token::set_refresh_callback(config.0, &*shared);
            rd::rd_kafka_conf_set_opaque(config.0, &*shared as *const ConsumerShared as *mut c_void);
        }
        let mut errstr = [0 as c_char; ERRSTR_SIZE];
        let consumer = rd::rd_kafka_type_t::RD_KAFKA_CONSUMER;
        // SAFETY: the configuration is live and errstr holds ERRSTR_SIZE bytes.
        let kafka = unsafe { rd::rd_kafka_new(consumer, config.0, errstr.as_mut_ptr(), ERRSTR_SIZE) };
        if kafka.is_null() {
            return Err(PyValueError::new_err(error_text(&errstr))); // dropping the guard destroys the configuration
        }
        // librdkafka took the configuration over and frees it
        std::mem::forget(config);
        // SAFETY: `kafka` is a live consumer handle, destroyed here if no Handle is made of it.
        unsafe {
            if let Err(reason) = token::refresh_in_background(kafka, &*shared) {
                rd::rd_kafka_destroy(kafka);
                return Err(PyValueError::new_err(reason));
            }
            rd::rd_kafka_poll_set_consumer(kafka);
            let queue = rd::rd_kafka_queue_get_consumer(kafka);
            if queue.is_null() {
                // librdkafka gives a consumer without a group.id no consumer queue to read from
                rd::rd_kafka_destroy(kafka);
                return Err(PyValueError::new_err(
                    "group.id: the native consumer needs one (it never joins the group nor commits)",
                ));
            }
            Ok(Handle { kafka, queue, shared })
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let this = &*self;
        // without the GIL: closing waits on librdkafka's threads, one of which may wait on the GIL (token.rs)
        Python::with_gil(|py| {
            py.allow_threads(move || {
                let this = this; // the whole handle, which is Send, rather than its fields
                                 // SAFETY: the Handle owns both; librdkafka wants the queue destroyed before the consumer is closed.
                unsafe {
                    rd::rd_kafka_queue_destroy(this.queue);
                    rd::rd_kafka_consumer_close(this.kafka);
                    rd::rd_kafka_destroy(this.kafka);
                }
            })
        });
    }
}

// SAFETY: librdkafka's API is thread-safe, any call from any thread at any time, on a client and its queues; its
// one exception, concurrent batch consumes, cannot happen: `consume` takes `&mut self`, and pyo3 refuses a second
// mutable borrow of the same Consumer at run time (the call raises instead of running).
unsafe impl Send for Handle {}
// SAFETY: as for Send.
unsafe impl Sync for Handle {}

/// An error event librdkafka delivered among the records: (row it came before, topic, partition, code, text).
type ErrorEvent = (usize, Option<String>, i32, i32, String);

/// An assign-only consumer (it never joins its group, never commits) that reads into Arrow columns.
#[pyclass]
struct Consumer {
    handle: Option<Handle>,
    columns: Columns,
}

#[pymethods]
impl Consumer {
    /// `config`: librdkafka properties, already validated by the caller; `token_provider`: a callable that
    /// returns (token, expiry in seconds since the epoch, principal, extensions), for SASL OAUTHBEARER.
    #[new]
    #[pyo3(signature = (config, token_provider=None))]
    fn new(config: Vec<(String, String)>, token_provider: Option<Py<PyAny>>) -> PyResult<Self> {
        let handle = Handle::new(KafkaConfig::new(&config)?, token_provider)?;
        Ok(Consumer { handle: Some(handle), columns: Columns::new() })
    }

    /// Reads `(topic, partition, offset)` from now on, and nothing else.
    fn assign(&self, partitions: Vec<(String, i32, i64)>) -> PyResult<()> {
        let kafka = self.handle()?.kafka;
        let list = PartitionList::new(&partitions)?;
        // SAFETY: the handle and the list are live for the call.
        check(unsafe { rd::rd_kafka_assign(kafka, list.0) }, "assign")
    }

    fn unassign(&self) -> PyResult<()> {
        let kafka = self.handle()?.kafka;
        // SAFETY: the handle is live; a null list means no partitions.
        check(unsafe { rd::rd_kafka_assign(kafka, ptr::null()) }, "unassign")
    }

    /// The partitions assigned, as (topic, partition).
    fn assignment(&self) -> PyResult<Vec<(String, i32)>> {
        let kafka = self.handle()?.kafka;
        let mut list: *mut rd::rd_kafka_topic_partition_list_t = ptr::null_mut();
        // SAFETY: the handle is live; a list librdkafka hands over, even with an error, is ours to destroy.
        let err = unsafe { rd::rd_kafka_assignment(kafka, &mut list) };
        let list = PartitionList(list);
        check(err, "assignment")?;
        // SAFETY: a list's topics are NUL-terminated strings.
        Ok(list.entries().iter().map(|e| (unsafe { cstr(e.topic) }, e.partition)).collect())
    }

    /// The offset this consumer will fetch next for the partition (negative when it has none yet).
    fn position(&self, topic: String, partition: i32) -> PyResult<i64> {
        let kafka = self.handle()?.kafka;
        let list = PartitionList::new(&[(topic, partition, OFFSET_INVALID)])?;
        // SAFETY: the handle and the list are live for the call.
        check(unsafe { rd::rd_kafka_position(kafka, list.0) }, "position")?;
        Ok(list.entries()[0].offset)
    }

    /// (low, high) watermarks of the partition, asked of its leader.
    fn watermarks(&self, py: Python<'_>, topic: String, partition: i32, timeout_ms: i32) -> PyResult<(i64, i64)> {
        let handle = self.handle()?;
        let c_topic = c_string(&topic, "a topic name")?;
        let (err, low, high) = py.allow_threads(|| {
            let (mut low, mut high) = (0i64, 0i64);
            // SAFETY: the handle outlives the call (the Consumer stays borrowed); the topic is NUL-terminated.
            let err = unsafe {
                rd::rd_kafka_query_watermark_offsets(
                    handle.kafka,
                    c_topic.as_ptr(),
                    partition,
                    &mut low,
                    &mut high,
                    timeout_ms,
                )
            };
            (err, low, high)
        });
        check(err, "query watermark offsets")?;
        Ok((low, high))
    }

    /// Consumes up to `max_messages` within `timeout_ms` (librdkafka's batch consume, as confluent-kafka's
    /// consume()) and appends the records with offsets below `until` to the columns. Returns the number
    /// appended, the offset of the last one (-1 if none) and the error events among them, in order.
    fn consume(
        &mut self,
        py: Python<'_>,
        max_messages: usize,
        timeout_ms: i32,
        until: i64,
        with_headers: bool,
    ) -> PyResult<(usize, i64, Vec<ErrorEvent>)> {
        let handle = self.handle.as_ref().ok_or_else(closed)?;
        let columns = &mut self.columns;
        let result = py.allow_threads(move || {
            let mut messages: Vec<*mut rd::rd_kafka_message_t> = vec![ptr::null_mut(); max_messages.max(1)];
            // SAFETY: the queue outlives the call (the Consumer stays borrowed); `messages` has room for its length.
            let count = unsafe {
                rd::rd_kafka_consume_batch_queue(handle.queue, timeout_ms, messages.as_mut_ptr(), messages.len())
            };
            if count < 0 {
                // SAFETY: rd_kafka_last_error reads this thread's last error and has no preconditions.
                let err = unsafe { rd::rd_kafka_last_error() };
                return Err(format!("consume failed: {}", error_name(err)));
            }
            let (mut appended, mut last, mut events, mut failure) = (0usize, -1i64, Vec::new(), None);
            for &message in &messages[..count as usize] {
                // SAFETY: librdkafka filled the first `count` slots with live messages; each is destroyed once, last.
                unsafe {
                    let m = &*message;
                    if failure.is_none() {
                        if m.err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                            events.push(error_event(message, columns.rows()));
                        } else if m.offset < until {
                            match columns.push(message, with_headers) {
                                Ok(()) => {
                                    appended += 1;
                                    last = m.offset;
                                }
                                Err(e) => failure = Some(e),
                            }
                        }
                    }
                    rd::rd_kafka_message_destroy(message);
                }
            }
            match failure {
                Some(e) => Err(e),
                None => Ok((appended, last, events)),
            }
        });
        result.map_err(PyOSError::new_err)
    }

    /// The client-level errors librdkafka reported since the last call (while `consume` served the queue),
    /// oldest first, as (code, text).
    fn client_errors(&self) -> PyResult<Vec<(i32, String)>> {
        let errors = &self.handle()?.shared.client_errors;
        Ok(std::mem::take(&mut *errors.lock().unwrap_or_else(|poisoned| poisoned.into_inner())))
    }

    /// Rows and key/value/header bytes appended and not yet taken.
    fn pending(&self) -> (usize, usize) {
        (self.columns.rows(), self.columns.bytes())
    }

    /// Drops the appended rows from `rows` on (those after an error event that moved the read position).
    fn truncate(&mut self, rows: usize) {
        self.columns.truncate(rows);
    }

    /// Hands the appended rows over as Arrow buffers (the headers' only `with_headers`) and starts empty.
    fn take(&mut self, py: Python<'_>, with_headers: bool) -> PyResult<TakenRows> {
        let next = Columns::like(&self.columns);
        let c = std::mem::replace(&mut self.columns, next);
        let headers = if with_headers {
            Some(Py::new(
                py,
                HeaderBuffers {
                    validity: buffer(py, BufferData::Bytes(c.header_validity))?,
                    offsets: buffer(py, BufferData::I32(c.header_offsets))?,
                    keys: c.header_keys.into_buffers(py)?,
                    values: c.header_values.into_buffers(py)?,
                },
            )?)
        } else {
            None
        };
        Ok(TakenRows {
            rows: c.offsets.len(),
            keys: c.keys.into_buffers(py)?,
            values: c.values.into_buffers(py)?,
            offsets: buffer(py, BufferData::I64(c.offsets))?,
            timestamps_us: buffer(py, BufferData::I64(c.timestamps_us))?,
            timestamp_types: buffer(py, BufferData::I32(c.timestamp_types))?,
            headers,
        })
    }

    /// Leaves without committing (assign-only) and frees librdkafka's handle; later calls fail.
    fn close(&mut self, py: Python<'_>) {
        if let Some(handle) = self.handle.take() {
            py.allow_threads(move || drop(handle)); // closing waits on librdkafka's threads: let Python's run meanwhile
        }
    }
}

impl Consumer {
    fn handle(&self) -> PyResult<&Handle> {
        self.handle.as_ref().ok_or_else(closed)
    }
}

/// A topic partition list, destroyed on drop.
struct PartitionList(*mut rd::rd_kafka_topic_partition_list_t);

impl PartitionList {
    fn new(partitions: &[(String, i32, i64)]) -> PyResult<Self> {
        // SAFETY: rd_kafka_topic_partition_list_new has no preconditions; the guard owns what it returns.
        let list = PartitionList(unsafe { rd::rd_kafka_topic_partition_list_new(partitions.len() as c_int) });
        for (topic, partition, offset) in partitions {
            let c_topic = c_string(topic, "a topic name")?;
            // SAFETY: the list is live and the topic NUL-terminated (librdkafka copies it); `add` returns the entry.
            unsafe { (*rd::rd_kafka_topic_partition_list_add(list.0, c_topic.as_ptr(), *partition)).offset = *offset };
        }
        Ok(list)
    }

    fn entries(&self) -> &[rd::rd_kafka_topic_partition_t] {
        // SAFETY: a live list holds `cnt` entries at `elems`, which is null when the list was made empty.
        unsafe {
            let list = &*self.0;
            if list.elems.is_null() {
                &[]
            } else {
                std::slice::from_raw_parts(list.elems, list.cnt as usize)
            }
        }
    }
}

impl Drop for PartitionList {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the guard owns the list.
            unsafe { rd::rd_kafka_topic_partition_list_destroy(self.0) }
        }
    }
}

/// # Safety
/// `message` is a live message with an error.
unsafe fn error_event(message: *mut rd::rd_kafka_message_t, row: usize) -> ErrorEvent {
    let m = &*message;
    let topic = if m.rkt.is_null() { None } else { Some(cstr(rd::rd_kafka_topic_name(m.rkt))) };
    (row, topic, m.partition, m.err as i32, cstr(rd::rd_kafka_message_errstr(message)))
}

fn check(err: rd::rd_kafka_resp_err_t, what: &str) -> PyResult<()> {
    if err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
        Ok(())
    } else {
        Err(PyOSError::new_err(format!("{what} failed: {}", error_name(err))))
    }
}

/// librdkafka's description of an error code.
fn error_name(err: rd::rd_kafka_resp_err_t) -> String {
    // SAFETY: rd_kafka_err2str returns a static NUL-terminated string for any code.
    unsafe { cstr(rd::rd_kafka_err2str(err)) }
}

/// The text librdkafka wrote into an error buffer.
fn error_text(errstr: &[c_char; ERRSTR_SIZE]) -> String {
    // SAFETY: the buffer starts zeroed and librdkafka writes a NUL-terminated message into it.
    unsafe { cstr(errstr.as_ptr()) }
}

/// # Safety
/// A non-null `text` is a NUL-terminated string.
unsafe fn cstr(text: *const c_char) -> String {
    if text.is_null() {
        String::new()
    } else {
        CStr::from_ptr(text).to_string_lossy().into_owned()
    }
}

/// `text` as a C string; `what` names it in the error when it holds a NUL, where C would cut it short.
fn c_string(text: &str, what: &str) -> PyResult<CString> {
    CString::new(text).map_err(|_| PyValueError::new_err(format!("{what} holds a NUL character (\\x00)")))
}

fn closed() -> PyErr {
    PyOSError::new_err("the consumer is closed")
}

/// librdkafka's version, as "2.12.1".
#[pyfunction]
fn librdkafka_version() -> String {
    // SAFETY: rd_kafka_version_str returns a static NUL-terminated string.
    unsafe { cstr(rd::rd_kafka_version_str()) }
}

// the sink's Avro encoder: encode_avro and the AvroEncodePlan it follows
mod avro_encode;

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Consumer>()?;
    avro_encode::register(module)?;
    module.add_class::<Buffer>()?;
    module.add_class::<TakenRows>()?;
    module.add_class::<HeaderBuffers>()?;
    module.add_class::<BinaryBuffers>()?;
    module.add_class::<avro::AvroDecoder>()?;
    module.add_class::<producer::Producer>()?;
    module.add("KafkaCallError", module.py().get_type::<producer::KafkaCallError>())?;
    module.add_function(wrap_pyfunction!(librdkafka_version, module)?)?;
    // the package's version (Cargo.toml holds the same as kafkasource/_version.py; a test checks they agree)
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
