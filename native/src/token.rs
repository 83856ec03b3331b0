//! OAUTHBEARER tokens from a Python token provider (kafkasource/cluster/sign_in/), for the native consumer and
//! producer alike.
//!
//! librdkafka asks for a token when a client starts and again before the current one expires (at 80% of its
//! lifetime). The refresh callback runs on librdkafka's background thread, not on whichever thread polls, so a
//! client that is not polled yet (a producer waiting in init_transactions, a consumer asking for watermarks) still
//! gets its token. The callback takes the GIL to call the provider; so every call that can wait on librdkafka's
//! threads (destroying a client among them) must be made without the GIL, or it could wait on a callback that
//! waits on it.

use std::ffi::{c_char, c_void};
use std::ptr;

use pyo3::prelude::*;
use rdkafka_sys as rd;

use crate::client::ERRSTR_SIZE;
use crate::cstr;

/// The opaque of a client that may sign in with a token provider.
pub trait TokenSource {
    fn token_provider(&self) -> Option<&Py<PyAny>>;
}

/// Has librdkafka ask `T`'s provider for tokens, where it has one; `T` must be the client's opaque.
///
/// # Safety
/// `config` is a live configuration whose opaque is (or will be) a `T` that outlives the client.
pub unsafe fn set_refresh_callback<T: TokenSource>(config: *mut rd::rd_kafka_conf_t, source: &T) {
    if source.token_provider().is_some() {
        rd::rd_kafka_conf_set_oauthbearer_token_refresh_cb(config, Some(refresh::<T>));
        // the callback's own queue, which `refresh_in_background` hands to the background thread
        rd::rd_kafka_conf_enable_sasl_queue(config, 1);
    }
}

/// Moves the refresh callback to librdkafka's background thread (see the module's comment); librdkafka's reason
/// when it cannot.
///
/// # Safety
/// `kafka` is a live client made of a configuration `set_refresh_callback` prepared.
pub unsafe fn refresh_in_background<T: TokenSource>(kafka: *mut rd::rd_kafka_t, source: &T) -> Result<(), String> {
    if source.token_provider().is_none() {
        return Ok(());
    }
    let error = rd::rd_kafka_sasl_background_callbacks_enable(kafka);
    if error.is_null() {
        return Ok(());
    }
    let reason = cstr(rd::rd_kafka_error_string(error));
    rd::rd_kafka_error_destroy(error);
    Err(format!("the token refresh could not run on librdkafka's background thread: {reason}"))
}

/// librdkafka's token refresh callback: the provider's (token, expiry in seconds since the epoch, principal, ...)
/// set as the client's token, or the provider's error as the refresh's failure.
///
/// # Safety
/// `opaque` is the `T` of the client that calls back.
unsafe extern "C" fn refresh<T: TokenSource>(kafka: *mut rd::rd_kafka_t, _config: *const c_char, opaque: *mut c_void) {
    let source = &*(opaque as *const T);
    let Some(provider) = source.token_provider() else { return };
    let answer = Python::with_gil(|py| -> Result<(String, f64, String), String> {
        let made = provider.call1(py, (py.None(),)).map_err(|e| e.value(py).to_string())?;
        let (token, expires_at, principal, _extensions): (String, f64, String, Bound<'_, PyAny>) =
            made.extract(py).map_err(|e| format!("the token provider's answer: {e}"))?;
        Ok((token, expires_at, principal))
    });
    let failure = match answer {
        Ok((token, expires_at, principal)) => set_token(kafka, &token, (expires_at * 1000.0) as i64, &principal),
        Err(reason) => Some(reason),
    };
    if let Some(reason) = failure {
        let reason = std::ffi::CString::new(reason.replace('\0', " ")).unwrap_or_default();
        rd::rd_kafka_oauthbearer_set_token_failure(kafka, reason.as_ptr());
    }
}

/// Sets the token; librdkafka's reason when it refuses it.
///
/// # Safety
/// `kafka` is a live client.
unsafe fn set_token(kafka: *mut rd::rd_kafka_t, token: &str, lifetime_ms: i64, principal: &str) -> Option<String> {
    let (Ok(token), Ok(principal)) = (std::ffi::CString::new(token), std::ffi::CString::new(principal)) else {
        return Some("the token provider's token or principal holds a NUL character".to_string());
    };
    let mut errstr = [0 as c_char; ERRSTR_SIZE];
    let err = rd::rd_kafka_oauthbearer_set_token(
        kafka,
        token.as_ptr(),
        lifetime_ms,
        principal.as_ptr(),
        ptr::null_mut(),
        0,
        errstr.as_mut_ptr(),
        ERRSTR_SIZE,
    );
    if err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
        None
    } else {
        Some(cstr(errstr.as_ptr()))
    }
}
