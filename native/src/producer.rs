//! kafkasource's native write path: a librdkafka producer that hands the rows of an Arrow record batch to
//! librdkafka straight from the batch's column buffers, so writing makes no Python object per record.
//!
//! Only the hot loop and the delivery reports live here. What a failure means (its message, whether it fails the
//! task), the delivery guarantee's waits and the transactions' order stay in Python (kafkasource/writing/), shared
//! with the confluent-kafka path: the Python wrapper (writing/native_producer.py) turns this producer's errors into
//! confluent-kafka's KafkaError with the same codes, which are librdkafka's in both.
//!
//! The batch comes through the Arrow C Data Interface (pyarrow's `__arrow_c_array__()` capsules) as a struct
//! array whose children are the sink's columns, named topic, key, value, headers and partition; the Python side
//! casts them to the layouts read here (see `Layout`, in producer/batch.rs).

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::ptr;
use std::sync::{Mutex, MutexGuard};

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use rdkafka_sys as rd;

use crate::arrow_ffi::{ArrowArray, ArrowSchema, Owned};
use crate::client::{self, check, error_name, error_text, Callbacks, ERRSTR_SIZE};
use crate::partition_list::PartitionList;
use crate::{c_string, cstr};

mod batch;

use batch::{batch_columns, Batch, Headers, Topics};

create_exception!(
    _native,
    KafkaCallError,
    PyException,
    "A librdkafka call of the native producer failed; args: (code, name, text, fatal, retriable, txn_requires_abort)."
);

/// Records handed over between two polls that serve delivery reports (and notice a failure early), as the Python
/// path's send loop.
const POLL_EVERY: usize = 1_000;
/// How long a produce waits for librdkafka to deliver some records when its queue is full, before trying again.
const QUEUE_FULL_WAIT_MS: c_int = 100;
/// librdkafka's RD_KAFKA_PARTITION_UA (a C macro, so not in the bindings): let the partitioner choose.
const PARTITION_UA: i32 = -1;

type Err = rd::rd_kafka_resp_err_t;
const NO_ERROR: Err = Err::RD_KAFKA_RESP_ERR_NO_ERROR;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A record that failed: (row of the task, code, librdkafka's error name, text, topic, partition, key + value
/// bytes) as Python receives it.
type FailureTuple = (usize, i32, String, String, String, i32, usize);

/// The first record whose delivery failed, or that produce refused.
struct Failure {
    row: usize,
    code: i32,
    name: String,
    text: String,
    topic: String,
    partition: i32,
    size: usize,
}

impl Failure {
    fn to_tuple(&self) -> FailureTuple {
        (self.row, self.code, self.name.clone(), self.text.clone(), self.topic.clone(), self.partition, self.size)
    }
}

/// What the delivery reports said since the last time Python took them.
#[derive(Default)]
struct Reports {
    delivered: u64,
    failed: u64,
    first: Option<Failure>,
}

/// What librdkafka's callbacks keep, on the thread that serves the producer (poll, flush, the produce loop).
#[derive(Default)]
struct Shared {
    reports: Mutex<Reports>,
    /// client-level errors (authentication, TLS, brokers down, a fatal error), as (code, text, fatal)
    client_errors: Mutex<Vec<(i32, String, bool)>>,
    /// what makes the OAUTHBEARER tokens, when the producer signs in with one (token.rs)
    token_provider: Option<Py<PyAny>>,
}

impl crate::token::TokenSource for Shared {
    fn token_provider(&self) -> Option<&Py<PyAny>> {
        self.token_provider.as_ref()
    }
}

/// librdkafka's delivery report callback: counts the record delivered or failed, keeping the first failure with
/// the task's row it came from (the message's opaque).
///
/// # Safety
/// `opaque` is the `Shared` of the ProducerHandle whose client calls back; `message` is a live message.
unsafe extern "C" fn on_delivery(
    _kafka: *mut rd::rd_kafka_t,
    message: *const rd::rd_kafka_message_t,
    opaque: *mut c_void,
) {
    let shared = &*(opaque as *const Shared);
    let m = &*message;
    let mut reports = lock(&shared.reports);
    if m.err == NO_ERROR {
        reports.delivered += 1;
        return;
    }
    reports.failed += 1;
    if reports.first.is_none() {
        let topic = if m.rkt.is_null() { String::new() } else { cstr(rd::rd_kafka_topic_name(m.rkt)) };
        reports.first = Some(Failure {
            row: m._private as usize,
            code: m.err as i32,
            name: error_code_name(m.err),
            // librdkafka's description of the code, as confluent-kafka's KafkaError of a delivery report says it
            text: error_name(m.err),
            topic,
            partition: m.partition,
            size: m.len + m.key_len,
        });
    }
}

/// librdkafka's error callback: keeps client-level errors for `Producer.client_errors`; a fatal one (a fenced
/// transactional producer, an idempotent producer the brokers refuse) as its cause, which librdkafka tells apart.
///
/// # Safety
/// As for `on_delivery`; a non-null `reason` is NUL-terminated.
unsafe extern "C" fn on_client_error(
    kafka: *mut rd::rd_kafka_t,
    err: c_int,
    reason: *const c_char,
    opaque: *mut c_void,
) {
    let shared = &*(opaque as *const Shared);
    let error = if err == Err::RD_KAFKA_RESP_ERR__FATAL as c_int {
        let mut errstr = [0 as c_char; ERRSTR_SIZE];
        let cause = rd::rd_kafka_fatal_error(kafka, errstr.as_mut_ptr(), ERRSTR_SIZE);
        (cause as i32, error_text(&errstr), true)
    } else {
        (err, cstr(reason), false)
    };
    lock(&shared.client_errors).push(error);
}

/// What librdkafka logs, printed as its own logger prints it, but for the lines a transactional producer logs when it
/// finds itself fenced: that is how the sink learns that another worker or attempt took its transactional.id, which
/// it handles (a kept producer is replaced) or tells in its own words (the task's error), so an error line there
/// would only alarm. Debug lines (kafka.debug) still show the transaction's steps.
unsafe extern "C" fn on_log(kafka: *const rd::rd_kafka_t, level: c_int, fac: *const c_char, buf: *const c_char) {
    if level < 7 && is_fence(&std::ffi::CStr::from_ptr(buf).to_string_lossy()) {
        return;
    }
    rd::rd_kafka_log_print(kafka, level, fac, buf);
}

/// Whether a log line says that a transactional producer was fenced by a newer one with its transactional.id.
fn is_fence(text: &str) -> bool {
    text.contains("fenced by a newer instance") || text.contains("fenced by newer producer instance")
}

/// A librdkafka producer and the topic handles it produced to, destroyed on drop without waiting on brokers.
struct ProducerHandle {
    kafka: *mut rd::rd_kafka_t,
    // boxed: librdkafka holds its address, which must stay put and outlive the client (fields drop after `drop`)
    shared: Box<Shared>,
    topics: HashMap<Vec<u8>, *mut rd::rd_kafka_topic_t>,
}

impl ProducerHandle {
    fn new(py: Python<'_>, settings: &[(String, String)], token_provider: Option<Py<PyAny>>) -> PyResult<Self> {
        let shared = Box::new(Shared { token_provider, ..Shared::default() });
        let callbacks = Callbacks { error: on_client_error, delivery: Some(on_delivery), log: Some(on_log) };
        let producer = rd::rd_kafka_type_t::RD_KAFKA_PRODUCER;
        // SAFETY: the opaque is what the callbacks expect, and stays valid as long as the client (see the field).
        let kafka = unsafe { client::new_client(py, producer, settings, &callbacks, &*shared)? };
        Ok(ProducerHandle { kafka, shared, topics: HashMap::new() })
    }

    /// The topic handle for `name`, made once per topic: producing by handle spares librdkafka a lookup of the
    /// topic by name per record.
    fn topic(&mut self, name: &[u8]) -> Result<*mut rd::rd_kafka_topic_t, String> {
        if let Some(&topic) = self.topics.get(name) {
            return Ok(topic);
        }
        let shown = String::from_utf8_lossy(name).into_owned();
        let c_name =
            std::ffi::CString::new(name).map_err(|_| format!("the topic name {shown:?} holds a NUL character"))?;
        // SAFETY: the client is live and the name NUL-terminated; a null configuration means the client's defaults.
        let topic = unsafe { rd::rd_kafka_topic_new(self.kafka, c_name.as_ptr(), ptr::null_mut()) };
        if topic.is_null() {
            // SAFETY: rd_kafka_last_error reads this thread's last error and has no preconditions.
            let err = unsafe { rd::rd_kafka_last_error() };
            return Err(format!("topic {shown}: {}", error_name(err)));
        }
        self.topics.insert(name.to_vec(), topic);
        Ok(topic)
    }

    fn poll(&self, timeout_ms: c_int) -> c_int {
        // SAFETY: the client is live.
        unsafe { rd::rd_kafka_poll(self.kafka, timeout_ms) }
    }

    /// Whether the produce loop should hand control back to Python: a delivery failed under a strict guarantee,
    /// or a client-level error waits to be judged (a refusal fails the task; brokers down do not).
    fn should_stop(&self, strict: bool) -> bool {
        (strict && lock(&self.shared.reports).failed > 0) || !lock(&self.shared.client_errors).is_empty()
    }

    fn in_flight(&self) -> usize {
        // SAFETY: the client is live.
        unsafe { rd::rd_kafka_outq_len(self.kafka) }.max(0) as usize
    }
}

impl Drop for ProducerHandle {
    fn drop(&mut self) {
        let this = &mut *self;
        // without the GIL: destroying joins librdkafka's threads, one of which may wait on the GIL (token.rs)
        Python::with_gil(|py| {
            py.allow_threads(move || {
                let this = this; // the whole handle, which is Send, rather than its fields
                                 // SAFETY: the handle owns the client and the topic handles, which go before it. Records still
                                 // queued or in flight are dropped without waiting (a purge that does not block, then a zero-timeout
                                 // flush that serves their reports), so closing never waits on brokers that may be gone.
                unsafe {
                    for (_, topic) in this.topics.drain() {
                        rd::rd_kafka_topic_destroy(topic);
                    }
                    let flags =
                        rd::RD_KAFKA_PURGE_F_QUEUE | rd::RD_KAFKA_PURGE_F_INFLIGHT | rd::RD_KAFKA_PURGE_F_NON_BLOCKING;
                    rd::rd_kafka_purge(this.kafka, flags);
                    rd::rd_kafka_flush(this.kafka, 0);
                    rd::rd_kafka_destroy(this.kafka);
                }
            })
        });
    }
}

// SAFETY: librdkafka's producer API is thread-safe (any call from any thread on a client and its topic handles);
// the topic cache is only changed through `&mut self`, which pyo3 hands to one call at a time.
unsafe impl Send for ProducerHandle {}
// SAFETY: as for Send.
unsafe impl Sync for ProducerHandle {}

/// A failed librdkafka call (an rd_kafka_error_t), read and destroyed.
struct CallError {
    err: Err,
    code: i32,
    name: String,
    text: String,
    fatal: bool,
    retriable: bool,
    txn_requires_abort: bool,
}

impl CallError {
    /// None for no error; else the error's parts, the error destroyed.
    ///
    /// # Safety
    /// A non-null `error` is a live error the caller owns.
    unsafe fn take(error: *mut rd::rd_kafka_error_t) -> Option<CallError> {
        if error.is_null() {
            return None;
        }
        let err = rd::rd_kafka_error_code(error);
        let found = CallError {
            err,
            code: err as i32,
            name: cstr(rd::rd_kafka_error_name(error)),
            text: cstr(rd::rd_kafka_error_string(error)),
            fatal: rd::rd_kafka_error_is_fatal(error) != 0,
            retriable: rd::rd_kafka_error_is_retriable(error) != 0,
            txn_requires_abort: rd::rd_kafka_error_txn_requires_abort(error) != 0,
        };
        rd::rd_kafka_error_destroy(error);
        Some(found)
    }

    fn into_py(self) -> PyErr {
        KafkaCallError::new_err((self.code, self.name, self.text, self.fatal, self.retriable, self.txn_requires_abort))
    }
}

fn call_result(error: *mut rd::rd_kafka_error_t) -> PyResult<()> {
    // SAFETY: librdkafka's transactional calls return an error the caller owns, or null.
    match unsafe { CallError::take(error) } {
        None => Ok(()),
        Some(e) => Err(e.into_py()),
    }
}

/// librdkafka's name of an error code, as "MSG_SIZE_TOO_LARGE" or "_QUEUE_FULL".
fn error_code_name(err: Err) -> String {
    // SAFETY: rd_kafka_err2name returns a static NUL-terminated string for any code.
    unsafe { cstr(rd::rd_kafka_err2name(err)) }
}

/// A record produce refused at once that fails the write: (row of the task, code, text, fatal, topic, partition,
/// key + value + header bytes).
type Refusal = (usize, i32, String, bool, String, i32, usize);

/// How far `produce_rows` got.
struct Progress {
    next: usize,
    skipped: usize,
    refusal: Option<Refusal>,
}

/// Hands one record to librdkafka, copying its bytes (RD_KAFKA_MSG_F_COPY: the Arrow buffers go back to Python).
///
/// # Safety
/// `kafka` and `topic` are live; `headers` is null or live (librdkafka takes it only on success).
unsafe fn produce_one(
    kafka: *mut rd::rd_kafka_t,
    topic: *mut rd::rd_kafka_topic_t,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    partition: i32,
    headers: *mut rd::rd_kafka_headers_t,
    row: usize,
) -> Option<CallError> {
    use rd::rd_kafka_vtype_t as V;
    type U = rd::rd_kafka_vu_s__bindgen_ty_1;
    let vu = |vtype, u| rd::rd_kafka_vu_t { vtype, u };
    let mem = |bytes: Option<&[u8]>| U {
        mem: match bytes {
            Some(b) => rd::rd_kafka_vu_s__bindgen_ty_1__bindgen_ty_1 { ptr: b.as_ptr() as *mut c_void, size: b.len() },
            None => rd::rd_kafka_vu_s__bindgen_ty_1__bindgen_ty_1 { ptr: ptr::null_mut(), size: 0 }, // a tombstone
        },
    };
    let mut args = [vu(V::RD_KAFKA_VTYPE_END, U { i: 0 }); 7];
    args[0] = vu(V::RD_KAFKA_VTYPE_RKT, U { rkt: topic });
    args[1] = vu(V::RD_KAFKA_VTYPE_PARTITION, U { i32_: partition });
    args[2] = vu(V::RD_KAFKA_VTYPE_MSGFLAGS, U { i: rd::RD_KAFKA_MSG_F_COPY });
    args[3] = vu(V::RD_KAFKA_VTYPE_VALUE, mem(value));
    // the record's row in the task comes back in its delivery report
    args[4] = vu(V::RD_KAFKA_VTYPE_OPAQUE, U { ptr: row as *mut c_void });
    let mut count = 5;
    if key.is_some() {
        args[count] = vu(V::RD_KAFKA_VTYPE_KEY, mem(key)); // no KEY at all is a null key
        count += 1;
    }
    if !headers.is_null() {
        args[count] = vu(V::RD_KAFKA_VTYPE_HEADERS, U { headers });
        count += 1;
    }
    CallError::take(rd::rd_kafka_produceva(kafka, args.as_ptr(), count))
}

/// Hands rows `start..` of the batch to librdkafka; stops early (at the row not yet handed over) when a delivery
/// failed under a strict guarantee, a client-level error waits for Python, or a record is refused at once under a
/// strict guarantee (or fatally).
fn produce_rows(
    handle: &mut ProducerHandle,
    batch: &Batch<'_>,
    start: usize,
    first_row: usize,
    strict: bool,
) -> Result<Progress, String> {
    let mut progress = Progress { next: start, skipped: 0, refusal: None };
    let mut last_topic: Option<(&[u8], *mut rd::rd_kafka_topic_t)> = None;
    while progress.next < batch.rows {
        let row = progress.next;
        let (topic_name, topic) = match &batch.topics {
            Topics::Fixed(topic, name) => (*name, *topic),
            Topics::Column(column) => {
                let name = column.bytes(row).ok_or("a null topic")?; // refused by the Python side before
                match last_topic {
                    Some((last, topic)) if last == name => (name, topic),
                    _ => {
                        let topic = handle.topic(name)?;
                        last_topic = Some((name, topic));
                        (name, topic)
                    }
                }
            }
        };
        let key = batch.keys.as_ref().and_then(|c| c.bytes(row));
        let value = batch.values.bytes(row);
        let partition = batch.partitions.as_ref().and_then(|c| c.int32(row)).unwrap_or(PARTITION_UA);
        let (headers, header_size) = match &batch.headers {
            Some(column) => Headers::of(column, row)?,
            None => (None, 0),
        };
        // SAFETY: the client and the topic handle are live; the headers are ours until produce takes them.
        match unsafe {
            produce_one(handle.kafka, topic, key, value, partition, Headers::ptr(&headers), first_row + row)
        } {
            None => Headers::handed_over(headers),
            Some(e) if e.code == Err::RD_KAFKA_RESP_ERR__QUEUE_FULL as i32 => {
                // librdkafka's queue is full (queue.buffering.max.*): let it deliver some first, then this row again
                drop(headers);
                handle.poll(QUEUE_FULL_WAIT_MS);
                if handle.should_stop(strict) {
                    return Ok(progress);
                }
                continue;
            }
            Some(e) => {
                let (mut code, mut text, mut fatal) =
                    (e.code, format!("Unable to produce message: {}", error_name(e.err)), e.fatal);
                if code == Err::RD_KAFKA_RESP_ERR__FATAL as i32 {
                    // produce only says _FATAL; the producer knows what the fatal error was (fenced, refused)
                    let mut errstr = [0 as c_char; ERRSTR_SIZE];
                    // SAFETY: the client is live and errstr holds ERRSTR_SIZE bytes.
                    let cause = unsafe { rd::rd_kafka_fatal_error(handle.kafka, errstr.as_mut_ptr(), ERRSTR_SIZE) };
                    if cause != NO_ERROR {
                        (code, text, fatal) = (cause as i32, error_text(&errstr), true);
                    }
                }
                if strict || fatal {
                    let size = key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len) + header_size;
                    let topic = String::from_utf8_lossy(topic_name).into_owned();
                    progress.refusal = Some((first_row + row, code, text, fatal, topic, partition, size));
                    return Ok(progress);
                }
                progress.skipped += 1; // deliveryGuarantee=none: counted as failed, and the write goes on
            }
        }
        progress.next += 1;
        if (progress.next - start).is_multiple_of(POLL_EVERY) {
            handle.poll(0);
            if handle.should_stop(strict) {
                return Ok(progress);
            }
        }
    }
    Ok(progress)
}

/// A librdkafka producer that writes Arrow record batches, counting delivery reports in Rust.
#[pyclass]
pub struct Producer {
    handle: Option<ProducerHandle>,
}

#[pymethods]
impl Producer {
    /// `config`: librdkafka properties, already validated by the caller; `token_provider`: a callable that
    /// returns (token, expiry in seconds since the epoch, principal, extensions), for SASL OAUTHBEARER.
    #[new]
    #[pyo3(signature = (config, token_provider=None))]
    fn new(py: Python<'_>, config: Vec<(String, String)>, token_provider: Option<Py<PyAny>>) -> PyResult<Self> {
        Ok(Producer { handle: Some(ProducerHandle::new(py, &config, token_provider)?) })
    }

    /// Hands rows `start..` of one record batch (the capsules of pyarrow's `__arrow_c_array__()`) to librdkafka:
    /// every row to `topic`, or to the batch's topic column when it is None. Row i of the batch is row
    /// `first_row + i` of the task, as its delivery report and any error tell. Returns (the row to resume from,
    /// which is the batch's length when all were handed over; rows refused at once and skipped, under
    /// strict=False; the refusal that stopped it, or None).
    #[pyo3(signature = (batch, topic, start, first_row, strict))]
    fn produce_batch(
        &mut self,
        py: Python<'_>,
        batch: (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>),
        topic: Option<String>,
        start: usize,
        first_row: usize,
        strict: bool,
    ) -> PyResult<(usize, usize, Option<Refusal>)> {
        let handle = self.handle.as_mut().ok_or_else(closed)?;
        let schema: Owned<ArrowSchema> = Owned::take(&batch.0, c"arrow_schema")?;
        let array: Owned<ArrowArray> = Owned::take(&batch.1, c"arrow_array")?;
        let result = py.allow_threads(|| {
            // SAFETY: both structs are live until their guards drop, after this closure.
            let columns = unsafe { batch_columns(handle, &schema.0, &array.0, topic.as_deref())? };
            produce_rows(handle, &columns, start, first_row, strict)
        });
        // the structs are released here, with the GIL held: releasing pyarrow's may drop Python objects
        drop((array, schema));
        let progress = result.map_err(PyValueError::new_err)?;
        Ok((progress.next, progress.skipped, progress.refusal))
    }

    /// Serves delivery reports and the error callback for up to `timeout_ms`; how many events it served.
    fn poll(&self, py: Python<'_>, timeout_ms: i32) -> PyResult<i32> {
        let handle = self.handle()?;
        Ok(py.allow_threads(|| handle.poll(timeout_ms)))
    }

    /// Waits up to `timeout_ms` for every record to be delivered or failed; how many are still in flight.
    fn flush(&self, py: Python<'_>, timeout_ms: i32) -> PyResult<usize> {
        let handle = self.handle()?;
        Ok(py.allow_threads(|| {
            // SAFETY: the client is live; a timeout is no error here (what is left in flight tells).
            unsafe { rd::rd_kafka_flush(handle.kafka, timeout_ms) };
            handle.in_flight()
        }))
    }

    /// Drops the records queued and in flight (their reports say _PURGE_QUEUE or _PURGE_INFLIGHT) without waiting.
    fn purge(&self) -> PyResult<()> {
        let handle = self.handle()?;
        let flags = rd::RD_KAFKA_PURGE_F_QUEUE | rd::RD_KAFKA_PURGE_F_INFLIGHT | rd::RD_KAFKA_PURGE_F_NON_BLOCKING;
        // SAFETY: the client is live.
        check(unsafe { rd::rd_kafka_purge(handle.kafka, flags) }, "purge")
    }

    /// Records not yet delivered or failed (and other requests librdkafka still has to serve).
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.handle()?.in_flight())
    }

    /// The delivery reports served since the last reset: (delivered, failed, the first failure or None).
    #[pyo3(signature = (reset=false))]
    fn deliveries(&self, reset: bool) -> PyResult<(u64, u64, Option<FailureTuple>)> {
        let mut reports = lock(&self.handle()?.shared.reports);
        let found = (reports.delivered, reports.failed, reports.first.as_ref().map(Failure::to_tuple));
        if reset {
            *reports = Reports::default();
        }
        Ok(found)
    }

    /// The client-level errors the error callback heard since the last call, oldest first, as (code, text,
    /// fatal); a fatal error is given as its cause.
    fn client_errors(&self) -> PyResult<Vec<(i32, String, bool)>> {
        Ok(std::mem::take(&mut *lock(&self.handle()?.shared.client_errors)))
    }

    /// One metadata request for the brokers alone, waited for up to `timeout_ms`; whether it was answered. Why a
    /// new transactional producer asks it first: `learn_brokers` in kafkasource/writing/transactional_pool.py.
    fn learn_brokers(&self, py: Python<'_>, timeout_ms: i32) -> PyResult<bool> {
        let handle = self.handle()?;
        let answered = py.allow_threads(|| {
            let mut metadata: *const rd::rd_kafka_metadata = std::ptr::null();
            // SAFETY: the client is live; all_topics 0 and no topic ask for the brokers (and known topics) alone,
            // and the metadata librdkafka hands back is freed here.
            let err =
                unsafe { rd::rd_kafka_metadata(handle.kafka, 0, std::ptr::null_mut(), &mut metadata, timeout_ms) };
            if !metadata.is_null() {
                unsafe { rd::rd_kafka_metadata_destroy(metadata) };
            }
            err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR
        });
        Ok(answered)
    }

    fn init_transactions(&self, py: Python<'_>, timeout_ms: i32) -> PyResult<()> {
        let handle = self.handle()?;
        // SAFETY: the client is live; the call returns an error we own, or null.
        let error = py.allow_threads(|| ErrorPtr(unsafe { rd::rd_kafka_init_transactions(handle.kafka, timeout_ms) }));
        call_result(error.0)
    }

    fn begin_transaction(&self) -> PyResult<()> {
        let handle = self.handle()?;
        // SAFETY: the client is live (begin only changes local state: no wait).
        call_result(unsafe { rd::rd_kafka_begin_transaction(handle.kafka) })
    }

    /// Commits `offset` (with `metadata`) of the topic's partition for group `group_id` in the open transaction;
    /// no consumer is needed: librdkafka makes the group's metadata from its id alone.
    #[pyo3(signature = (topic, partition, offset, metadata, group_id, timeout_ms))]
    #[allow(clippy::too_many_arguments)]
    fn send_offsets_to_transaction(
        &self,
        py: Python<'_>,
        topic: String,
        partition: i32,
        offset: i64,
        metadata: Option<String>,
        group_id: String,
        timeout_ms: i32,
    ) -> PyResult<()> {
        let handle = self.handle()?;
        let list = PartitionList::new(&[(topic, partition, offset)])?;
        if let Some(text) = metadata {
            let text = c_string(&text, "the marker's metadata")?;
            // with its NUL, as confluent-kafka commits metadata: readers through confluent-kafka (the Python path's
            // marker check among them) read it as a C string, and librdkafka copies a committed offset's metadata
            // by its size alone
            let bytes = text.as_bytes_with_nul();
            // SAFETY: the list has its one entry; librdkafka frees an entry's metadata with its own allocator
            // when the list is destroyed, so the copy is made with it.
            unsafe {
                let entry = &mut *(*list.0).elems;
                let copy = rd::rd_kafka_mem_malloc(handle.kafka, bytes.len());
                ptr::copy_nonoverlapping(bytes.as_ptr(), copy as *mut u8, bytes.len());
                entry.metadata = copy;
                entry.metadata_size = bytes.len();
            }
        }
        let group = c_string(&group_id, "a group id")?;
        // SAFETY: the id is NUL-terminated; the metadata is ours to destroy.
        let metadata = GroupMetadata(unsafe { rd::rd_kafka_consumer_group_metadata_new(group.as_ptr()) });
        let args = OffsetsCall { list: list.0, metadata: metadata.0 };
        // a method call takes the whole struct into the closure (a field use would take only the raw pointer)
        let error = py.allow_threads(move || args.send(handle.kafka, timeout_ms));
        drop((list, metadata));
        call_result(error.0)
    }

    fn commit_transaction(&self, py: Python<'_>, timeout_ms: i32) -> PyResult<()> {
        let handle = self.handle()?;
        // SAFETY: the client is live; the call returns an error we own, or null.
        let error = py.allow_threads(|| ErrorPtr(unsafe { rd::rd_kafka_commit_transaction(handle.kafka, timeout_ms) }));
        call_result(error.0)
    }

    fn abort_transaction(&self, py: Python<'_>, timeout_ms: i32) -> PyResult<()> {
        let handle = self.handle()?;
        // SAFETY: the client is live; the call returns an error we own, or null.
        let error = py.allow_threads(|| ErrorPtr(unsafe { rd::rd_kafka_abort_transaction(handle.kafka, timeout_ms) }));
        call_result(error.0)
    }

    /// Drops what is still queued or in flight and frees librdkafka's handle without waiting on brokers; later
    /// calls fail.
    fn close(&mut self, py: Python<'_>) {
        if let Some(handle) = self.handle.take() {
            py.allow_threads(move || drop(handle)); // destroying joins librdkafka's threads: let Python's run meanwhile
        }
    }
}

impl Producer {
    fn handle(&self) -> PyResult<&ProducerHandle> {
        self.handle.as_ref().ok_or_else(closed)
    }
}

/// An rd_kafka_error_t on its way out of a call made without the GIL.
struct ErrorPtr(*mut rd::rd_kafka_error_t);

// SAFETY: an error object is plain data the caller owns; it only moves from the call's thread to the caller's.
unsafe impl Send for ErrorPtr {}

/// A consumer group's metadata for send_offsets_to_transaction, destroyed on drop.
struct GroupMetadata(*mut rd::rd_kafka_consumer_group_metadata_t);

impl Drop for GroupMetadata {
    fn drop(&mut self) {
        // SAFETY: the guard owns the metadata.
        unsafe { rd::rd_kafka_consumer_group_metadata_destroy(self.0) }
    }
}

/// What send_offsets_to_transaction hands librdkafka, taken into a call made without the GIL.
#[derive(Clone, Copy)]
struct OffsetsCall {
    list: *mut rd::rd_kafka_topic_partition_list_t,
    metadata: *mut rd::rd_kafka_consumer_group_metadata_t,
}

impl OffsetsCall {
    fn send(self, kafka: *mut rd::rd_kafka_t, timeout_ms: i32) -> ErrorPtr {
        // SAFETY: the client, the list and the group metadata are live for the call (their guards drop after it).
        ErrorPtr(unsafe { rd::rd_kafka_send_offsets_to_transaction(kafka, self.list, self.metadata, timeout_ms) })
    }
}

// SAFETY: librdkafka only reads both during the call, and nothing else touches them meanwhile.
unsafe impl Send for OffsetsCall {}

fn closed() -> PyErr {
    PyOSError::new_err("the producer is closed")
}
