//! kafkasource's native extension, `kafkasource._native`: librdkafka's clients and Arrow's buffers in Rust, so the
//! read and write paths make no Python object per record, and the Avro codecs the formats use.
//!
//! - consumer.rs: the read path, a consumer that appends the records it consumes straight into Arrow column buffers
//!   (consumer/columns.rs);
//! - producer.rs: the write path, the reverse: a producer that hands librdkafka the rows of Arrow record batches;
//! - client.rs: how both make their librdkafka client; token.rs: their OAUTHBEARER tokens from a Python provider;
//!   partition_list.rs: librdkafka's topic partition list, which both hand it;
//! - arrow_buffers.rs: the Arrow buffers Rust hands to Python; arrow_ffi.rs: the Arrow C Data Interface, as Rust
//!   receives pyarrow's columns;
//! - avro.rs, avro_encode.rs: the Avro decoder and the sink's Avro encoder; json_decode.rs: the source's plain JSON
//!   decoder (Spark's from_json, for the records a strict reading settles); json_encode.rs: the sink's plain JSON
//!   encoder (Spark's to_json); arrow_columns.rs: the Arrow columns both decoders build.
//!
//! This module registers what Python sees and holds the C string conversions all of them use. librdkafka is linked
//! statically from the `rdkafka-sys` crate; the extension exports only its Python entry point, so this copy never
//! clashes with confluent-kafka's own librdkafka in the same process.
//!
//! The system allocator serves librdkafka: a faster one saved CPU only in a process that did nothing but read,
//! not through Spark (bench/TUNING.md).

use std::ffi::{c_char, CStr, CString};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rdkafka_sys as rd;

mod arrow_buffers;
// the Arrow columns the decoders build, and the payloads they read
mod arrow_columns;
mod arrow_ffi;
mod avro;
// the sink's Avro encoder: encode_avro and the AvroEncodePlan it follows
mod avro_encode;
mod client;
// the sink's plain JSON encoder: encode_json
mod consumer;
// the source's plain JSON decoder: JsonDecoder
mod json_decode;
mod json_encode;
mod partition_list;
mod producer;
mod token;

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

/// librdkafka's version, as "2.12.1".
#[pyfunction]
fn librdkafka_version() -> String {
    // SAFETY: rd_kafka_version_str returns a static NUL-terminated string.
    unsafe { cstr(rd::rd_kafka_version_str()) }
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<consumer::Consumer>()?;
    avro_encode::register(module)?;
    json_encode::register(module)?;
    module.add_class::<arrow_buffers::Buffer>()?;
    module.add_class::<consumer::TakenRows>()?;
    module.add_class::<consumer::HeaderBuffers>()?;
    module.add_class::<arrow_buffers::BinaryBuffers>()?;
    module.add_class::<avro::AvroDecoder>()?;
    module.add_class::<json_decode::JsonDecoder>()?;
    module.add_class::<producer::Producer>()?;
    module.add("KafkaCallError", module.py().get_type::<producer::KafkaCallError>())?;
    module.add_function(wrap_pyfunction!(librdkafka_version, module)?)?;
    // the package's version (Cargo.toml holds the same as kafkasource/_version.py; a test checks they agree)
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
