//! Delimited text files of numbers (CSV, TSV, gzipped CSV), read record by record with bounded
//! memory: a line longer than [`MAX_LINE_BYTES`] is an error naming the file and the line
//! (instead of one allocation of the whole line), empty lines and `#` comments are skipped, and
//! every number error names the file, the line and the field.

use crate::error::{AppError, Result};
use crate::npyio::open_regular;
use flate2::read::GzDecoder;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Longest line accepted (64 MiB: a row of a million features written with 60 digits each).
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Opens a text file for [`for_each_record`]: a regular file (a FIFO or folder is refused),
/// gzip-decoded when its name ends in `.gz`.
pub fn open_text(path: &Path, what: &str) -> Result<Box<dyn BufRead>> {
    let file = open_regular(path, what)?;
    Ok(if path.extension().is_some_and(|e| e == "gz") {
        Box::new(BufReader::with_capacity(1 << 20, GzDecoder::new(file)))
    } else {
        Box::new(BufReader::with_capacity(1 << 20, file))
    })
}

/// The field separator of a file by its name: tab for `.tsv` (and `.tsv.gz`), comma otherwise.
pub fn delimiter_of(path: &Path) -> u8 {
    let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    if name.ends_with(".tsv") || name.ends_with(".tsv.gz") {
        b'\t'
    } else {
        b','
    }
}

/// Where blank lines may stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blank {
    /// Anywhere (edge lists, id lists: a blank line holds nothing).
    Skip,
    /// Only at the end (files with one line per node, where a blank line in the middle would
    /// shift every later node: an error naming the line).
    AtEnd,
}

/// Calls `record(line, fields)` for every data line of `reader` (1-based line numbers; fields
/// split at `delim` and trimmed; lines starting with `#` skipped, blank lines as `blank`
/// says). Returns the number of records.
pub fn for_each_record<R: BufRead>(
    path: &Path,
    reader: R,
    delim: u8,
    blank: Blank,
    record: impl FnMut(usize, &[&str]) -> Result<()>,
) -> Result<usize> {
    for_each_record_capped(path, reader, delim, blank, MAX_LINE_BYTES, record)
}

/// [`for_each_record`] with a line cap of `cap` bytes.
pub fn for_each_record_capped<R: BufRead>(
    path: &Path,
    mut reader: R,
    delim: u8,
    blank: Blank,
    cap: usize,
    mut record: impl FnMut(usize, &[&str]) -> Result<()>,
) -> Result<usize> {
    let mut buf = Vec::new();
    let (mut line, mut records) = (0usize, 0usize);
    let mut first_blank = None;
    loop {
        buf.clear();
        line += 1;
        let read = (&mut reader)
            .take(cap as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| AppError::Format { path: path.into(), msg: format!("line {line}: {e}") })?;
        if read == 0 {
            return Ok(records);
        }
        if buf.last() != Some(&b'\n') && buf.len() > cap {
            return Err(AppError::Format {
                path: path.into(),
                msg: format!("line {line} is longer than {cap} bytes (the limit of a line): not a table of numbers"),
            });
        }
        let text = std::str::from_utf8(&buf)
            .map_err(|_| AppError::Format { path: path.into(), msg: format!("line {line} is not UTF-8 text") })?;
        let text = text.trim();
        if text.starts_with('#') {
            continue;
        }
        if text.is_empty() {
            first_blank.get_or_insert(line);
            continue;
        }
        if let (Blank::AtEnd, Some(b)) = (blank, first_blank) {
            return Err(AppError::Format {
                path: path.into(),
                msg: format!("line {b} is blank: this file has one line per node (write -1 for an unlabeled node)"),
            });
        }
        let fields: Vec<&str> = text.split(delim as char).map(str::trim).collect();
        record(line, &fields)?;
        records += 1;
    }
}

/// Whether a first line is a header: none of its fields is a number.
pub fn is_header(fields: &[&str]) -> bool {
    fields.iter().all(|f| f.parse::<f64>().is_err())
}

/// Parses an integer field (a node id or a label).
pub fn int(path: &Path, line: usize, field: &str, what: &str) -> Result<i64> {
    field.parse().map_err(|_| AppError::Format {
        path: path.into(),
        msg: format!("line {line}: {what} `{}` is not an integer", shorten(field)),
    })
}

/// Parses a label field: an integer, `-1` for unlabeled, a float holding an integer (`3.0`, as
/// pandas writes an integer column with missing values) or `nan` for unlabeled.
pub fn label(path: &Path, line: usize, field: &str) -> Result<i64> {
    if let Ok(v) = field.parse::<i64>() {
        return Ok(v);
    }
    match field.parse::<f64>() {
        Ok(v) if v.is_nan() => Ok(-1),
        Ok(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => Ok(v as i64),
        _ => Err(AppError::Format {
            path: path.into(),
            msg: format!(
                "line {line}: label `{}` is not an integer class id (or -1 / nan for unlabeled)",
                shorten(field)
            ),
        }),
    }
}

/// Parses a float field.
pub fn float(path: &Path, line: usize, field: &str, what: &str) -> Result<f32> {
    field.parse().map_err(|_| AppError::Format {
        path: path.into(),
        msg: format!("line {line}: {what} `{}` is not a number", shorten(field)),
    })
}

/// The first 40 characters of a field, for messages.
fn shorten(s: &str) -> String {
    if s.chars().count() <= 40 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(40).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str, cap: usize) -> Result<Vec<(usize, Vec<String>)>> {
        let mut out = Vec::new();
        for_each_record_capped(Path::new("t.csv"), text.as_bytes(), b',', Blank::Skip, cap, |line, f| {
            out.push((line, f.iter().map(|s| s.to_string()).collect()));
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn comments_blank_lines_and_spaces_are_skipped() {
        let r = records("# a comment\n\n 1, 2 \r\n3,4", 100).unwrap();
        assert_eq!(r, vec![(3, vec!["1".into(), "2".into()]), (4, vec!["3".into(), "4".into()])]);
    }

    #[test]
    fn blank_lines_in_a_one_line_per_node_file_are_errors_except_at_the_end() {
        let count = |text: &str| {
            for_each_record_capped(Path::new("l.csv"), text.as_bytes(), b',', Blank::AtEnd, 100, |_, _| Ok(()))
        };
        assert_eq!(count("0\n1\n\n\n").unwrap(), 2);
        let e = count("0\n\n1\n").unwrap_err().to_string();
        assert!(e.contains("l.csv: line 2 is blank"), "{e}");
    }

    #[test]
    fn a_line_longer_than_the_cap_is_an_error_naming_the_line() {
        let long = format!("1,2\n{}\n", "7".repeat(50));
        let e = records(&long, 20).unwrap_err().to_string();
        assert!(e.contains("t.csv: line 2 is longer than 20 bytes"), "{e}");
        // exactly at the cap is fine
        assert!(records(&format!("{}\n", "7".repeat(20)), 20).is_ok());
        assert!(records(&"7".repeat(20), 20).is_ok());
    }

    #[test]
    fn non_utf8_and_non_numbers_are_errors() {
        let e =
            for_each_record_capped(Path::new("b.csv"), &b"1,2\n\xff\xfe\n"[..], b',', Blank::Skip, 100, |_, _| Ok(()))
                .unwrap_err()
                .to_string();
        assert!(e.contains("b.csv: line 2 is not UTF-8"), "{e}");
        let e = int(Path::new("b.csv"), 3, "x1", "node id").unwrap_err().to_string();
        assert_eq!(e, "b.csv: line 3: node id `x1` is not an integer");
        let p = Path::new("l.csv");
        assert_eq!((label(p, 1, "3").unwrap(), label(p, 1, "3.0").unwrap(), label(p, 1, "nan").unwrap()), (3, 3, -1));
        assert!(label(p, 1, "").is_err());
        assert!(label(p, 4, "2.5").unwrap_err().to_string().contains("line 4: label `2.5` is not an integer"));
        assert!(is_header(&["src", "dst"]) && !is_header(&["src", "1"]) && !is_header(&["0", "1"]));
    }
}
