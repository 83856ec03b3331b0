//! Making a librdkafka client, the consumer's (consumer.rs) and the producer's (producer.rs) alike: its
//! configuration from the settings Python hands over, the callbacks and the opaque they reach, the token refresh of
//! a client that signs in with a token provider (token.rs), and librdkafka's errors in Python's terms.

use std::ffi::{c_char, c_int, c_void};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use rdkafka_sys as rd;

use crate::token::{self, TokenSource};
use crate::{c_string, cstr};

/// The size of the buffers librdkafka writes an error's text into.
pub(crate) const ERRSTR_SIZE: usize = 512;

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
        // SAFETY: the guard still owns the configuration (new_client forgets the guard once librdkafka took it).
        unsafe { rd::rd_kafka_conf_destroy(self.0) }
    }
}

/// librdkafka's error callback: client-level errors (authentication, TLS handshake, brokers unreachable), which
/// it would only log without one.
pub(crate) type ErrorCallback = unsafe extern "C" fn(*mut rd::rd_kafka_t, c_int, *const c_char, *mut c_void);
/// librdkafka's delivery report callback, per record a producer handed over.
pub(crate) type DeliveryCallback =
    unsafe extern "C" fn(*mut rd::rd_kafka_t, *const rd::rd_kafka_message_t, *mut c_void);
/// librdkafka's log callback, in place of its own printer.
pub(crate) type LogCallback = unsafe extern "C" fn(*const rd::rd_kafka_t, c_int, *const c_char, *const c_char);

/// The callbacks a kind of client sets besides the token refresh; those given an opaque get the client's.
pub(crate) struct Callbacks {
    pub(crate) error: ErrorCallback,
    pub(crate) delivery: Option<DeliveryCallback>,
    // None keeps librdkafka's own printer (setting a null log callback would silence the client)
    pub(crate) log: Option<LogCallback>,
}

/// A librdkafka client of `kind` made of `settings` (librdkafka properties, already validated by the caller), whose
/// callbacks reach `opaque`, and which asks the opaque's token provider for its tokens when it has one.
///
/// # Safety
/// `opaque` is what `callbacks` expect, stays put and outlives the client: the caller keeps it boxed until after
/// destroying the client.
pub(crate) unsafe fn new_client<T: TokenSource>(
    py: Python<'_>,
    kind: rd::rd_kafka_type_t,
    settings: &[(String, String)],
    callbacks: &Callbacks,
    opaque: &T,
) -> PyResult<*mut rd::rd_kafka_t> {
    let config = KafkaConfig::new(settings)?;
    // the configuration is live; the opaque outlives the client (the caller's promise)
    token::set_refresh_callback(config.0, opaque);
    rd::rd_kafka_conf_set_error_cb(config.0, Some(callbacks.error));
    if let Some(delivery) = callbacks.delivery {
        rd::rd_kafka_conf_set_dr_msg_cb(config.0, Some(delivery));
    }
    if let Some(log) = callbacks.log {
        rd::rd_kafka_conf_set_log_cb(config.0, Some(log));
    }
    rd::rd_kafka_conf_set_opaque(config.0, opaque as *const T as *mut c_void);
    let mut errstr = [0 as c_char; ERRSTR_SIZE];
    // the configuration is live and errstr holds ERRSTR_SIZE bytes
    let kafka = rd::rd_kafka_new(kind, config.0, errstr.as_mut_ptr(), ERRSTR_SIZE);
    if kafka.is_null() {
        return Err(PyValueError::new_err(error_text(&errstr))); // dropping the guard destroys the configuration
    }
    // librdkafka took the configuration over and frees it
    std::mem::forget(config);
    if let Err(reason) = token::refresh_in_background(kafka, opaque) {
        destroy(py, kafka);
        return Err(PyValueError::new_err(reason));
    }
    Ok(kafka)
}

/// Destroys a client that no handle owns yet (one whose making failed half way), without the GIL: destroying
/// joins librdkafka's threads, one of which may wait on the GIL (token.rs).
///
/// # Safety
/// `kafka` is a live client that nothing else uses or destroys.
pub(crate) unsafe fn destroy(py: Python<'_>, kafka: *mut rd::rd_kafka_t) {
    let doomed = Doomed(kafka);
    py.allow_threads(move || doomed.destroy());
}

/// A client on its way to be destroyed without the GIL.
struct Doomed(*mut rd::rd_kafka_t);

impl Doomed {
    // a method, so the closure takes the whole struct (a field use would take only the raw pointer)
    fn destroy(self) {
        // SAFETY: `destroy`'s caller hands over a live client that nothing else uses.
        unsafe { rd::rd_kafka_destroy(self.0) }
    }
}

// SAFETY: librdkafka's API is thread-safe; the client only moves to the thread that destroys it.
unsafe impl Send for Doomed {}

/// Ok for no error, else OSError("<what> failed: <librdkafka's description>").
pub(crate) fn check(err: rd::rd_kafka_resp_err_t, what: &str) -> PyResult<()> {
    if err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
        Ok(())
    } else {
        Err(PyOSError::new_err(format!("{what} failed: {}", error_name(err))))
    }
}

/// librdkafka's description of an error code.
pub(crate) fn error_name(err: rd::rd_kafka_resp_err_t) -> String {
    // SAFETY: rd_kafka_err2str returns a static NUL-terminated string for any code.
    unsafe { cstr(rd::rd_kafka_err2str(err)) }
}

/// The text librdkafka wrote into an error buffer.
pub(crate) fn error_text(errstr: &[c_char; ERRSTR_SIZE]) -> String {
    // SAFETY: the buffer starts zeroed and librdkafka writes a NUL-terminated message into it.
    unsafe { cstr(errstr.as_ptr()) }
}
