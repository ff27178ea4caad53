//! Writing result tables (Parquet or CSV) and JSON atomically: each file is written under a temporary name
//! in the same directory and renamed into place, so a reader never sees half a file and a crash never leaves
//! a truncated result.

use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

/// A named column. The `Opt` kinds hold values that may be unknown (an unfinished flow's end): null in
/// Parquet (an OPTIONAL column), an empty field in CSV.
#[derive(Debug)]
pub enum Column {
    I64(&'static str, Vec<i64>),
    F64(&'static str, Vec<f64>),
    Bool(&'static str, Vec<bool>),
    Str(&'static str, Vec<String>),
    OptI64(&'static str, Vec<Option<i64>>),
    OptF64(&'static str, Vec<Option<f64>>),
}

impl Column {
    fn name(&self) -> &'static str {
        match self {
            Column::I64(n, _)
            | Column::F64(n, _)
            | Column::Bool(n, _)
            | Column::Str(n, _)
            | Column::OptI64(n, _)
            | Column::OptF64(n, _) => n,
        }
    }
    fn cell(&self, r: usize) -> String {
        match self {
            Column::I64(_, v) => v[r].to_string(),
            Column::F64(_, v) if v[r].is_nan() => String::new(),
            Column::F64(_, v) => format!("{}", v[r]),
            Column::Bool(_, v) => v[r].to_string(),
            Column::OptI64(_, v) => v[r].map_or(String::new(), |x| x.to_string()),
            Column::OptF64(_, v) => v[r].filter(|x| !x.is_nan()).map_or(String::new(), |x| format!("{x}")),
            Column::Str(_, v) => {
                let s = &v[r];
                if s.contains([',', '"', '\n']) {
                    format!("\"{}\"", s.replace('"', "\"\""))
                } else {
                    s.clone()
                }
            }
        }
    }
    fn len(&self) -> usize {
        match self {
            Column::I64(_, v) => v.len(),
            Column::F64(_, v) => v.len(),
            Column::Bool(_, v) => v.len(),
            Column::Str(_, v) => v.len(),
            Column::OptI64(_, v) => v.len(),
            Column::OptF64(_, v) => v.len(),
        }
    }
}

/// Write `bytes` produced by `f` to `path` atomically.
pub fn write_atomic(path: &Path, f: impl FnOnce(&mut std::fs::File) -> io::Result<()>) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".{}.tmp-{}", path.file_name().unwrap().to_string_lossy(), std::process::id()));
    let res = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        f(&mut file)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Rows per chunk of a table written in chunks (`write_*_chunked`): the columns of one chunk are what the
/// writer holds at once, 65,536 rows of a flows table being about 10 MB.
pub const CHUNK_ROWS: usize = 1 << 16;

/// Hands each chunk of a table's columns to the writer (`emit`), in order.
pub type Chunks<'a> = dyn FnMut(&mut dyn FnMut(&[Column]) -> io::Result<()>) -> io::Result<()> + 'a;

/// A table written a chunk of rows at a time: `chunks` builds each chunk's columns and hands them on, so a
/// table of tens of millions of flows never exists whole in memory besides the records it is made from.
/// `header` gives the names and types (its rows are not written).
pub fn write_csv_chunked(path: &Path, header: &[Column], chunks: &mut Chunks) -> io::Result<()> {
    write_atomic(path, |file| {
        let mut w = io::BufWriter::new(file);
        let names: Vec<&str> = header.iter().map(Column::name).collect();
        writeln!(w, "{}", names.join(","))?;
        let mut line = String::new();
        chunks(&mut |cols: &[Column]| {
            for r in 0..cols.first().map_or(0, Column::len) {
                line.clear();
                for (i, c) in cols.iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    line.push_str(&c.cell(r));
                }
                writeln!(w, "{line}")?;
            }
            Ok(())
        })?;
        w.flush()
    })
}

fn perr(e: parquet::errors::ParquetError) -> io::Error {
    io::Error::other(e)
}

/// As `write_csv_chunked`, into a parquet file of one row group per chunk (at least one, maybe empty),
/// carrying `meta` as key-value metadata (the run's id, version, build, seed, configuration).
pub fn write_parquet_chunked(
    path: &Path,
    table: &str,
    meta: &[(&str, String)],
    cols: &[Column],
    chunks: &mut Chunks,
) -> io::Result<()> {
    let fields: Vec<String> = cols
        .iter()
        .map(|c| match c {
            Column::I64(n, _) => format!("REQUIRED INT64 {n};"),
            Column::F64(n, _) => format!("REQUIRED DOUBLE {n};"),
            Column::Bool(n, _) => format!("REQUIRED BOOLEAN {n};"),
            Column::Str(n, _) => format!("REQUIRED BYTE_ARRAY {n} (UTF8);"),
            Column::OptI64(n, _) => format!("OPTIONAL INT64 {n};"),
            Column::OptF64(n, _) => format!("OPTIONAL DOUBLE {n};"),
        })
        .collect();
    let schema = Arc::new(parse_message_type(&format!("message {table} {{ {} }}", fields.join(" "))).map_err(perr)?);
    // Dictionary encoding only for the string columns (port names): on numeric columns of distinct values
    // (times, slowdowns) the writer's dictionary interner cost 97 % of a 95 000-flow run's time (15 s).
    let mut props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_dictionary_enabled(false)
        .set_key_value_metadata(Some(meta.iter().map(|(k, v)| KeyValue::new(k.to_string(), v.clone())).collect()));
    for c in cols {
        if let Column::Str(n, _) = c {
            props = props.set_column_dictionary_enabled(ColumnPath::from(*n), true);
        }
    }
    let props = Arc::new(props.build());
    write_atomic(path, |file| {
        let mut w = SerializedFileWriter::new(file.try_clone()?, schema, props).map_err(perr)?;
        let mut groups = 0;
        chunks(&mut |c: &[Column]| {
            groups += 1;
            write_row_group(&mut w, c)
        })?;
        if groups == 0 {
            write_row_group(&mut w, cols)?;
        }
        w.close().map_err(perr)?;
        Ok(())
    })
}

fn write_row_group(w: &mut SerializedFileWriter<std::fs::File>, cols: &[Column]) -> io::Result<()> {
    {
        let mut rg = w.next_row_group().map_err(perr)?;
        let mut i = 0;
        while let Some(mut col) = rg.next_column().map_err(perr)? {
            match &cols[i] {
                Column::I64(_, v) => col.typed::<Int64Type>().write_batch(v, None, None),
                Column::F64(_, v) => col.typed::<DoubleType>().write_batch(v, None, None),
                Column::Bool(_, v) => col.typed::<BoolType>().write_batch(v, None, None),
                Column::Str(_, v) => {
                    let b: Vec<ByteArray> = v.iter().map(|s| ByteArray::from(s.as_str())).collect();
                    col.typed::<ByteArrayType>().write_batch(&b, None, None)
                }
                Column::OptI64(_, v) => {
                    let (vals, defs) = present(v);
                    col.typed::<Int64Type>().write_batch(&vals, Some(&defs), None)
                }
                Column::OptF64(_, v) => {
                    let v: Vec<Option<f64>> = v.iter().map(|x| x.filter(|x| !x.is_nan())).collect();
                    let (vals, defs) = present(&v);
                    col.typed::<DoubleType>().write_batch(&vals, Some(&defs), None)
                }
            }
            .map_err(perr)?;
            col.close().map_err(perr)?;
            i += 1;
        }
        rg.close().map_err(perr)?;
    }
    Ok(())
}

/// The known values of an optional column and its definition levels (1 known, 0 null).
fn present<T: Copy>(v: &[Option<T>]) -> (Vec<T>, Vec<i16>) {
    (v.iter().flatten().copied().collect(), v.iter().map(|x| x.is_some() as i16).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    fn table(rows: std::ops::Range<usize>) -> Vec<Column> {
        vec![
            Column::I64("id", rows.clone().map(|i| i as i64).collect()),
            Column::F64("x", rows.clone().map(|i| if i % 3 == 0 { f64::NAN } else { i as f64 / 7.0 }).collect()),
            Column::Str("s", rows.clone().map(|i| format!("r,{i}")).collect()),
            Column::OptI64("o", rows.map(|i| (i % 4 != 1).then_some(i as i64 * 10)).collect()),
        ]
    }

    #[test]
    fn a_table_written_in_chunks_is_the_table_written_whole() {
        let dir = std::env::temp_dir().join(format!("tailsim-chunks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let whole = table(0..10);
        let mut chunks = |emit: &mut dyn FnMut(&[Column]) -> io::Result<()>| {
            (0..10).step_by(4).try_for_each(|lo| emit(&table(lo..(lo + 4).min(10))))
        };
        write_csv_chunked(&dir.join("a.csv"), &whole, &mut |emit| emit(&whole)).unwrap();
        write_csv_chunked(&dir.join("b.csv"), &table(0..0), &mut chunks).unwrap();
        let a = std::fs::read_to_string(dir.join("a.csv")).unwrap();
        assert_eq!(a, std::fs::read_to_string(dir.join("b.csv")).unwrap());
        assert_eq!(a.lines().count(), 11);

        assert!(a.lines().nth(2).unwrap().ends_with(",\"r,1\","), "a null is an empty field: {a}");
        let meta = [("tailsim.run_id", "id".to_string())];
        write_parquet_chunked(&dir.join("b.parquet"), "t", &meta, &table(0..0), &mut chunks).unwrap();
        let r = SerializedFileReader::new(std::fs::File::open(dir.join("b.parquet")).unwrap()).unwrap();
        let groups: Vec<i64> = r.metadata().row_groups().iter().map(|g| g.num_rows()).collect();
        assert_eq!(groups, [4, 4, 2]);
        let ids: Vec<i64> = r
            .get_row_iter(None)
            .unwrap()
            .map(|row| match row.unwrap().get_column_iter().next().unwrap().1 {
                parquet::record::Field::Long(v) => *v,
                f => panic!("{f:?}"),
            })
            .collect();
        assert_eq!(ids, (0..10).collect::<Vec<i64>>());
        // No rows: one empty row group with the schema, as a whole write of an empty table gives.
        let nulls: Vec<bool> = r
            .get_row_iter(None)
            .unwrap()
            .map(|row| matches!(row.unwrap().get_column_iter().nth(3).unwrap().1, parquet::record::Field::Null))
            .collect();
        assert_eq!(nulls, (0..10).map(|i| i % 4 == 1).collect::<Vec<bool>>());
        let kv = r.metadata().file_metadata().key_value_metadata().unwrap();
        assert_eq!((kv[0].key.as_str(), kv[0].value.as_deref()), ("tailsim.run_id", Some("id")));
        write_parquet_chunked(&dir.join("e.parquet"), "t", &meta, &table(0..0), &mut |_| Ok(())).unwrap();
        let r = SerializedFileReader::new(std::fs::File::open(dir.join("e.parquet")).unwrap()).unwrap();
        assert_eq!((r.metadata().num_row_groups(), r.metadata().file_metadata().num_rows()), (1, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
