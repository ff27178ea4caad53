//! Flow traces: explicit lists of flows (who sends how much to whom, when).
//!
//! A trace replaces the random flow generator when a run must replay exactly
//! the same flows as another simulator or as an earlier run. Three file
//! formats are read, chosen by extension in [`read_trace`]:
//!
//! * `.csv` — our own format, parsed by [`parse_trace_csv`];
//! * `.cm` and `.flows` — htsim's connection matrix and its plain twin, see
//!   [`crate::htsim`].
//!
//! # CSV format
//!
//! ```text
//! # comment lines start with '#', blank lines are skipped
//! id,src,dst,size_bytes,start_us
//! 1,16,33,7861,0
//! 2,120,83,45923,3.25
//! ```
//!
//! The first non-comment line is the header. Required columns: `src`, `dst`,
//! `size_bytes`, and exactly one start column: `start_us`, `start_ns` or
//! `start_ps`; the name carries the unit. Optional: `id`. Columns may come in
//! any order; columns with other names are ignored (so a trace can carry
//! notes for other tools). Fields are plain numbers separated by commas, with
//! no quoting. `start_us` and `start_ns` may be fractional (`3.25`, `1e-3`);
//! they are converted to integer picoseconds from the decimal text itself,
//! rounding to the nearest picosecond (halves round up), so `0.1` µs is
//! exactly 100 000 ps and not whatever the nearest binary float gives.
//! `start_ps` must be a whole number.
//!
//! A flow may be pinned to a path (so that it crosses the same switches as in another simulator): an
//! optional `path` column lists the switches from the source's to the destination's, by name, separated by
//! spaces (`leaf0 spine2 leaf3`), or an optional `via` column names one switch the path must cross
//! (`spine2`), the shortest path through it being unique. An empty field leaves that flow to the
//! switches' load balancing. The names are checked against the topology when the run is built.
//!
//! Flows are returned in file order: sorting by start time is the caller's
//! job, because some callers want the file order (e.g. to keep ids stable).

use std::path::Path;

use crate::error::{read_to_string, WorkloadError};

/// One flow of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraceFlow {
    /// Flow id from the file, if the format has one.
    pub id: Option<u64>,
    /// Sending host.
    pub src: u32,
    /// Receiving host (never equal to `src`).
    pub dst: u32,
    /// Bytes of application data (at least 1).
    pub size_bytes: u64,
    /// Start time in picoseconds, tailsim's time unit.
    pub start_ps: u64,
    /// The path the file pins the flow to, if it names one.
    pub route: Option<Box<TraceRoute>>,
}

/// A path as a trace names it (resolved against the topology by the simulator).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraceRoute {
    /// Switch names, in order (`path`), or the one switch to cross (`via`).
    pub switches: Vec<String>,
    /// Given by the `via` column: only one switch of the path is named.
    pub via: bool,
    /// The file and line it came from, for errors.
    pub origin: String,
    pub line: usize,
}

/// Reads a trace file, choosing the parser by extension: `.csv`
/// ([`parse_trace_csv`]), `.cm` ([`crate::htsim::parse_cm`]) or `.flows`
/// ([`crate::htsim::parse_flows`]).
pub fn read_trace(path: &Path) -> Result<Vec<TraceFlow>, WorkloadError> {
    read_trace_nodes(path).map(|(flows, _)| flows)
}

/// A trace's flows, with the number of hosts the file declares and on which line (htsim's `Nodes N`).
pub type TraceWithNodes = (Vec<TraceFlow>, Option<(u64, usize)>);

/// As `read_trace`, with the number of hosts the file declares, if it does.
pub fn read_trace_nodes(path: &Path) -> Result<TraceWithNodes, WorkloadError> {
    let origin = path.display().to_string();
    let ext = path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase());
    let parse: fn(&str, &str) -> Result<TraceWithNodes, WorkloadError> = match ext.as_deref() {
        Some("csv") => |t, o| parse_trace_csv(t, o).map(|f| (f, None)),
        Some("cm") => |t, o| crate::htsim::parse_cm_nodes(t, o).map(|(f, n)| (f, Some(n))),
        Some("flows") => |t, o| crate::htsim::parse_flows(t, o).map(|f| (f, None)),
        _ => {
            return Err(WorkloadError::whole(
                &origin,
                "unknown trace format: expected a file name ending in .csv, .cm or .flows",
            ))
        }
    };
    let text = read_to_string(path)?;
    parse(&text, &origin)
}

/// Parses a CSV trace (format in the module documentation).
pub fn parse_trace_csv(text: &str, origin: &str) -> Result<Vec<TraceFlow>, WorkloadError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text); // spreadsheet exports add a BOM
    let mut lines = crate::data_lines(text);
    let Some((header_line, header)) = lines.next() else {
        return Err(WorkloadError::whole(
            origin,
            "empty trace: expected a header row such as \"src,dst,size_bytes,start_us\"",
        ));
    };
    let columns = Columns::from_header(header, origin, header_line)?;
    let flows = lines.map(|(n, line)| columns.parse_row(line, origin, n)).collect::<Result<Vec<_>, _>>()?;
    if flows.is_empty() {
        return Err(WorkloadError::whole(origin, "the trace has a header but no flows"));
    }
    Ok(flows)
}

/// Where each field sits in a row, learnt from the header.
struct Columns {
    count: usize,
    src: usize,
    dst: usize,
    size: usize,
    start: usize,
    /// Picoseconds per unit of the start column, as a power of ten.
    start_exp10: i32,
    id: Option<usize>,
    path: Option<usize>,
    via: Option<usize>,
}

impl Columns {
    fn from_header(header: &str, origin: &str, line: usize) -> Result<Self, WorkloadError> {
        let names: Vec<&str> = header.split(',').map(str::trim).collect();
        let err = |msg: String| WorkloadError::at_line(origin, line, msg);
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(err(format!("column \"{name}\" appears twice in the header")));
            }
        }
        let find = |name: &str| names.iter().position(|n| *n == name);
        let require = |name: &str| {
            find(name).ok_or_else(|| {
                err(format!(
                    "missing column \"{name}\": the header must name src, dst, size_bytes and one of start_us, start_ns, start_ps"
                ))
            })
        };
        let starts: Vec<(usize, i32)> = [("start_us", 6), ("start_ns", 3), ("start_ps", 0)]
            .into_iter()
            .filter_map(|(name, exp)| find(name).map(|i| (i, exp)))
            .collect();
        let (start, start_exp10) = match starts.as_slice() {
            [one] => *one,
            [] => return Err(err("missing start column: expected one of start_us, start_ns, start_ps".into())),
            _ => {
                return Err(err("more than one start column: keep exactly one of start_us, start_ns, start_ps".into()))
            }
        };
        Ok(Columns {
            count: names.len(),
            src: require("src")?,
            dst: require("dst")?,
            size: require("size_bytes")?,
            start,
            start_exp10,
            id: find("id"),
            path: find("path"),
            via: find("via"),
        })
    }

    fn parse_row(&self, line: &str, origin: &str, n: usize) -> Result<TraceFlow, WorkloadError> {
        let err = |msg: String| WorkloadError::at_line(origin, n, msg);
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != self.count {
            return Err(err(format!(
                "expected {} comma-separated fields as in the header, found {}",
                self.count,
                fields.len()
            )));
        }
        let src = parse_host(fields[self.src], "src").map_err(err)?;
        let dst = parse_host(fields[self.dst], "dst").map_err(err)?;
        if src == dst {
            return Err(err(format!("src and dst are both {src}: a flow needs two different hosts")));
        }
        let size_bytes = parse_size(fields[self.size], "size_bytes").map_err(err)?;
        let start_text = fields[self.start];
        let start_ps = if self.start_exp10 == 0 {
            start_text
                .parse::<u64>()
                .map_err(|_| err(format!("bad start_ps \"{start_text}\": expected a whole number of picoseconds")))?
        } else {
            decimal_to_ps(start_text, self.start_exp10).map_err(|m| err(format!("bad start time: {m}")))?
        };
        let id = match self.id {
            Some(i) => Some(
                fields[i]
                    .parse::<u64>()
                    .map_err(|_| err(format!("bad id \"{}\": expected a non-negative integer", fields[i])))?,
            ),
            None => None,
        };
        let named = |i: Option<usize>| i.map(|i| fields[i]).filter(|t| !t.is_empty());
        let route = match (named(self.path), named(self.via)) {
            (Some(_), Some(_)) => return Err(err("both path and via are given: keep one".into())),
            (None, None) => None,
            (Some(t), None) | (None, Some(t)) => {
                let switches: Vec<String> = t.split_whitespace().map(str::to_string).collect();
                let via = named(self.via).is_some();
                if via && switches.len() != 1 {
                    return Err(err(format!("bad via \"{t}\": expected one switch name")));
                }
                Some(Box::new(TraceRoute { switches, via, origin: origin.to_string(), line: n }))
            }
        };
        Ok(TraceFlow { id, src, dst, size_bytes, start_ps, route })
    }
}

/// Parses a host number; the error names the field and shows the text.
pub(crate) fn parse_host(text: &str, what: &str) -> Result<u32, String> {
    text.parse::<u32>().map_err(|_| format!("bad {what} \"{text}\": expected a host number (a non-negative integer)"))
}

/// Parses a flow size in bytes, which must be at least 1: a zero-byte flow
/// would never complete in most transports and usually means a broken script.
pub(crate) fn parse_size(text: &str, what: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err(format!("bad {what} \"{text}\": a flow must carry at least 1 byte")),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("bad {what} \"{text}\": expected a positive whole number of bytes")),
    }
}

/// Converts a non-negative decimal number (`12`, `0.25`, `1.5e-3`) given in
/// units of 10^`exp10` picoseconds to whole picoseconds, rounding to nearest
/// (halves up).
///
/// Works on the decimal digits with integer arithmetic, because going through
/// `f64` would turn e.g. `0.3` µs into 299 999.99… ps and then depend on how
/// that is rounded.
pub(crate) fn decimal_to_ps(text: &str, exp10: i32) -> Result<u64, String> {
    let bad = || format!("\"{text}\" is not a non-negative decimal number");
    if text.starts_with('-') {
        return Err(format!("\"{text}\" is negative"));
    }
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => {
            let e: i32 = text[i + 1..].parse().map_err(|_| bad())?;
            if e.abs() > 400 {
                return Err(format!("\"{text}\" is out of range"));
            }
            (&text[..i], e)
        }
        None => (text, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let is_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int_part.is_empty() && frac_part.is_empty()) || !is_digits(int_part) || !is_digits(frac_part) {
        return Err(bad());
    }
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Ok(0);
    }
    if digits.len() > 36 {
        return Err(format!("\"{text}\" has too many digits"));
    }
    let m: u128 = digits.parse().map_err(|_| bad())?;
    // value in ps = m * 10^scale
    let scale = exponent + exp10 - frac_part.len() as i32;
    let too_big = || format!("\"{text}\" is too large (more than 2^64 picoseconds)");
    let ps: u128 = if scale >= 0 {
        10u128.checked_pow(scale as u32).and_then(|p| m.checked_mul(p)).ok_or_else(too_big)?
    } else {
        match 10u128.checked_pow((-scale) as u32) {
            // m < 10^36 < 10^38 / 2, so m rounds to 0 ps
            None => 0,
            Some(d) => m / d + u128::from(2 * (m % d) >= d),
        }
    };
    u64::try_from(ps).map_err(|_| too_big())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(id: Option<u64>, src: u32, dst: u32, size_bytes: u64, start_ps: u64) -> TraceFlow {
        TraceFlow { id, src, dst, size_bytes, start_ps, route: None }
    }

    #[test]
    fn csv_columns_in_any_order_with_units() {
        let text = "# a comment\n\nstart_ns, dst ,src,size_bytes,note\n1.5,2,1,100,x\n\n2,0,3,5,y\n";
        let flows = parse_trace_csv(text, "t.csv").unwrap();
        assert_eq!(flows, vec![flow(None, 1, 2, 100, 1500), flow(None, 3, 0, 5, 2000)]);

        let flows = parse_trace_csv("id,src,dst,size_bytes,start_us\n7,0,1,10,0.000001\n", "t.csv").unwrap();
        assert_eq!(flows, vec![flow(Some(7), 0, 1, 10, 1)]);

        let flows = parse_trace_csv("src,dst,size_bytes,start_ps\r\n0,1,10,123456789\r\n", "t.csv").unwrap();
        assert_eq!(flows[0].start_ps, 123_456_789);
    }

    #[test]
    fn keeps_file_order() {
        let flows = parse_trace_csv("src,dst,size_bytes,start_us\n0,1,1,5\n1,0,1,2\n", "t").unwrap();
        assert_eq!(flows.iter().map(|f| f.start_ps).collect::<Vec<_>>(), vec![5_000_000, 2_000_000]);
    }

    #[test]
    fn decimal_conversion_is_exact() {
        assert_eq!(decimal_to_ps("0.3", 6), Ok(300_000));
        assert_eq!(decimal_to_ps("1993", 6), Ok(1_993_000_000));
        assert_eq!(decimal_to_ps(".5", 3), Ok(500));
        assert_eq!(decimal_to_ps("7.", 3), Ok(7000));
        assert_eq!(decimal_to_ps("1e-05", 6), Ok(10));
        assert_eq!(decimal_to_ps("2.5E2", 3), Ok(250_000));
        assert_eq!(decimal_to_ps("0.0005", 3), Ok(1)); // 0.5 ps rounds up
        assert_eq!(decimal_to_ps("0.0004999", 3), Ok(0));
        assert_eq!(decimal_to_ps("1e-300", 6), Ok(0));
        assert_eq!(decimal_to_ps("000", 6), Ok(0));
        for bad in ["", ".", "-1", "1.2.3", "abc", "1e", "0x10", " 1", "1e999", "inf", "NaN", "+-1"] {
            assert!(decimal_to_ps(bad, 6).is_err(), "{bad:?} accepted");
        }
        assert!(decimal_to_ps("18446744073709552", 3).is_err()); // > u64::MAX ps
    }

    fn csv_err(text: &str) -> WorkloadError {
        parse_trace_csv(text, "bad.csv").unwrap_err()
    }

    #[test]
    fn csv_errors_name_the_line() {
        let h = "src,dst,size_bytes,start_us\n";
        let cases = [
            (format!("{h}0,1,10,0\n2,2,10,0\n"), 3, "two different hosts"),
            (format!("{h}0,1,0,0\n"), 2, "at least 1 byte"),
            (format!("{h}0,1,10,-3\n"), 2, "negative"),
            (format!("{h}0,1,10,abc\n"), 2, "not a non-negative decimal"),
            (format!("{h}-1,1,10,0\n"), 2, "bad src \"-1\""),
            (format!("{h}0,x,10,0\n"), 2, "bad dst \"x\""),
            (format!("{h}0,1,1.5,0\n"), 2, "bad size_bytes"),
            (format!("{h}0,1,10\n"), 2, "expected 4 comma-separated fields"),
            ("src,dst,size_bytes,start_ps\n\n0,1,10,1.5\n".into(), 3, "whole number of picoseconds"),
            ("id,src,dst,size_bytes,start_us\n-1,0,1,10,0\n".into(), 2, "bad id"),
            ("# c\nsrc,dst,size,start_us\n".into(), 2, "missing column \"size_bytes\""),
            ("src,dst,size_bytes\n".into(), 1, "missing start column"),
            ("src,dst,size_bytes,start_us,start_ns\n".into(), 1, "more than one start column"),
            ("src,src,dst,size_bytes,start_us\n".into(), 1, "appears twice"),
        ];
        for (text, line, needle) in cases {
            let e = csv_err(&text);
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
            assert!(e.to_string().starts_with(&format!("bad.csv:{line}: ")), "{e}");
        }
        assert_eq!(csv_err("").line, None);
        assert!(csv_err("src,dst,size_bytes,start_us\n").msg.contains("no flows"));
    }

    #[test]
    fn read_trace_dispatches_by_extension() {
        let e = read_trace(Path::new("/x/flows.txt")).unwrap_err();
        assert!(e.msg.contains(".csv, .cm or .flows"), "{e}");
        let e = read_trace(Path::new("/nonexistent/x.CSV")).unwrap_err();
        assert!(e.msg.contains("cannot read file"), "{e}");
    }
}
