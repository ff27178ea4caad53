//! The one error type of this crate.
//!
//! Workload files are written by hand or by scripts, so a bad file is an
//! ordinary event, not a bug: every parser returns a [`WorkloadError`] instead
//! of panicking, and the error says *where* (file path or built-in name, and
//! the 1-based line when one line is to blame) and *what was expected*, so
//! the user can fix the file without reading our source.

use std::fmt;

/// A problem with a workload input (CDF, trace, htsim file).
///
/// Displayed like a compiler diagnostic, `origin:line: message`, so editors
/// and terminals can jump to the offending line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadError {
    /// File path or built-in name the input came from.
    pub origin: String,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<usize>,
    /// What was wrong and what was expected.
    pub msg: String,
}

impl WorkloadError {
    /// An error tied to one line of the input.
    pub fn at_line(origin: &str, line: usize, msg: impl Into<String>) -> Self {
        WorkloadError { origin: origin.to_string(), line: Some(line), msg: msg.into() }
    }

    /// An error about the input as a whole (missing data, unreadable file).
    pub fn whole(origin: &str, msg: impl Into<String>) -> Self {
        WorkloadError { origin: origin.to_string(), line: None, msg: msg.into() }
    }
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.origin, line, self.msg),
            None => write!(f, "{}: {}", self.origin, self.msg),
        }
    }
}

impl std::error::Error for WorkloadError {}

/// Reads a whole file, turning I/O failures into a `WorkloadError` that names
/// the path (the io::Error alone does not).
pub(crate) fn read_to_string(path: &std::path::Path) -> Result<String, WorkloadError> {
    std::fs::read_to_string(path)
        .map_err(|e| WorkloadError::whole(&path.display().to_string(), format!("cannot read file: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_with_and_without_line() {
        let e = WorkloadError::at_line("websearch.txt", 12, "expected two or three numbers, found \"abc\"");
        assert_eq!(e.to_string(), "websearch.txt:12: expected two or three numbers, found \"abc\"");
        let e = WorkloadError::whole("x.cm", "no connections");
        assert_eq!(e.to_string(), "x.cm: no connections");
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = read_to_string(std::path::Path::new("/nonexistent/dir/f.csv")).unwrap_err();
        assert_eq!(e.origin, "/nonexistent/dir/f.csv");
        assert!(e.msg.starts_with("cannot read file"), "{e}");
    }
}
