//! Values with units in configs: rates ("10Gbps"), durations ("2.7us"), sizes ("36KB", or a plain byte
//! count). Parsed exactly from the decimal text (no float rounding: "2.7us" is 2 700 000 ps).

use crate::units::{BitsPerSec, Time};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// Parse "12.5" scaled by 10^scale_pow10 into an exact integer; None if not a non-negative decimal or if
/// the result is not an integer.
fn exact_decimal(num: &str, scale_pow10: u32) -> Option<u128> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    if frac.len() as u32 > scale_pow10 {
        return None; // finer than the base unit
    }
    // Digits only by now, so a parse fails only by overflow. Saturate rather than wrap: a value past u128
    // (or past u64, which every caller checks) must come out too large, never as some smaller number.
    let int: u128 = if int.is_empty() { 0 } else { int.parse().unwrap_or(u128::MAX) };
    let f: u128 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    Some(int.saturating_mul(10u128.pow(scale_pow10)).saturating_add(f * 10u128.pow(scale_pow10 - frac.len() as u32)))
}

fn split_unit(s: &str) -> (&str, &str) {
    let s = s.trim();
    let i = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')).unwrap_or(s.len());
    (s[..i].trim(), s[i..].trim())
}

pub fn parse_rate(s: &str) -> Result<BitsPerSec, String> {
    let (num, unit) = split_unit(s);
    let pow = match unit.to_ascii_lowercase().as_str() {
        "bps" => 0,
        "kbps" => 3,
        "mbps" => 6,
        "gbps" => 9,
        "tbps" => 12,
        _ => return Err(format!("expected a rate like \"10Gbps\" (units bps, Kbps, Mbps, Gbps, Tbps), found \"{s}\"")),
    };
    if num.starts_with('-') {
        return Err(format!("a rate must be positive, found \"{s}\""));
    }
    match exact_decimal(num, pow) {
        Some(0) => Err(format!("a rate must be positive, found \"{s}\"")),
        Some(v) if v <= u64::MAX as u128 => Ok(BitsPerSec(v as u64)),
        Some(_) => Err(format!("a rate must be below 2^64 bps (18.4 Ebps), found \"{s}\"")),
        None => Err(format!("expected a rate like \"10Gbps\", found \"{s}\"")),
    }
}

pub fn parse_duration(s: &str) -> Result<Time, String> {
    let (num, unit) = split_unit(s);
    let pow = match unit {
        "ps" => 0,
        "ns" => 3,
        "us" | "µs" => 6,
        "ms" => 9,
        "s" => 12,
        "" if num == "0" => 0,
        _ => return Err(format!("expected a duration like \"2.5us\" (units ps, ns, us, ms, s), found \"{s}\"")),
    };
    if num.starts_with('-') {
        return Err(format!("a duration cannot be negative, found \"{s}\""));
    }
    match exact_decimal(num, pow) {
        Some(v) if v <= u64::MAX as u128 => Ok(Time(v as u64)),
        Some(_) => Err(format!("a duration must be below 2^64 ps (213 days), found \"{s}\"")),
        None => Err(format!("expected a duration like \"2.5us\" with at most picosecond precision, found \"{s}\"")),
    }
}

/// How `parse_size` refuses a size past u64, which `parse_buffer` passes on as it is.
const SIZE_TOO_LARGE: &str = "a size must be below 2^64 bytes (16 EiB)";

pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, unit) = split_unit(s);
    let (pow10, mult) = match unit {
        "" | "B" => (0, 1),
        "KB" | "kB" => (3, 1),
        "MB" => (6, 1),
        "GB" => (9, 1),
        "KiB" => (0, 1024),
        "MiB" => (0, 1 << 20),
        "GiB" => (0, 1 << 30),
        _ => {
            return Err(format!(
                "expected a size like \"36KB\" or a byte count (units B, KB, MB, GB, KiB, MiB, GiB), found \"{s}\""
            ))
        }
    };
    if num.starts_with('-') {
        return Err(format!("a size cannot be negative, found \"{s}\""));
    }
    match exact_decimal(num, pow10) {
        Some(v) => match v.checked_mul(mult) {
            Some(b) if b <= u64::MAX as u128 => Ok(b as u64),
            _ => Err(format!("{SIZE_TOO_LARGE}, found \"{s}\"")),
        },
        None => Err(format!("expected a whole number of bytes, found \"{s}\"")),
    }
}

macro_rules! unit_value {
    ($name:ident, $inner:ty, $parse:ident, $what:literal) => {
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub $inner);
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$name, E> {
                        $parse(s).map($name).map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        $parse(&v.to_string()).map($name).map_err(E::custom)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        $parse(&v.to_string()).map($name).map_err(E::custom)
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$name, E> {
                        $parse(&v.to_string()).map($name).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

unit_value!(Rate, BitsPerSec, parse_rate, "a rate such as \"10Gbps\"");
unit_value!(Duration, Time, parse_duration, "a duration such as \"2.5us\"");
unit_value!(Size, u64, parse_size, "a size such as \"36KB\" or a byte count");

/// A buffer size or "unlimited".
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Buffer(pub Option<u64>);

fn parse_buffer(s: &str) -> Result<Option<u64>, String> {
    if s.trim() == "unlimited" {
        Ok(None)
    } else {
        // A size too large keeps its own reason; anything else was perhaps not meant as a size at all.
        parse_size(s).map(Some).map_err(|e| match e.starts_with(SIZE_TOO_LARGE) {
            true => e,
            false => format!("expected a size like \"225KB\", a byte count, or \"unlimited\", found \"{s}\""),
        })
    }
}
unit_value!(BufferValue, Option<u64>, parse_buffer, "a size such as \"225KB\" or \"unlimited\"");

impl From<BufferValue> for Buffer {
    fn from(b: BufferValue) -> Buffer {
        Buffer(b.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn exact_units() {
        assert_eq!(parse_duration("2.7us").unwrap(), Time(2_700_000));
        assert_eq!(parse_duration("250ns").unwrap(), Time(250_000));
        assert_eq!(parse_duration("0").unwrap(), Time(0));
        assert_eq!(parse_rate("10Gbps").unwrap(), BitsPerSec(10_000_000_000));
        assert_eq!(parse_rate("2.5 Gbps").unwrap(), BitsPerSec(2_500_000_000));
        assert_eq!(parse_size("22.5KB").unwrap(), 22_500);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1500").unwrap(), 1500);
    }
    #[test]
    fn bad_units_are_explained() {
        assert!(parse_rate("-10Gbps").unwrap_err().contains("positive"));
        assert!(parse_rate("0Gbps").unwrap_err().contains("positive"));
        assert!(parse_rate("10").unwrap_err().contains("10Gbps"));
        assert!(parse_duration("1.5").unwrap_err().contains("duration"));
        assert!(parse_duration("0.0001ps").is_err());
        assert!(parse_size("1.5B").is_err());
        assert!(parse_size("-3KB").unwrap_err().contains("negative"));
    }
    /// Values too large for their unit are refused as too large, at every size past the limit: never wrapped
    /// into a smaller number that passes, never called imprecise.
    #[test]
    fn values_past_the_limit_are_too_large() {
        assert_eq!(parse_duration("18446744073709551615ps").unwrap(), Time(u64::MAX));
        assert_eq!(parse_size("18446744073709551615").unwrap(), u64::MAX);
        assert_eq!(parse_rate("18446744073709551615bps").unwrap(), BitsPerSec(u64::MAX));
        let huge = "340282366920938463463374607431768211455"; // u128::MAX
        let past = "3402823669209384634633746074317682114550"; // past u128
        for n in ["18446744073709551616", "18446744073709551617", huge, past] {
            assert!(parse_duration(&format!("{n}ps")).unwrap_err().contains("below 2^64 ps"), "{n}");
            assert!(parse_size(n).unwrap_err().contains("below 2^64 bytes"), "{n}");
            assert!(parse_rate(&format!("{n}bps")).unwrap_err().contains("below 2^64 bps"), "{n}");
        }
        // Scaled by the unit: past the limit only after the multiplication.
        for (n, u) in [(huge, "s"), (huge, "GiB"), ("18446744073709551616", "KiB"), ("99999999999", "s")] {
            let s = format!("{n}{u}");
            let e = if u == "s" { parse_duration(&s).unwrap_err() } else { parse_size(&s).unwrap_err() };
            assert!(e.contains("below 2^64"), "{s}: {e}");
        }
        assert!(parse_rate(&format!("{huge}Tbps")).unwrap_err().contains("below 2^64 bps"));
        // Numbers whose product with the unit wraps past 2^128 to a small value (0.57 s, 0.23 ms, 0.23 GB):
        // arithmetic that wrapped would accept them.
        assert!(parse_duration("340282366920938463463374608s").unwrap_err().contains("below 2^64 ps"));
        assert!(parse_duration("340282366920938463463374607432ms").unwrap_err().contains("below 2^64 ps"));
        assert!(parse_size("340282366920938463463374607432GB").unwrap_err().contains("below 2^64 bytes"));
        assert!(parse_size("17179869184GiB").unwrap_err().contains("below 2^64 bytes"));
        assert_eq!(parse_size("17179869183GiB").unwrap(), 17179869183 << 30);
    }
}
