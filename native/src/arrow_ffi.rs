//! The Arrow C Data Interface (https://arrow.apache.org/docs/format/CDataInterface.html), as the write path
//! receives columns from pyarrow: the two structs, and taking them out of the capsules `__arrow_c_array__()`
//! returns, and a column read through them (Node: its type, buffers and children). The producer (producer.rs) and the
//! encoders (avro_encode.rs, json_encode.rs) read columns this way; the crate reads the structs itself rather than
//! through arrow-rs, whose build would outweigh the rest of the extension.

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

/// Err: why the column cannot be read this way (its encoder then leaves it to Python).
pub(crate) type Read<T> = Result<T, String>;

/// One array of the column and its type, borrowed from the imported structures.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    pub(crate) schema: &'a ArrowSchema,
    pub(crate) array: &'a ArrowArray,
}

/// # Safety
/// A non-null `text` is NUL-terminated and outlives 'a.
unsafe fn text<'a>(text: *const c_char) -> &'a str {
    if text.is_null() {
        ""
    } else {
        CStr::from_ptr(text).to_str().unwrap_or("")
    }
}

impl<'a> Node<'a> {
    pub(crate) fn format(&self) -> &'a str {
        // SAFETY: the producer's format string lives as long as the schema.
        unsafe { text(self.schema.format) }
    }

    pub(crate) fn name(&self) -> &'a str {
        // SAFETY: as for the format.
        unsafe { text(self.schema.name) }
    }

    pub(crate) fn len(&self) -> usize {
        self.array.length.max(0) as usize
    }

    pub(crate) fn offset(&self) -> usize {
        self.array.offset.max(0) as usize
    }

    /// Rows this array's buffers cover: its offset and length.
    pub(crate) fn extent(&self) -> usize {
        self.offset() + self.len()
    }

    pub(crate) fn children(&self) -> Read<Vec<Node<'a>>> {
        let (n, m) = (self.schema.n_children, self.array.n_children);
        if n != m || n < 0 || !self.schema.dictionary.is_null() || !self.array.dictionary.is_null() {
            return Err(format!("an Arrow array of type {} that is dictionary-encoded or malformed", self.format()));
        }
        (0..n as usize)
            .map(|i| {
                // SAFETY: both structures hold n_children live children (checked equal above).
                let (schema, array) = unsafe { (&**self.schema.children.add(i), &**self.array.children.add(i)) };
                Ok(Node { schema, array })
            })
            .collect()
    }

    /// Buffer `i`, as `bytes` bytes (empty when the buffer is absent and nothing is wanted from it).
    pub(crate) fn buffer(&self, i: usize, bytes: usize) -> Read<&'a [u8]> {
        if i as i64 >= self.array.n_buffers {
            return Err(format!("an Arrow array of type {} with too few buffers", self.format()));
        }
        // SAFETY: the array holds n_buffers buffer pointers; a present buffer holds what its type and extent say.
        let pointer = unsafe { *self.array.buffers.add(i) } as *const u8;
        if pointer.is_null() {
            return if bytes == 0 {
                Ok(&[])
            } else {
                Err(format!("an Arrow array of type {} lacks a buffer", self.format()))
            };
        }
        // SAFETY: as above.
        Ok(unsafe { std::slice::from_raw_parts(pointer, bytes) })
    }

    pub(crate) fn validity(&self) -> Read<Option<&'a [u8]>> {
        if self.array.null_count == 0 {
            return Ok(None);
        }
        // SAFETY: as in `buffer`.
        if self.array.n_buffers < 1 || unsafe { *self.array.buffers }.is_null() {
            return Ok(None);
        }
        Ok(Some(self.buffer(0, self.extent().div_ceil(8))?))
    }

    /// i32 or i64 offsets (buffer 1), per `large`.
    pub(crate) fn offsets(&self, large: bool) -> Read<Offsets<'a>> {
        if self.extent() == 0 {
            return Ok(Offsets { raw: &[], large }); // no row to read (an empty array may have no offsets buffer)
        }
        let width = if large { 8 } else { 4 };
        let raw = self.buffer(1, (self.extent() + 1) * width)?;
        Ok(Offsets { raw, large })
    }

    /// A fixed-width array's values (buffer 1), `width` bytes each.
    pub(crate) fn fixed(&self, width: usize) -> Read<&'a [u8]> {
        self.buffer(1, self.extent() * width)
    }

    /// A string or binary array's offsets and data.
    pub(crate) fn binary(&self) -> Read<Binary<'a>> {
        let format = self.format();
        if let Some(width) = format.strip_prefix("w:") {
            let width: usize = width.parse().map_err(|_| format!("Arrow type {format}"))?;
            return Ok(Binary { offsets: None, data: self.buffer(1, self.extent() * width)?, width });
        }
        if !matches!(format, "u" | "U" | "z" | "Z") {
            return Err(format!("Arrow type {format} where a string or binary is wanted"));
        }
        if self.extent() == 0 {
            return Ok(Binary { offsets: None, data: &[], width: 0 }); // no row to read
        }
        let offsets = self.offsets(matches!(format, "U" | "Z"))?;
        Ok(Binary { offsets: Some(offsets), data: self.buffer(2, offsets.at(self.extent()))?, width: 0 })
    }
}

#[derive(Clone, Copy)]
pub(crate) struct Offsets<'a> {
    raw: &'a [u8],
    large: bool,
}

impl Offsets<'_> {
    pub(crate) fn at(&self, i: usize) -> usize {
        if self.large {
            i64::from_le_bytes(self.raw[i * 8..i * 8 + 8].try_into().unwrap()).max(0) as usize
        } else {
            i32::from_le_bytes(self.raw[i * 4..i * 4 + 4].try_into().unwrap()).max(0) as usize
        }
    }
}

/// A string or binary array's values (variable width, or fixed-size binary of `width`).
#[derive(Clone, Copy)]
pub(crate) struct Binary<'a> {
    offsets: Option<Offsets<'a>>,
    data: &'a [u8],
    width: usize,
}

impl<'a> Binary<'a> {
    pub(crate) fn get(&self, p: usize) -> &'a [u8] {
        match self.offsets {
            Some(offsets) => &self.data[offsets.at(p)..offsets.at(p + 1)],
            None => &self.data[p * self.width..(p + 1) * self.width],
        }
    }
}
