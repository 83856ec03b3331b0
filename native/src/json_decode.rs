//! Plain JSON payloads decoded straight into Arrow column buffers, with the rows Spark's from_json gives, for the
//! records a strict reading settles.
//!
//! Spark reads JSON by many rules: Jackson's lenient grammar under the json.* flags, a field that fails leaves its
//! struct partly filled, a string read as a timestamp in a dozen shapes, a duplicate field read twice. The Python
//! decoder (kafkasource/formats/plain_json) keeps all of them and is checked against Spark value by value. This
//! decoder keeps only the path nearly every record takes: valid UTF-8, strict JSON (RFC 8259), each value of the
//! kind its field's type reads (a number for a number, a string for a string or a timestamp), no field twice. Any
//! other record is cut back and handed over by its row to the Python decoder, so that the two together give the
//! Python decoder's rows exactly, at native speed wherever the data is plain. A reading this decoder is unsure of is
//! always handed over, never guessed.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arrow_buffers::set_bit;
use crate::arrow_columns::{offset, Column, Payloads};

/// The record leaves the native path: the Python decoder reads it.
struct Handover;

type Step<T> = Result<T, Handover>;

/// Containers nested deeper hand the record over (Jackson's own limit, 1000, is the Python decoder's to keep).
const MAX_DEPTH: usize = 64;
const MICROS_PER_SECOND: i128 = 1_000_000;
const MICROS_PER_DAY: i128 = 86_400 * MICROS_PER_SECOND;

/// How a JSON value is read into its column: the Spark type's reading, for the kinds of token this decoder takes.
enum Plan {
    Bool,
    /// a whole number within [low, high]
    Integer {
        low: i64,
        high: i64,
    },
    Float32,
    Float64,
    Text,
    Timestamp,
    TimestampNtz,
    Date,
    /// a type whose values the Python decoder reads (decimal, binary): any value but null hands the record over
    Elsewhere,
    /// the fields in column order; a field without a name is never read (the corrupt-record column)
    Struct(Vec<(Option<Vec<u8>>, Plan)>),
    Array(Box<Plan>),
    Map(Box<Plan>),
}

impl Plan {
    /// The plan kafkasource.formats.plain_json.native_decode describes as nested tuples.
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Plan> {
        let t = obj.downcast::<PyTuple>()?;
        let tag: String = t.get_item(0)?.extract()?;
        Ok(match tag.as_str() {
            "bool" => Plan::Bool,
            "integer" => Plan::Integer { low: t.get_item(1)?.extract()?, high: t.get_item(2)?.extract()? },
            "float32" => Plan::Float32,
            "float64" => Plan::Float64,
            "text" => Plan::Text,
            "timestamp" => Plan::Timestamp,
            "timestamp_ntz" => Plan::TimestampNtz,
            "date" => Plan::Date,
            "elsewhere" => Plan::Elsewhere,
            "struct" => Plan::Struct(
                t.get_item(1)?
                    .try_iter()?
                    .map(|field| {
                        let (name, plan): (Option<String>, Bound<'_, PyAny>) = field?.extract()?;
                        Ok((name.map(String::into_bytes), Plan::from_py(&plan)?))
                    })
                    .collect::<PyResult<_>>()?,
            ),
            "array" => Plan::Array(Box::new(Plan::from_py(&t.get_item(1)?)?)),
            "map" => Plan::Map(Box::new(Plan::from_py(&t.get_item(1)?)?)),
            other => return Err(PyValueError::new_err(format!("unknown plain JSON plan {other:?}"))),
        })
    }
}

/// Where a string's contents are: as they stand in the text (no escape in them), or unescaped into the scratch.
enum Str {
    Raw(usize, usize),
    Scratch,
}

/// One payload's JSON text, read from the front.
struct Text<'a> {
    b: &'a [u8],
    pos: usize,
    depth: usize,
    scratch: Vec<u8>,
}

fn is_digit(byte: Option<&u8>) -> bool {
    byte.is_some_and(u8::is_ascii_digit)
}

impl<'a> Text<'a> {
    fn peek(&self) -> Step<u8> {
        self.b.get(self.pos).copied().ok_or(Handover)
    }

    fn whitespace(&mut self) {
        while matches!(self.b.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// The next byte after whitespace, consumed.
    fn next_byte(&mut self) -> Step<u8> {
        self.whitespace();
        let byte = self.peek()?;
        self.pos += 1;
        Ok(byte)
    }

    fn literal(&mut self, word: &[u8]) -> Step<()> {
        if self.b[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Handover)
        }
    }

    fn enter(&mut self) -> Step<()> {
        self.depth += 1;
        self.pos += 1;
        if self.depth > MAX_DEPTH {
            return Err(Handover);
        }
        Ok(())
    }

    fn bytes(&self, s: &Str) -> &[u8] {
        match *s {
            Str::Raw(start, end) => &self.b[start..end],
            Str::Scratch => &self.scratch,
        }
    }

    /// A string at the opening quote. An escaped surrogate is handed over: Java's encoder writes a lone one as '?',
    /// which the Python decoder keeps.
    fn string(&mut self) -> Step<Str> {
        let b = self.b;
        let start = self.pos + 1;
        let mut i = start;
        loop {
            match *b.get(i).ok_or(Handover)? {
                b'"' => {
                    self.pos = i + 1;
                    return Ok(Str::Raw(start, i));
                }
                b'\\' => break,
                c if c < 0x20 => return Err(Handover),
                _ => i += 1,
            }
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&b[start..i]);
        loop {
            match *b.get(i).ok_or(Handover)? {
                b'"' => {
                    self.pos = i + 1;
                    return Ok(Str::Scratch);
                }
                b'\\' => {
                    let unescaped = match *b.get(i + 1).ok_or(Handover)? {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let hex = b.get(i + 2..i + 6).ok_or(Handover)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return Err(Handover);
                            }
                            let code = hex.iter().fold(0u32, |n, &h| n * 16 + (h as char).to_digit(16).unwrap_or(0));
                            let c = char::from_u32(code).ok_or(Handover)?; // None for a surrogate
                            self.scratch.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                            i += 6;
                            continue;
                        }
                        _ => return Err(Handover),
                    };
                    self.scratch.push(unescaped);
                    i += 2;
                }
                c if c < 0x20 => return Err(Handover),
                c => {
                    self.scratch.push(c);
                    i += 1;
                }
            }
        }
    }

    /// A number in strict JSON's grammar: its text, and whether it is whole (no fraction, no exponent). What Jackson
    /// might read on as the same number (a digit after a leading zero, a second point) is handed over.
    fn number(&mut self) -> Step<(&'a str, bool)> {
        let b = self.b;
        let start = self.pos;
        let mut i = start + usize::from(b.get(start) == Some(&b'-'));
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while is_digit(b.get(i)) {
                    i += 1;
                }
            }
            _ => return Err(Handover),
        }
        let mut whole = true;
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !is_digit(b.get(i)) {
                return Err(Handover);
            }
            while is_digit(b.get(i)) {
                i += 1;
            }
            whole = false;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !is_digit(b.get(i)) {
                return Err(Handover);
            }
            while is_digit(b.get(i)) {
                i += 1;
            }
            whole = false;
        }
        if matches!(b.get(i), Some(b'0'..=b'9' | b'.' | b'e' | b'E')) {
            return Err(Handover);
        }
        self.pos = i;
        // the bytes are ASCII digits and signs: UTF-8
        Ok((std::str::from_utf8(&b[start..i]).map_err(|_| Handover)?, whole))
    }

    /// A whole number that fits a long; anything else is handed over.
    fn long(&mut self) -> Step<i64> {
        match self.number()? {
            (text, true) => text.parse().map_err(|_| Handover),
            _ => Err(Handover),
        }
    }

    fn double(&mut self) -> Step<f64> {
        match self.number()? {
            // a whole number as Python's float(int) gives it: correctly rounded, and -0 is 0
            (text, true) => text.parse::<i64>().map(|n| n as f64).map_err(|_| Handover),
            (text, false) => text.parse().map_err(|_| Handover),
        }
    }

    /// A string value's bytes, for a plan that reads only strings.
    fn string_value(&mut self) -> Step<Str> {
        if self.peek()? != b'"' {
            return Err(Handover);
        }
        self.string()
    }

    /// Reads one value as `plan` says and appends it to `column`.
    fn value(&mut self, plan: &Plan, column: &mut Column, zone: Option<i64>) -> Step<()> {
        self.whitespace();
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            column.push_null();
            return Ok(());
        }
        match plan {
            Plan::Bool => {
                let value = if self.peek()? == b't' {
                    self.literal(b"true").map(|_| true)?
                } else {
                    self.literal(b"false").map(|_| false)?
                };
                let Column::Bool { validity, bits, len } = column else { return Err(Handover) };
                set_bit(validity, *len, true);
                set_bit(bits, *len, value);
                *len += 1;
                Ok(())
            }
            Plan::Integer { low, high } => {
                let value = self.long()?;
                if value < *low || value > *high {
                    return Err(Handover);
                }
                push_fixed(column, &value.to_le_bytes())
            }
            Plan::Float32 => push_fixed(column, &(self.double()? as f32).to_le_bytes()),
            Plan::Float64 => push_fixed(column, &self.double()?.to_le_bytes()),
            Plan::Text => {
                let s = self.string_value()?;
                column.push_bytes(self.bytes(&s)).map_err(|_| Handover)
            }
            Plan::Timestamp => {
                let micros = if self.peek()? == b'"' {
                    let s = self.string()?;
                    timestamp(self.bytes(&s), zone).ok_or(Handover)?
                } else {
                    // a whole number: seconds since the epoch
                    self.long()?.checked_mul(1_000_000).ok_or(Handover)?
                };
                push_fixed(column, &micros.to_le_bytes())
            }
            Plan::TimestampNtz => {
                let s = self.string_value()?;
                let micros = timestamp_ntz(self.bytes(&s)).ok_or(Handover)?;
                push_fixed(column, &micros.to_le_bytes())
            }
            Plan::Date => {
                let s = self.string_value()?;
                let days = date(self.bytes(&s)).ok_or(Handover)?;
                push_fixed(column, &days.to_le_bytes())
            }
            Plan::Elsewhere => Err(Handover),
            Plan::Struct(fields) => self.object(fields, column, zone),
            Plan::Array(items) => self.array(items, column, zone),
            Plan::Map(values) => self.map(values, column, zone),
        }
    }

    /// An object at its opening brace: `member` reads each member's value, given its name.
    fn members(&mut self, mut member: impl FnMut(&mut Self, Str) -> Step<()>) -> Step<()> {
        if self.peek()? != b'{' {
            return Err(Handover);
        }
        self.enter()?;
        self.whitespace();
        if self.peek()? == b'}' {
            self.pos += 1;
        } else {
            loop {
                self.whitespace();
                if self.peek()? != b'"' {
                    return Err(Handover);
                }
                let name = self.string()?;
                if self.next_byte()? != b':' {
                    return Err(Handover);
                }
                member(self, name)?;
                match self.next_byte()? {
                    b',' => continue,
                    b'}' => break,
                    _ => return Err(Handover),
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// An array at its opening bracket: `element` reads each element.
    fn elements(&mut self, mut element: impl FnMut(&mut Self) -> Step<()>) -> Step<()> {
        if self.peek()? != b'[' {
            return Err(Handover);
        }
        self.enter()?;
        self.whitespace();
        if self.peek()? == b']' {
            self.pos += 1;
        } else {
            loop {
                element(self)?;
                match self.next_byte()? {
                    b',' => continue,
                    b']' => break,
                    _ => return Err(Handover),
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    fn object(&mut self, fields: &[(Option<Vec<u8>>, Plan)], column: &mut Column, zone: Option<i64>) -> Step<()> {
        let Column::Struct { validity, len, children } = column else { return Err(Handover) };
        let row = *len;
        let mut expected = 0; // fields mostly come in the schema's order: look there first
        self.members(|text, name| {
            let found = {
                let name = text.bytes(&name);
                let is = |i: &usize| fields[*i].0.as_deref() == Some(name);
                Some(expected).filter(|i| *i < fields.len() && is(i)).or_else(|| (0..fields.len()).find(is))
            };
            match found {
                // a field given twice: the Python decoder reads each in turn
                Some(i) if children[i].len() > row => Err(Handover),
                Some(i) => {
                    expected = i + 1;
                    text.value(&fields[i].1, &mut children[i], zone)
                }
                None => text.skip_value(),
            }
        })?;
        for child in children.iter_mut() {
            if child.len() == row {
                child.push_null();
            }
        }
        set_bit(validity, row, true);
        *len += 1;
        Ok(())
    }

    fn array(&mut self, items: &Plan, column: &mut Column, zone: Option<i64>) -> Step<()> {
        let Column::List { validity, offsets, child } = column else { return Err(Handover) };
        self.elements(|text| text.value(items, child, zone))?;
        set_bit(validity, offsets.len() - 1, true);
        offsets.push(offset(child.len()).map_err(|_| Handover)?);
        Ok(())
    }

    fn map(&mut self, values: &Plan, column: &mut Column, zone: Option<i64>) -> Step<()> {
        let Column::List { validity, offsets, child } = column else { return Err(Handover) };
        let Column::Struct { validity: entry_validity, len, children } = child.as_mut() else { return Err(Handover) };
        let [keys, items] = children.as_mut_slice() else { return Err(Handover) };
        self.members(|text, key| {
            keys.push_bytes(text.bytes(&key)).map_err(|_| Handover)?;
            text.value(values, items, zone)?;
            set_bit(entry_validity, *len, true);
            *len += 1;
            Ok(())
        })?;
        set_bit(validity, offsets.len() - 1, true);
        offsets.push(offset(*len).map_err(|_| Handover)?);
        Ok(())
    }

    /// Reads past a value no field asks for, as strictly as one that is read.
    fn skip_value(&mut self) -> Step<()> {
        self.whitespace();
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'{' => self.members(|text, _| text.skip_value()),
            b'[' => self.elements(Self::skip_value),
            _ => self.number().map(|_| ()),
        }
    }
}

fn push_fixed(column: &mut Column, little_endian: &[u8]) -> Step<()> {
    let Column::Fixed { width, .. } = column else { return Err(Handover) };
    let width = *width;
    column.push_bytes(little_endian.get(..width).ok_or(Handover)?).map_err(|_| Handover)
}

// ---- dates and timestamps, as kafkasource/formats/plain_json/datetimes.py reads them (Spark's stringToTimestamp
// and stringToDate); where that module gives no value, or one this port does not keep (a region's zone), the record
// is handed over, and the Python decoder's reading (its legacy fallbacks included) decides ----

/// Days since 1970-01-01 of a proleptic Gregorian date, None if there is no such date.
fn days_from_civil(year: i64, month: i64, day: i64) -> Option<i64> {
    if !(1..=12).contains(&month) {
        return None;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month as usize - 1];
    if !(1..=days_in_month).contains(&day) {
        return None;
    }
    let y = year - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// The text without the bytes Spark trims from both ends (UTF8String.trimAll: whitespace and control characters).
fn trimmed(text: &[u8]) -> &[u8] {
    let start = text.iter().position(|&c| c > b' ').unwrap_or(text.len());
    let end = text.iter().rposition(|&c| c > b' ').map_or(start, |i| i + 1);
    &text[start..end]
}

/// Spark's parseTimestampString: [year, month, day, hour, minute, second, micros] and the zone's text, if any.
fn segments(text: &[u8]) -> Option<([i64; 7], Option<&[u8]>)> {
    let data = trimmed(text);
    let valid = |segment: usize, count: usize| match segment {
        0 => (4..=6).contains(&count),
        6 => true,
        7 => count <= 2,
        _ => (1..=2).contains(&count),
    };
    let mut segments = [1, 1, 1, 0, 0, 0, 0];
    let (mut i, mut value, mut digits, mut fraction_digits, mut zone) = (0, 0i64, 0, 0, None);
    let negative = data.first() == Some(&b'-');
    let mut j = usize::from(matches!(data.first()?, b'+' | b'-'));
    while j < data.len() {
        let c = data[j];
        if c.is_ascii_digit() {
            if i == 6 {
                fraction_digits += 1;
            }
            if i != 6 || digits < 6 {
                value = value.saturating_mul(10).saturating_add(i64::from(c - b'0'));
            }
            digits += 1;
        } else if (i < 2 && c == b'-') || (i == 2 && (c == b' ' || c == b'T')) || ((i == 3 || i == 4) && c == b':') {
            if !valid(i, digits) {
                return None;
            }
            segments[i] = value;
            (value, digits, i) = (0, 0, i + 1);
        } else if i == 5 || i == 6 {
            if !valid(i, digits) {
                return None;
            }
            segments[i] = value;
            (value, digits, i) = (0, 0, i + 1);
            if c != b'.' || i == 7 {
                zone = Some(&data[j..]);
                i = 7;
                break;
            }
        } else {
            return None; // a time alone, or a character out of place
        }
        j += 1;
    }
    if i < 7 {
        if !valid(i, digits) {
            return None;
        }
        segments[i] = value;
    }
    let kept = fraction_digits.min(6);
    segments[6] = if kept == 0 { 0 } else { segments[6] * 10i64.pow(6 - kept as u32) };
    if negative {
        segments[0] = -segments[0];
    }
    Some((segments, zone))
}

/// The offset in seconds of a zone written as `Z`, `UTC`, `GMT`, `UT` or an offset (`+01:00`, `+0100`, `+01`), with
/// or without one of those prefixes; None for any other zone (a region, a short id), which the Python decoder reads.
fn zone_offset(text: &[u8]) -> Option<i64> {
    let name = &text[text.iter().position(|&c| c != b' ')?..];
    if matches!(name, b"Z" | b"UTC" | b"GMT" | b"UT") {
        return Some(0);
    }
    let name = [&b"UTC"[..], b"GMT", b"UT"]
        .iter()
        .find_map(|prefix| name.strip_prefix(*prefix).filter(|rest| matches!(rest.first(), Some(b'+' | b'-'))))
        .unwrap_or(name);
    let sign = match name.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits =
        |d: &[u8]| d.iter().all(u8::is_ascii_digit).then(|| d.iter().fold(0, |n, c| n * 10 + i64::from(c - b'0')));
    let (hours, minutes) = match &name[1..] {
        [h1, h2] => (digits(&[*h1, *h2])?, 0),
        [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?),
        _ => return None,
    };
    if hours > 18 || minutes > 59 {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60))
}

/// Microseconds since the epoch of the segments' local time at `offset` seconds east of UTC, None if no such time.
fn micros(segments: [i64; 7], offset: i64) -> Option<i64> {
    let [year, month, day, hour, minute, second, micros] = segments;
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let days = i128::from(days_from_civil(year, month, day)?);
    let seconds = i128::from((hour * 60 + minute) * 60 + second - offset);
    i64::try_from(days * MICROS_PER_DAY + seconds * MICROS_PER_SECOND + i128::from(micros)).ok()
}

/// A TIMESTAMP from a string: its own zone, else `zone` (the json.timeZone's offset, None for a region's).
fn timestamp(text: &[u8], zone: Option<i64>) -> Option<i64> {
    let (segments, zone_text) = segments(text)?;
    let offset = match zone_text {
        Some(z) => zone_offset(z)?,
        None => zone?,
    };
    micros(segments, offset)
}

/// A TIMESTAMP_NTZ: a local date-time, none with a zone.
fn timestamp_ntz(text: &[u8]) -> Option<i64> {
    match segments(text)? {
        (segments, None) => micros(segments, 0),
        _ => None,
    }
}

/// A DATE: `[+-]yyyy[-[m]m[-[d]d]]`, anything after a space or a `T` ignored.
fn date(text: &[u8]) -> Option<i32> {
    let data = trimmed(text);
    let valid =
        |segment: usize, count: usize| if segment == 0 { (4..=7).contains(&count) } else { (1..=2).contains(&count) };
    let mut segments = [1i64, 1, 1];
    let (mut i, mut value, mut digits) = (0, 0i64, 0);
    let negative = data.first() == Some(&b'-');
    let mut j = usize::from(matches!(data.first()?, b'+' | b'-'));
    while j < data.len() && data[j] != b' ' && data[j] != b'T' {
        let c = data[j];
        if i < 2 && c == b'-' {
            if !valid(i, digits) {
                return None;
            }
            segments[i] = value;
            (value, digits, i) = (0, 0, i + 1);
        } else if c.is_ascii_digit() {
            value = value.saturating_mul(10).saturating_add(i64::from(c - b'0'));
            digits += 1;
        } else {
            return None;
        }
        j += 1;
    }
    if !valid(i, digits) || (i < 2 && j < data.len()) {
        return None;
    }
    segments[i] = value;
    let year = if negative { -segments[0] } else { segments[0] };
    i32::try_from(days_from_civil(year, segments[1], segments[2])?).ok()
}

/// Decodes plain JSON payloads into the schema's Arrow column, handing the records off its path to Python.
#[pyclass]
pub struct JsonDecoder {
    empty: Column,
    plan: Plan,
    zone: Option<i64>,
}

#[pymethods]
impl JsonDecoder {
    /// `column`: the schema's Arrow type as column builders; `plan`: how each value is read; `zone`: the json.timeZone
    /// as seconds east of UTC, None for a zone whose offset changes (a zone-less timestamp is then handed over).
    #[new]
    fn new(column: &Bound<'_, PyAny>, plan: &Bound<'_, PyAny>, zone: Option<i64>) -> PyResult<Self> {
        Ok(JsonDecoder { empty: Column::from_spec(column)?, plan: Plan::from_py(plan)?, zone })
    }

    /// Decodes the `length` payloads of an Arrow binary array from row `offset` of its buffers; returns the values
    /// column as (length, validity, buffers, children) and the rows (from 0) handed over, null in that column.
    fn decode(
        &self,
        py: Python<'_>,
        length: usize,
        offset: usize,
        validity: Option<PyBuffer<i8>>,
        offsets: PyBuffer<i8>,
        data: PyBuffer<i8>,
    ) -> PyResult<(PyObject, Vec<usize>)> {
        let payloads = Payloads::new(length, offset, validity.as_ref(), &offsets, &data)?;
        let mut values = self.empty.clone();
        let mut handed = Vec::new();
        py.allow_threads(|| {
            let mut scratch = Vec::new();
            for row in 0..length {
                let rows = values.len();
                let read = match payloads.get(offset + row) {
                    None => {
                        values.push_null();
                        Ok(())
                    }
                    Some(payload) => self.decode_one(payload, &mut values, &mut scratch),
                };
                if read.is_err() {
                    values.truncate(rows);
                    values.push_null();
                    handed.push(row);
                }
            }
        });
        Ok((values.into_py(py)?, handed))
    }
}

impl JsonDecoder {
    /// Appends one payload's value: a null for one of only whitespace (from_json's null), else its root read by the
    /// plan, whatever follows it unread (Jackson stops after the first value).
    fn decode_one(&self, payload: &[u8], values: &mut Column, scratch: &mut Vec<u8>) -> Step<()> {
        std::str::from_utf8(payload).map_err(|_| Handover)?;
        let mut text = Text { b: payload, pos: 0, depth: 0, scratch: std::mem::take(scratch) };
        text.whitespace();
        let read = match (text.b.get(text.pos), &self.plan) {
            (None, _) => {
                values.push_null();
                Ok(())
            }
            // a root of another kind (JSON null included) is the Python decoder's: it fails the record, or reads an
            // object as an array of one struct
            (Some(b'{'), Plan::Struct(_) | Plan::Map(_)) | (Some(b'['), Plan::Array(_)) => {
                text.value(&self.plan, values, self.zone)
            }
            _ => Err(Handover),
        };
        *scratch = text.scratch;
        read
    }
}
