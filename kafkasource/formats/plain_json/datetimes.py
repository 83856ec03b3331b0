"""Date and timestamp strings read as from_json reads them without a timestampFormat or dateFormat: Spark's own
string-to-timestamp and string-to-date rules (DateTimeUtils.stringToTimestamp / stringToDate, the ones CAST uses),
then the legacy fallback Spark keeps for JSON (the text without "GMT"; for dates, a whole number of days).

A timestamp is `[+-]yyyy[-[m]m[-[d]d]][( |T)[h]h:[m]m[:[s]s[.fraction]]][zone]`: a year of 4 to 6 digits, a
fraction past 6 digits truncated, a zone as `Z`, an offset (`+01:00`, `+0100`, `+01`, `+1:00`), `UTC`/`GMT`/`UT` with
or without an offset, a region (`Europe/Paris`, `CET`) or one of java.time's short ids (`EST`, `PST`), after the time
or a space; no zone: the json.timeZone. A date is
`[+-]yyyy[-[m]m[-[d]d]]`, anything after a space or a `T` ignored. A time alone (`12:00:00`, `T12:00`), which Spark
reads as today's, is refused here (docs/plain-json.md lists it).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo

MICROS_PER_DAY = 86_400_000_000
_TRIM = "".join(chr(c) for c in range(33))  # UTF8String.trimAll: whitespace and ISO control characters
_OFFSET = re.compile(r"([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$")


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (as java.time counts them); ValueError if none."""
    if not 1 <= month <= 12:
        raise ValueError("month")
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]:
        raise ValueError("day")
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


# java.time's ZoneId.SHORT_IDS, which Spark's getZoneId passes to ZoneId.of: three-letter ids, some fixed offsets
SHORT_IDS = {
    "EST": "-05:00", "MST": "-07:00", "HST": "-10:00", "ACT": "Australia/Darwin", "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo", "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka", "CAT": "Africa/Harare", "CNT": "America/St_Johns",
    "CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan", "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
}  # fmt: skip
_REGION = re.compile(r"[A-Za-z][A-Za-z0-9~/._+-]+")  # java.time's pattern for a region id


@lru_cache(maxsize=256)
def zone(name: str) -> timezone | ZoneInfo | None:
    """A zone as Spark's getZoneId reads it (java.time's ZoneId.of with its short ids), None if none."""
    name = name.strip()
    name = SHORT_IDS.get(name, name)
    if name in ("Z", "UTC", "GMT", "UT"):
        return UTC
    for prefix in ("UTC", "GMT", "UT"):
        if name.startswith(prefix) and name[len(prefix) : len(prefix) + 1] in ("+", "-"):
            name = name[len(prefix) :]
            break
    match = _OFFSET.match(name)
    if match is not None:
        sign, hours, minutes, seconds = match.groups()
        if int(hours) > 18 or int(minutes or 0) > 59 or int(seconds or 0) > 59:
            return None
        delta = timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
        return timezone(-delta if sign == "-" else delta)
    if _REGION.fullmatch(name) is None:
        return None
    try:
        return ZoneInfo(name)
    except (ValueError, OSError, KeyError):
        return None


def fixed_offset(name: str) -> int | None:
    """The offset east of UTC in seconds of a zone that never changes it ("UTC", "+05:30", "EST"); None for a zone
    with rules (a region) and for no zone."""
    chosen = zone(name)
    if not isinstance(chosen, timezone):
        return None
    offset = chosen.utcoffset(None)
    return offset.days * 86_400 + offset.seconds


def _segments(text: str) -> tuple[list[int], str | None] | None:
    """Spark's parseTimestampString: [year, month, day, hour, minute, second, micros] and the zone text, or None
    (a time alone included, as Spark would read it as today's)."""
    data = text.strip(_TRIM)
    if not data:
        return None
    segments = [1, 1, 1, 0, 0, 0, 0]
    sign, i, j, value, digits, fraction_digits, zone_text = 1, 0, 0, 0, 0, 0, None

    def valid(segment: int, count: int) -> bool:
        if segment == 0:
            return 4 <= count <= 6
        if segment == 6:
            return True
        if segment == 7:
            return count <= 2
        return 0 < count <= 2

    if data[0] in "+-":
        sign, j = (-1 if data[0] == "-" else 1), 1
    while j < len(data):
        char = data[j]
        if "0" <= char <= "9":
            if i == 6:
                fraction_digits += 1
            if i != 6 or digits < 6:
                value = value * 10 + ord(char) - 48
            digits += 1
        elif (i < 2 and char == "-") or (i == 2 and char in " T") or (i in (3, 4) and char == ":"):
            if not valid(i, digits):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
        elif i in (5, 6):
            if not valid(i, digits):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
            if char != "." or i == 7:
                zone_text, j = data[j:], len(data)
                if i == 6:
                    i = 7
                break
        else:
            return None  # a time alone (T12:00, 12:00:00), or a character out of place
        j += 1
    if i < 7:
        if not valid(i, digits):
            return None
        segments[i] = value
        if i == 6:
            fraction_digits = min(fraction_digits, 6)
    segments[6] *= 10 ** (6 - min(fraction_digits, 6)) if fraction_digits else 0
    segments[0] *= sign
    return segments, zone_text


def _micros(segments: list[int], chosen) -> int:
    year, month, day, hour, minute, second, micros = segments
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError("time")
    local = days_from_civil(year, month, day) * MICROS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1_000_000
    local += micros
    if isinstance(chosen, timezone):
        offset: timedelta | None = chosen.utcoffset(None)
    else:
        offset = datetime(year, month, day, hour, minute, second, tzinfo=chosen).utcoffset()
    assert offset is not None
    return local - (offset.days * 86_400 + offset.seconds) * 1_000_000


def string_to_timestamp(text: str, default_zone) -> int | None:
    """Microseconds since the epoch, or None where Spark's stringToTimestamp gives none."""
    parsed = _segments(text)
    if parsed is None:
        return None
    segments, zone_text = parsed
    chosen = default_zone if zone_text is None else zone(zone_text)
    if chosen is None:
        return None
    try:
        return _micros(segments, chosen)
    except (ValueError, OverflowError):
        return None


def parse_timestamp(text: str, default_zone) -> int | None:
    """from_json's TIMESTAMP from a string: the text, else the text without "GMT" (Spark's legacy fallback)."""
    found = string_to_timestamp(text, default_zone)
    if found is None and "GMT" in text:
        found = string_to_timestamp(text.replace("GMT", ""), default_zone)
    return found


def parse_timestamp_ntz(text: str) -> int | None:
    """from_json's TIMESTAMP_NTZ: a local date-time, refused with a zone (no fallback)."""
    parsed = _segments(text)
    if parsed is None or parsed[1] is not None:
        return None
    try:
        return _micros(parsed[0], UTC)
    except (ValueError, OverflowError):
        return None


def string_to_date(text: str) -> int | None:
    """Days since the epoch as Spark's stringToDate reads `text`, or None."""
    data = text.strip(_TRIM)
    if not data:
        return None
    segments, sign, i, j, value, digits = [1, 1, 1], 1, 0, 0, 0, 0
    if data[0] in "+-":
        sign, j = (-1 if data[0] == "-" else 1), 1
    while j < len(data) and i < 3 and data[j] not in " T":
        char = data[j]
        if i < 2 and char == "-":
            if not (4 <= digits <= 7 if i == 0 else 0 < digits <= 2):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
        elif "0" <= char <= "9":
            value, digits = value * 10 + ord(char) - 48, digits + 1
        else:
            return None
        j += 1
    if not (4 <= digits <= 7 if i == 0 else 0 < digits <= 2):
        return None
    if i < 2 and j < len(data):
        return None
    segments[i] = value
    try:
        return days_from_civil(sign * segments[0], segments[1], segments[2])
    except ValueError:
        return None


def parse_date(text: str) -> int | None:
    """from_json's DATE from a string: the text, the text without "GMT", or a whole number of days (Spark 1.5's)."""
    found = string_to_date(text)
    if found is None and "GMT" in text:
        found = string_to_date(text.replace("GMT", ""))
    if found is None and re.fullmatch(r"[+-]?\d{1,10}", text):
        days = int(text)
        if -(2**31) <= days < 2**31:
            found = days
    return found
