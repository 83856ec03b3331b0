//! The sink's plain JSON encoding (no registry): a struct column handed over through the Arrow C Data Interface,
//! each row written as Spark's `to_json` writes it (Jackson's generator over Spark's JacksonGenerator), into an
//! Arrow binary column, with no Python object per row. kafkasource/formats/plain_json/native_encode.py calls it and
//! holds the pure-Python encoder that gives the same bytes where this one raises NotImplementedError.
//!
//! What Spark writes, and so what this writes: fields in order, no spaces; a null field left out (ignoreNullFields,
//! Spark's default) or written `null`; nulls inside arrays and map values written `null`; strings escaped as
//! Jackson escapes them (`\"`, `\\`, `\b \t \n \f \r`, other controls as `\u00XX` in upper case hex, the rest as
//! UTF-8, DEL and U+2028 included); binary as padded base64; decimals as Java's BigDecimal.toString; dates
//! `yyyy-MM-dd`; timestamps `yyyy-MM-dd'T'HH:mm:ss.SSSXXX` in the session's time zone (milliseconds, floored; `Z`
//! for a zero offset, `+05:30`, seconds where the offset has them: `-07:52:58` before 1883 in Los Angeles);
//! timestamps without a zone the same without the offset; map keys as Spark's toString of the key (integers,
//! booleans, floats, decimals; dates as days and timestamps as microseconds since the epoch, as Spark prints them).
//! Floats and doubles print the shortest digits that read back as the same value, in Double.toString's shape
//! (`1.0E10`, `1.0E-5`, `0.001`, `"NaN"` and `"Infinity"` quoted), the closest of them (halfway: the even one), as
//! Java 19's Double.toString specification describes (Java 19 and later were not run against these). Java 17's
//! sometimes prints a digit or two more, or a last digit that is not the closest, of the same value
//! (kafkasource/formats/plain_json/native_encode.py says so too).
//!
//! Time zones: Rust has no time zone database without a crate, and pyarrow's own stops applying daylight saving
//! rules after the last transition its files list (2037 or earlier), where Java's keeps applying them. So Python
//! works out, with zoneinfo, the UTC offset in force over every hour that holds one of the batch's timestamps, and
//! hands over that table (the second each offset starts at, and the offset); each value looks its offset up.

use std::io::Write;

use pyo3::exceptions::{PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::arrow_buffers::{set_bit, BinaryBuffers, BinaryColumn};
use crate::arrow_ffi::{ArrowArray, ArrowSchema, Binary, Node, Offsets, Owned};

type Bind<T> = Result<T, String>; // Err: why this column is not covered (Python encodes it)

fn le_i64(raw: &[u8], p: usize) -> i64 {
    i64::from_le_bytes(raw[p * 8..p * 8 + 8].try_into().unwrap())
}

fn le_i32(raw: &[u8], p: usize) -> i32 {
    i32::from_le_bytes(raw[p * 4..p * 4 + 4].try_into().unwrap())
}

enum Enc<'a> {
    Null,
    Bool(&'a [u8]),
    Int(&'a [u8], usize), // little-endian signed integers of 1, 2, 4 or 8 bytes
    F32(&'a [u8]),
    F64(&'a [u8]),
    Str(Binary<'a>),
    Base64(Binary<'a>),
    Decimal(&'a [u8], u32),
    Date(&'a [u8]),
    Timestamp { raw: &'a [u8], per_second: i64, zoned: bool },
    Struct(Vec<(Vec<u8>, Slot<'a>)>), // each field's name, quoted and escaped, with its colon
    List(Offsets<'a>, Box<Slot<'a>>),
    Map(Offsets<'a>, Box<Slot<'a>>, Box<Slot<'a>>), // keys, values
}

/// One place of the column over one Arrow array: physical row = `shift` + the row asked for.
struct Slot<'a> {
    validity: Option<&'a [u8]>,
    shift: usize,
    enc: Enc<'a>,
}

fn bind<'a>(node: Node<'a>, shift: usize) -> Bind<Slot<'a>> {
    let format = node.format();
    let enc = match format {
        "n" => Enc::Null,
        "b" => Enc::Bool(node.buffer(1, node.extent().div_ceil(8))?),
        "c" => Enc::Int(node.fixed(1)?, 1),
        "s" => Enc::Int(node.fixed(2)?, 2),
        "i" => Enc::Int(node.fixed(4)?, 4),
        "l" => Enc::Int(node.fixed(8)?, 8),
        "f" => Enc::F32(node.fixed(4)?),
        "g" => Enc::F64(node.fixed(8)?),
        "u" | "U" => Enc::Str(node.binary()?),
        "z" | "Z" => Enc::Base64(node.binary()?),
        "tdD" => Enc::Date(node.fixed(4)?),
        f if f.starts_with("d:") => {
            let parts: Vec<&str> = f[2..].split(',').collect();
            let scale = match parts.as_slice() {
                [_, s] | [_, s, "128"] => s.parse::<u32>().map_err(|_| format!("Arrow type {f}"))?,
                _ => return Err(format!("Arrow type {f}")), // decimal256, or a negative scale: not Spark's
            };
            Enc::Decimal(node.fixed(16)?, scale)
        }
        f if f.starts_with("ts") && f.len() >= 4 && &f[3..4] == ":" => {
            let per_second = match &f[2..3] {
                "s" => 1,
                "m" => 1_000,
                "u" => 1_000_000,
                "n" => 1_000_000_000,
                _ => return Err(format!("Arrow type {f}")),
            };
            Enc::Timestamp { raw: node.fixed(8)?, per_second, zoned: !f[4..].is_empty() }
        }
        "+s" => {
            let mut fields = Vec::new();
            for child in node.children()? {
                let mut name = Vec::new();
                write_string(&mut name, child.name().as_bytes());
                name.push(b':');
                fields.push((name, bind(child, child.offset() + shift)?)); // a child's row: its offset + the struct's
            }
            Enc::Struct(fields)
        }
        "+l" | "+L" => {
            let [child] = node.children()?[..] else { return Err("a list without one child".into()) };
            Enc::List(node.offsets(format == "+L")?, Box::new(bind(child, child.offset())?))
        }
        "+m" => {
            let [entries] = node.children()?[..] else { return Err("a map without one child".into()) };
            let [keys, values] = entries.children()?[..] else { return Err("map entries without two fields".into()) };
            let key_slot = bind(keys, keys.offset() + entries.offset())?;
            if matches!(key_slot.enc, Enc::Base64(_) | Enc::Struct(_) | Enc::List(..) | Enc::Map(..) | Enc::Null) {
                // Spark prints such keys with the JVM's toString of its internal value (binary: "[B@18ca596c")
                return Err(format!("a map with keys of Arrow type {}", keys.format()));
            }
            Enc::Map(
                node.offsets(false)?,
                Box::new(key_slot),
                Box::new(bind(values, values.offset() + entries.offset())?),
            )
        }
        f => return Err(format!("Arrow type {f}")),
    };
    Ok(Slot { validity: node.validity()?, shift, enc })
}

// ---- writing rows ----

/// The offsets in force, as Python worked them out for the batch's timestamps (the module's docstring).
struct Zone {
    starts: Vec<i64>,  // UTC seconds since the epoch, ascending
    offsets: Vec<i32>, // seconds east of UTC, from the start beside it on
}

impl Zone {
    fn offset_at(&self, second: i64) -> Result<i32, String> {
        match self.starts.partition_point(|&start| start <= second) {
            0 => Err(format!("no UTC offset given for the timestamp at second {second}")),
            i => Ok(self.offsets[i - 1]),
        }
    }
}

struct Writer<'z> {
    zone: &'z Zone,
    ignore_null_fields: bool,
}

fn bit(bits: &[u8], p: usize) -> bool {
    bits[p / 8] & (1 << (p % 8)) != 0
}

/// Jackson's escapes: its short forms, other controls as \u00XX in upper case hex, everything else as it is.
fn write_string(out: &mut Vec<u8>, text: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in text.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            b'\t' => b't',
            b'\n' => b'n',
            0x0C => b'f',
            b'\r' => b'r',
            0x00..=0x1F => 0,
            _ => continue,
        };
        out.extend_from_slice(&text[start..i]);
        start = i + 1;
        if short != 0 {
            out.extend_from_slice(&[b'\\', short]);
        } else {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
    out.extend_from_slice(&text[start..]);
    out.push(b'"');
}

fn write_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out.push(b'"');
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for k in 0..4 {
            out.push(if k <= chunk.len() { ALPHABET[(n >> (18 - 6 * k) & 63) as usize] } else { b'=' });
        }
    }
    out.push(b'"');
}

/// Java's BigDecimal.toString of `unscaled` × 10^-`scale` (scale ≥ 0): plain, or scientific below 10^-6.
fn write_decimal(out: &mut Vec<u8>, unscaled: i128, scale: u32) {
    if unscaled < 0 {
        out.push(b'-');
    }
    let digits = unscaled.unsigned_abs().to_string();
    let (digits, scale) = (digits.as_bytes(), scale as usize);
    let adjusted = digits.len() as i64 - 1 - scale as i64;
    if scale == 0 {
        out.extend_from_slice(digits);
    } else if adjusted >= -6 {
        if digits.len() > scale {
            out.extend_from_slice(&digits[..digits.len() - scale]);
            out.push(b'.');
            out.extend_from_slice(&digits[digits.len() - scale..]);
        } else {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + scale - digits.len(), b'0');
            out.extend_from_slice(digits);
        }
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let _ = write!(out, "E{adjusted}");
    }
}

/// A finite float as Java's Double.toString shapes it, from the shortest digits that read back as it (`shortest`,
/// Rust's `{:e}`: "1.5e-7"). Where those are one digit, Java 19 and later print the two-digit decimal closest to
/// the value (4.9E-324, not 5.0E-324): `two_digits` is that one (`{:.1e}`) when it reads back as the value.
fn write_java_float(out: &mut Vec<u8>, value: f64, shortest: &str, two_digits: impl FnOnce() -> Option<String>) {
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((shortest, "0"));
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa),
    };
    let mut exponent: i64 = exponent.parse().unwrap_or(0);
    // the digits on the stack; a String only where a tie or the two-digit rule replaces them (rare)
    let mut stack = [0u8; 32];
    let mut len = 0;
    for c in mantissa.bytes().filter(|c| *c != b'.').take(stack.len()) {
        stack[len] = c;
        len += 1;
    }
    if &stack[..len] == b"0" {
        out.extend_from_slice(if negative { b"-0.0" } else { b"0.0" });
        return;
    }
    let mut replaced = tie_to_even(len, value);
    if len == 1 {
        if let Some(two) = two_digits() {
            let (m, e) = two.split_once('e').unwrap_or((&two, "0"));
            let m = m.trim_start_matches('-');
            if !m.ends_with('0') {
                replaced = Some(m.replace('.', ""));
                exponent = e.parse().unwrap_or(exponent);
            }
        }
    }
    let d = replaced.as_ref().map_or(&stack[..len], |digits| digits.as_bytes());
    if negative {
        out.push(b'-');
    }
    if (-3..7).contains(&exponent) {
        if exponent >= 0 {
            let int = exponent as usize + 1;
            for k in 0..int {
                out.push(*d.get(k).unwrap_or(&b'0'));
            }
            out.push(b'.');
            out.extend_from_slice(if d.len() > int { &d[int..] } else { b"0" });
        } else {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + (-exponent - 1) as usize, b'0');
            out.extend_from_slice(d);
        }
    } else {
        out.push(d[0]);
        out.push(b'.');
        out.extend_from_slice(if d.len() > 1 { &d[1..] } else { b"0" });
        let _ = write!(out, "E{exponent}");
    }
}

/// The significand of `value`'s exact decimal expansion (|value|, trailing zeros dropped), where it has at most 18
/// digits; None where it has more (no tie between two shortest candidates of up to 17 digits is possible then).
fn exact_significand(value: f64) -> Option<u128> {
    let bits = value.abs().to_bits();
    let (biased, fraction) = ((bits >> 52) & 0x7FF, bits & ((1 << 52) - 1));
    let (mut m, mut e) = if biased == 0 { (fraction, -1074) } else { (fraction | 1 << 52, biased as i32 - 1075) };
    if m == 0 {
        return None;
    }
    e += m.trailing_zeros() as i32;
    m >>= m.trailing_zeros(); // odd: m × 2^e has no trailing decimal zero but those of m's own factors of 5
    if e >= 0 {
        let mut v = u128::from(m).checked_shl(e as u32).filter(|v| *v < 10u128.pow(18) && e < 64)?;
        while v % 10 == 0 {
            v /= 10;
        }
        Some(v)
    } else if -e <= 30 {
        Some(u128::from(m) * 5u128.pow((-e) as u32)) // m × 2^e = m × 5^-e / 10^-e
    } else {
        None
    }
}

/// Where the value lies exactly halfway between two shortest candidates of `digits` digits (2256344.75 as a
/// float, between 2256344.7 and 2256344.8), Java takes the one with the even last digit; Rust's `{:e}` takes the one
/// further from zero. The digits of the even one, where there is such a tie.
fn tie_to_even(digits: usize, value: f64) -> Option<String> {
    let exact = exact_significand(value)?;
    if exact % 10 != 5 || exact.ilog10() as usize + 1 != digits + 1 {
        return None;
    }
    let down = exact / 10;
    let even = if down % 2 == 0 { down } else { down + 1 };
    (even.ilog10() as usize + 1 == digits).then(|| even.to_string())
}

/// Rust's `{:e}` of a float into a buffer on the stack rather than a String (one allocation less per value).
fn shortest<'b>(buffer: &'b mut [u8; 48], text: std::fmt::Arguments<'_>) -> &'b str {
    let mut cursor = std::io::Cursor::new(&mut buffer[..]);
    let _ = cursor.write_fmt(text); // at most 24 bytes: "-1.7976931348623157e308"
    let end = cursor.position() as usize;
    std::str::from_utf8(&buffer[..end]).unwrap_or("0")
}

fn write_f64(out: &mut Vec<u8>, value: f64) {
    match value {
        v if v.is_nan() => out.extend_from_slice(b"\"NaN\""),
        v if v.is_infinite() => out.extend_from_slice(if v > 0.0 { b"\"Infinity\"" } else { b"\"-Infinity\"" }),
        v => write_java_float(out, v, shortest(&mut [0; 48], format_args!("{v:e}")), || {
            let two = format!("{v:.1e}");
            (two.parse::<f64>() == Ok(v)).then_some(two)
        }),
    }
}

fn write_f32(out: &mut Vec<u8>, value: f32) {
    match value {
        v if v.is_nan() => out.extend_from_slice(b"\"NaN\""),
        v if v.is_infinite() => out.extend_from_slice(if v > 0.0 { b"\"Infinity\"" } else { b"\"-Infinity\"" }),
        v => write_java_float(out, f64::from(v), shortest(&mut [0; 48], format_args!("{v:e}")), || {
            let two = format!("{v:.1e}");
            (two.parse::<f32>() == Ok(v)).then_some(two)
        }),
    }
}

/// The proleptic Gregorian (year, month, day) of a day since 1970-01-01 (Howard Hinnant's civil_from_days).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Two digits of 0 to 99, as {:02} writes them, without the formatting machinery (timestamps are most of a row's
/// cost otherwise).
fn push2(out: &mut Vec<u8>, n: i64) {
    out.extend_from_slice(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
}

/// yyyy-MM-dd as Java's formatter writes it: four digits at least, a sign past 9999 and before year 0.
fn write_date(out: &mut Vec<u8>, days: i64) {
    let (year, month, day) = civil(days);
    match year {
        // write! into the Vec itself: no String allocated (writing to a Vec cannot fail)
        y if y > 9999 => drop(write!(out, "+{y}")),
        y if y < 0 => drop(write!(out, "-{:04}", -y)),
        y => {
            push2(out, y / 100);
            push2(out, y % 100);
        }
    }
    out.push(b'-');
    push2(out, i64::from(month));
    out.push(b'-');
    push2(out, i64::from(day));
}

impl Writer<'_> {
    fn write_timestamp(&self, out: &mut Vec<u8>, value: i64, per_second: i64, zoned: bool) -> Result<(), String> {
        let second = value.div_euclid(per_second);
        let millis = value.rem_euclid(per_second) * 1000 / per_second; // Spark prints milliseconds, floored
        let offset = if zoned { i64::from(self.zone.offset_at(second)?) } else { 0 };
        let local = second + offset;
        write_date(out, local.div_euclid(86_400));
        let s = local.rem_euclid(86_400);
        out.push(b'T');
        push2(out, s / 3600);
        out.push(b':');
        push2(out, s / 60 % 60);
        out.push(b':');
        push2(out, s % 60);
        out.extend_from_slice(&[
            b'.',
            b'0' + (millis / 100) as u8,
            b'0' + (millis / 10 % 10) as u8,
            b'0' + (millis % 10) as u8,
        ]);
        if zoned {
            if offset == 0 {
                out.push(b'Z');
            } else {
                let (sign, a) = if offset < 0 { ('-', -offset) } else { ('+', offset) };
                let _ = write!(out, "{sign}{:02}:{:02}", a / 3600, a / 60 % 60);
                if a % 60 != 0 {
                    let _ = write!(out, ":{:02}", a % 60);
                }
            }
        }
        Ok(())
    }

    /// Row `i` of `slot`, valid or not: `null` where it is null.
    fn write_or_null(&self, slot: &Slot<'_>, i: usize, out: &mut Vec<u8>) -> Result<(), String> {
        if slot.valid(i) {
            self.write(slot, i, out)
        } else {
            out.extend_from_slice(b"null");
            Ok(())
        }
    }

    /// A non-null row `i` of `slot`.
    fn write(&self, slot: &Slot<'_>, i: usize, out: &mut Vec<u8>) -> Result<(), String> {
        let p = slot.shift + i;
        match &slot.enc {
            Enc::Null => out.extend_from_slice(b"null"),
            Enc::Bool(bits) => out.extend_from_slice(if bit(bits, p) { b"true" } else { b"false" }),
            Enc::Int(raw, width) => {
                let b = &raw[p * width..(p + 1) * width];
                let value = match width {
                    1 => i64::from(b[0] as i8),
                    2 => i64::from(i16::from_le_bytes(b.try_into().unwrap())),
                    4 => i64::from(i32::from_le_bytes(b.try_into().unwrap())),
                    _ => i64::from_le_bytes(b.try_into().unwrap()),
                };
                let _ = write!(out, "{value}");
            }
            Enc::F32(raw) => write_f32(out, f32::from_le_bytes(raw[p * 4..p * 4 + 4].try_into().unwrap())),
            Enc::F64(raw) => write_f64(out, f64::from_le_bytes(raw[p * 8..p * 8 + 8].try_into().unwrap())),
            Enc::Str(values) => write_string(out, values.get(p)),
            Enc::Base64(values) => write_base64(out, values.get(p)),
            Enc::Decimal(raw, scale) => {
                write_decimal(out, i128::from_le_bytes(raw[p * 16..p * 16 + 16].try_into().unwrap()), *scale)
            }
            Enc::Date(raw) => {
                out.push(b'"');
                write_date(out, i64::from(le_i32(raw, p)));
                out.push(b'"');
            }
            Enc::Timestamp { raw, per_second, zoned } => {
                out.push(b'"');
                self.write_timestamp(out, le_i64(raw, p), *per_second, *zoned)?;
                out.push(b'"');
            }
            Enc::Struct(fields) => {
                out.push(b'{');
                let mut first = true;
                for (name, field) in fields {
                    let valid = field.valid(i);
                    if !valid && self.ignore_null_fields {
                        continue;
                    }
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    out.extend_from_slice(name);
                    self.write_or_null(field, i, out)?;
                }
                out.push(b'}');
            }
            Enc::List(offsets, items) => {
                out.push(b'[');
                for j in offsets.at(p)..offsets.at(p + 1) {
                    if j > offsets.at(p) {
                        out.push(b',');
                    }
                    self.write_or_null(items, j, out)?;
                }
                out.push(b']');
            }
            Enc::Map(offsets, keys, values) => {
                out.push(b'{');
                for j in offsets.at(p)..offsets.at(p + 1) {
                    if j > offsets.at(p) {
                        out.push(b',');
                    }
                    self.write_key(keys, j, out)?;
                    out.push(b':');
                    self.write_or_null(values, j, out)?;
                }
                out.push(b'}');
            }
        }
        Ok(())
    }

    /// A map's key as Spark writes it: the toString of its internal value, as a JSON string.
    fn write_key(&self, keys: &Slot<'_>, j: usize, out: &mut Vec<u8>) -> Result<(), String> {
        let p = keys.shift + j;
        let mut text = Vec::new();
        let special = |value: f64| match value {
            v if v.is_nan() => Some(b"NaN".as_slice()),
            v if v.is_infinite() => Some(if v > 0.0 { b"Infinity".as_slice() } else { b"-Infinity" }),
            _ => None,
        };
        match &keys.enc {
            Enc::Str(values) => {
                write_string(out, values.get(p));
                return Ok(());
            }
            Enc::Date(raw) => text.extend_from_slice(le_i32(raw, p).to_string().as_bytes()),
            Enc::Timestamp { raw, per_second, .. } => {
                let micros = i128::from(le_i64(raw, p)) * 1_000_000 / i128::from(*per_second);
                text.extend_from_slice(micros.to_string().as_bytes());
            }
            // NaN and the infinities unquoted inside the key's string, as Float.toString writes them
            Enc::F32(raw)
                if special(f64::from(f32::from_le_bytes(raw[p * 4..p * 4 + 4].try_into().unwrap()))).is_some() =>
            {
                text.extend_from_slice(
                    special(f64::from(f32::from_le_bytes(raw[p * 4..p * 4 + 4].try_into().unwrap()))).unwrap(),
                )
            }
            Enc::F64(raw) if special(f64::from_bits(le_i64(raw, p) as u64)).is_some() => {
                text.extend_from_slice(special(f64::from_bits(le_i64(raw, p) as u64)).unwrap())
            }
            _ => self.write(keys, j, &mut text)?, // integers, booleans, finite floats, decimals: as their values
        }
        write_string(out, &text);
        Ok(())
    }
}

impl Slot<'_> {
    fn valid(&self, i: usize) -> bool {
        // an Arrow null array has no validity bits: every row of it is null
        !matches!(self.enc, Enc::Null) && self.validity.is_none_or(|v| bit(v, self.shift + i))
    }
}

/// Encodes `column` (a struct column: any object with `__arrow_c_array__`) as `to_json` would, one JSON text per
/// row (a null row is a null payload); `zone_starts` and `zone_offsets` are the UTC offsets in force from each
/// start on (seconds), covering every timestamp of the column (the module's docstring). Returns the count of rows and
/// an Arrow binary column's buffers. NotImplementedError: this encoder does not cover the column (Python encodes it).
#[pyfunction]
pub fn encode_json(
    py: Python<'_>,
    column: &Bound<'_, PyAny>,
    zone_starts: Vec<i64>,
    zone_offsets: Vec<i32>,
    ignore_null_fields: bool,
) -> PyResult<(usize, Py<BinaryBuffers>)> {
    if zone_starts.len() != zone_offsets.len() || zone_starts.windows(2).any(|w| w[0] >= w[1]) {
        return Err(PyValueError::new_err("zone_starts must ascend, one offset beside each"));
    }
    let capsules = column.call_method0("__arrow_c_array__")?;
    let (schema_capsule, array_capsule): (Bound<'_, PyAny>, Bound<'_, PyAny>) = capsules.extract()?;
    let schema: Owned<ArrowSchema> = Owned::take(schema_capsule.downcast::<PyCapsule>()?, c"arrow_schema")?;
    let array: Owned<ArrowArray> = Owned::take(array_capsule.downcast::<PyCapsule>()?, c"arrow_array")?;
    let node = Node { schema: &schema.0, array: &array.0 };
    if node.format() != "+s" {
        return Err(PyValueError::new_err(format!("a struct column is wanted, not Arrow type {}", node.format())));
    }
    let root = bind(node, node.offset()).map_err(PyNotImplementedError::new_err)?;
    let rows = node.array.length.max(0) as usize;
    let zone = Zone { starts: zone_starts, offsets: zone_offsets };
    let writer = Writer { zone: &zone, ignore_null_fields };
    let result = py.allow_threads(|| -> Result<BinaryColumn, String> {
        let mut out = BinaryColumn::new();
        out.offsets.reserve(rows);
        for i in 0..rows {
            if !root.valid(i) {
                out.push(None)?; // to_json of a null struct is null
                continue;
            }
            writer.write(&root, i, &mut out.data)?; // straight into the column's bytes
            set_bit(&mut out.validity, i, true);
            let end = i32::try_from(out.data.len()).map_err(|_| "more than 2 GiB of JSON in one batch".to_string())?;
            out.offsets.push(end);
        }
        Ok(out)
    });
    match result {
        Ok(out) => Ok((rows, out.into_buffers(py)?)),
        Err(why) => Err(PyNotImplementedError::new_err(why)),
    }
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(encode_json, module)?)
}
