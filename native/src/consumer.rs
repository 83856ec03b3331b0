//! kafkasource's native read path: a librdkafka consumer that appends the records it consumes straight into
//! Arrow column buffers (consumer/columns.rs), so reading makes no Python object per record.
//!
//! Only the hot loop lives here. What to do about an error event (skip lost records, raise, retry), when a
//! range is done and how positions move stay in Python (kafkasource/reading/task_reader.py), shared with the
//! pure-Python path.

use std::ffi::{c_char, c_int, c_void};
use std::ptr;
use std::sync::Mutex;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use rdkafka_sys as rd;

use crate::client::{self, check, error_name, Callbacks};
use crate::partition_list::PartitionList;
use crate::token;
use crate::{c_string, cstr};

mod columns;

use columns::Columns;
pub(crate) use columns::{HeaderBuffers, TakenRows};

/// librdkafka's "no offset": what `position` sends, to be overwritten with the partition's position.
const OFFSET_INVALID: i64 = rd::RD_KAFKA_OFFSET_INVALID as i64;

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
    fn new(py: Python<'_>, settings: &[(String, String)], token_provider: Option<Py<PyAny>>) -> PyResult<Self> {
        let shared = Box::new(ConsumerShared { client_errors: Mutex::default(), token_provider });
        let callbacks = Callbacks { error: keep_client_error, delivery: None, log: None };
        let consumer = rd::rd_kafka_type_t::RD_KAFKA_CONSUMER;
        // SAFETY: the opaque is what keep_client_error expects, and stays valid as long as the client (see the field).
        let kafka = unsafe { client::new_client(py, consumer, settings, &callbacks, &*shared)? };
        // SAFETY: `kafka` is a live consumer handle, destroyed here if no Handle is made of it.
        unsafe {
            rd::rd_kafka_poll_set_consumer(kafka);
            let queue = rd::rd_kafka_queue_get_consumer(kafka);
            if queue.is_null() {
                // librdkafka gives a consumer without a group.id no consumer queue to read from
                client::destroy(py, kafka);
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
pub(crate) struct Consumer {
    handle: Option<Handle>,
    columns: Columns,
}

#[pymethods]
impl Consumer {
    /// `config`: librdkafka properties, already validated by the caller; `token_provider`: a callable that
    /// returns (token, expiry in seconds since the epoch, principal, extensions), for SASL OAUTHBEARER.
    #[new]
    #[pyo3(signature = (config, token_provider=None))]
    fn new(py: Python<'_>, config: Vec<(String, String)>, token_provider: Option<Py<PyAny>>) -> PyResult<Self> {
        let handle = Handle::new(py, &config, token_provider)?;
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
        std::mem::replace(&mut self.columns, next).into_taken(py, with_headers)
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

/// # Safety
/// `message` is a live message with an error.
unsafe fn error_event(message: *mut rd::rd_kafka_message_t, row: usize) -> ErrorEvent {
    let m = &*message;
    let topic = if m.rkt.is_null() { None } else { Some(cstr(rd::rd_kafka_topic_name(m.rkt))) };
    (row, topic, m.partition, m.err as i32, cstr(rd::rd_kafka_message_errstr(message)))
}

fn closed() -> PyErr {
    PyOSError::new_err("the consumer is closed")
}
