//! The Arrow C Data Interface (https://arrow.apache.org/docs/format/CDataInterface.html), as the write path
//! receives columns from pyarrow: the two structs, and taking them out of the capsules `__arrow_c_array__()`
//! returns. Both the producer (producer.rs) and the Avro encoder (avro_encode.rs) read columns this way; the crate
//! reads the structs itself rather than through arrow-rs, whose build would outweigh the rest of the extension.

use std::ffi::{c_char, c_void, CStr};
use std::ptr;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// struct ArrowSchema of the Arrow C Data Interface.
#[repr(C)]
pub(crate) struct ArrowSchema {
    pub(crate) format: *const c_char,
    pub(crate) name: *const c_char,
    pub(crate) metadata: *const c_char,
    pub(crate) flags: i64,
    pub(crate) n_children: i64,
    pub(crate) children: *mut *mut ArrowSchema,
    pub(crate) dictionary: *mut ArrowSchema,
    pub(crate) release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    pub(crate) private_data: *mut c_void,
}

/// struct ArrowArray of the Arrow C Data Interface.
#[repr(C)]
pub(crate) struct ArrowArray {
    pub(crate) length: i64,
    pub(crate) null_count: i64,
    pub(crate) offset: i64,
    pub(crate) n_buffers: i64,
    pub(crate) n_children: i64,
    pub(crate) buffers: *mut *const c_void,
    pub(crate) children: *mut *mut ArrowArray,
    pub(crate) dictionary: *mut ArrowArray,
    pub(crate) release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    pub(crate) private_data: *mut c_void,
}

/// A C Data Interface struct moved out of its capsule, as the interface allows (a bitwise copy, the source marked
/// released so the capsule's destructor leaves it be): ours, released once on drop.
pub(crate) struct Owned<T: Releasable>(pub(crate) Box<T>);

pub(crate) trait Releasable {
    fn release(&mut self) -> &mut Option<unsafe extern "C" fn(*mut Self)>;
}

impl Releasable for ArrowSchema {
    fn release(&mut self) -> &mut Option<unsafe extern "C" fn(*mut Self)> {
        &mut self.release
    }
}

impl Releasable for ArrowArray {
    fn release(&mut self) -> &mut Option<unsafe extern "C" fn(*mut Self)> {
        &mut self.release
    }
}

impl<T: Releasable> Owned<T> {
    /// The struct in `capsule`, which must carry `name` ("arrow_schema" or "arrow_array").
    pub(crate) fn take(capsule: &Bound<'_, PyCapsule>, name: &CStr) -> PyResult<Self> {
        if capsule.name()? != Some(name) {
            return Err(PyValueError::new_err(format!("expected a PyCapsule named {}", name.to_string_lossy())));
        }
        let source = capsule.pointer() as *mut T;
        if source.is_null() {
            return Err(PyValueError::new_err("an invalid PyCapsule"));
        }
        // SAFETY: a capsule of this name holds a live struct of this kind; after the copy the source is marked
        // released, so only the copy is ever released.
        unsafe {
            let mut moved = Box::new(ptr::read(source));
            *(*source).release() = None;
            if moved.release().is_none() {
                return Err(PyValueError::new_err("the Arrow capsule was already consumed"));
            }
            Ok(Owned(moved))
        }
    }
}

impl<T: Releasable> Drop for Owned<T> {
    fn drop(&mut self) {
        if let Some(release) = self.0.release().take() {
            let this: *mut T = &mut *self.0;
            // SAFETY: a live struct is released once, through its own callback, which frees its children too.
            unsafe { release(this) }
        }
    }
}

// SAFETY: the structs describe immutable Arrow buffers; nothing reads them concurrently with their release, which
// happens on drop, after the work done without the GIL has ended (produce_batch, encode_avro).
unsafe impl Send for ArrowArray {}
// SAFETY: as for Send.
unsafe impl Sync for ArrowArray {}
// SAFETY: as for ArrowArray.
unsafe impl Send for ArrowSchema {}
// SAFETY: as for Send.
unsafe impl Sync for ArrowSchema {}
