//! Parquet copies of the run's CSV tables, written without a Parquet
//! library: a run's outputs then need no pyarrow, whose import alone took
//! 0.3 s of CPU and 58 MB per run: most of a small scenario's run, and on
//! the 320-host ns-3 input the whole process took 0.20–0.33 s (3–5 %) less.
//!
//! What is written is plain Parquet that readers take as it is (pyarrow and
//! Polars in the tests): format version 1, one row group, data pages (v1)
//! of at most [`PAGE_ROWS`] rows or about [`PAGE_BYTES`], PLAIN values compressed with Snappy (the
//! `snap` crate), no dictionary. Each column chunk carries its statistics
//! (null count, least and greatest value in the column's sort order), so
//! that a query over many runs' files skips those whose values cannot
//! match (Polars' and pyarrow's predicate push-down read them). Every column is OPTIONAL
//! (nullable, as pyarrow writes them) with RLE definition levels. Unsigned
//! and text columns carry both the old `ConvertedType` and the newer
//! `LogicalType` annotation, so a reader types them `uint8` … `uint64` and
//! `string`. The metadata follows `parquet.thrift` of the Apache Parquet
//! format, serialised with Thrift's compact protocol.
//!
//! A cell reads as a reader of the CSV typed by the same columns reads it
//! (pyarrow's `read_csv` with `column_types` and `strings_can_be_null=False`):
//! an empty cell, `NaN`, `null` and the other entries of [`NULL_CELLS`] are
//! null in a number or flag column; a text cell is never null.
//! `tests/test_parquet_tables.py` holds the two readings equal, for every
//! column type and for a run's tables.

use std::fmt;

/// At most this many rows in a data page (512 KiB of 8-byte values)…
pub const PAGE_ROWS: usize = 1 << 16;
/// …and a new page once this many value bytes are in one (long text), so
/// that every page size fits the header's 32-bit fields.
pub const PAGE_BYTES: usize = 1 << 20;

/// The cells pyarrow's CSV reader takes as null in a typed column by
/// default (`ConvertOptions.null_values`).
pub const NULL_CELLS: &[&str] = &[
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null",
];

/// A column's type, by the name the Python side gives it (pyarrow's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    Bool,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Int64,
    Float64,
    String,
}

impl ColumnType {
    pub const NAMES: &'static [(&'static str, ColumnType)] = &[
        ("bool", ColumnType::Bool),
        ("uint8", ColumnType::UInt8),
        ("uint16", ColumnType::UInt16),
        ("uint32", ColumnType::UInt32),
        ("uint64", ColumnType::UInt64),
        ("int64", ColumnType::Int64),
        ("float64", ColumnType::Float64),
        ("string", ColumnType::String),
    ];

    pub fn from_name(name: &str) -> Option<ColumnType> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, t)| t)
    }

    /// Parquet's physical type (`Type` in parquet.thrift).
    fn physical(self) -> i32 {
        match self {
            ColumnType::Bool => 0,
            ColumnType::UInt8 | ColumnType::UInt16 | ColumnType::UInt32 => 1,
            ColumnType::UInt64 | ColumnType::Int64 => 2,
            ColumnType::Float64 => 5,
            ColumnType::String => 6,
        }
    }

    /// (`ConvertedType`, bit width of an unsigned `IntType`) annotations.
    fn annotation(self) -> Option<(i32, Option<i8>)> {
        match self {
            ColumnType::String => Some((0, None)),
            ColumnType::UInt8 => Some((11, Some(8))),
            ColumnType::UInt16 => Some((12, Some(16))),
            ColumnType::UInt32 => Some((13, Some(32))),
            ColumnType::UInt64 => Some((14, Some(64))),
            _ => None,
        }
    }
}

/// A CSV cell that does not read as its column's type.
#[derive(Debug, PartialEq, Eq)]
pub struct TableError(pub String);

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One column's non-null values, PLAIN-encoded as they are read.
struct Column {
    ty: ColumnType,
    /// Whether each row has a value (the definition level, 1 or 0).
    defined: Vec<bool>,
    /// The non-null values, PLAIN: little-endian numbers, length-prefixed
    /// text; flags as bools until a page packs them into bits.
    plain: Vec<u8>,
    /// Where each row's value ends in `plain` (for cutting pages).
    ends: Vec<usize>,
    flags: Vec<bool>,
}

impl Column {
    fn push(&mut self, cell: &str) -> Result<(), String> {
        let null = self.ty != ColumnType::String && NULL_CELLS.contains(&cell);
        self.defined.push(!null);
        if !null {
            let int = |max: u64| -> Result<u64, String> {
                cell.parse::<u64>()
                    .ok()
                    .filter(|&v| v <= max)
                    .ok_or_else(|| format!("a whole number from 0 to {max}"))
            };
            match self.ty {
                ColumnType::Bool => self.flags.push(match cell {
                    "1" | "True" | "TRUE" | "true" => true,
                    "0" | "False" | "FALSE" | "false" => false,
                    _ => return Err("true or false".into()),
                }),
                ColumnType::UInt8 => self
                    .plain
                    .extend((int(u8::MAX as u64)? as u32).to_le_bytes()),
                ColumnType::UInt16 => self
                    .plain
                    .extend((int(u16::MAX as u64)? as u32).to_le_bytes()),
                ColumnType::UInt32 => self
                    .plain
                    .extend((int(u32::MAX as u64)? as u32).to_le_bytes()),
                ColumnType::UInt64 => self.plain.extend(int(u64::MAX)?.to_le_bytes()),
                ColumnType::Int64 => self.plain.extend(
                    cell.parse::<i64>()
                        .map_err(|_| "a whole number".to_string())?
                        .to_le_bytes(),
                ),
                ColumnType::Float64 => self.plain.extend(
                    cell.parse::<f64>()
                        .map_err(|_| "a number".to_string())?
                        .to_le_bytes(),
                ),
                ColumnType::String => {
                    self.plain.extend((cell.len() as u32).to_le_bytes());
                    self.plain.extend(cell.as_bytes());
                }
            }
        }
        self.ends.push(self.plain.len());
        Ok(())
    }
}

/// `csv` (the core's table: a header line, then rows, comma-separated and
/// never quoted) as a Parquet file of `columns` (name and type), in that
/// order; columns of the CSV not named are left out. `what` names the table
/// in errors.
pub fn csv_to_parquet(
    csv: &str,
    columns: &[(&str, ColumnType)],
    what: &str,
    created_by: &str,
) -> Result<Vec<u8>, TableError> {
    let mut lines = csv.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let mut at = Vec::with_capacity(columns.len());
    for (name, _) in columns {
        match header.iter().position(|h| h == name) {
            Some(i) => at.push(i),
            None => {
                return Err(TableError(format!(
                    "{what}: no column `{name}`; the header has {}",
                    header.join(", ")
                )))
            }
        }
    }
    let mut cols: Vec<Column> = columns
        .iter()
        .map(|&(_, ty)| Column {
            ty,
            defined: Vec::new(),
            plain: Vec::new(),
            ends: Vec::new(),
            flags: Vec::new(),
        })
        .collect();
    let mut cells: Vec<&str> = Vec::with_capacity(header.len());
    for (n, line) in lines.enumerate() {
        if line.is_empty() {
            continue;
        }
        cells.clear();
        cells.extend(line.split(','));
        if cells.len() != header.len() {
            return Err(TableError(format!(
                "{what}, line {}: {} cells where the header has {}",
                n + 2,
                cells.len(),
                header.len()
            )));
        }
        for ((col, &i), (name, _)) in cols.iter_mut().zip(&at).zip(columns) {
            col.push(cells[i]).map_err(|allowed| {
                TableError(format!(
                    "{what}, line {}, column `{name}`: `{}` is not {allowed}",
                    n + 2,
                    cells[i]
                ))
            })?;
        }
    }
    Ok(write_file(columns, &cols, created_by))
}

/// Where a column chunk starts, and its size as written and uncompressed
/// (page headers included in both).
struct Chunk {
    offset: i64,
    bytes: i64,
    raw: i64,
    stats: Stats,
}

/// A column chunk's `Statistics`: its nulls, and its least and greatest
/// values PLAIN-encoded (`None` when it has no value to order).
struct Stats {
    nulls: i64,
    min_max: Option<(Vec<u8>, Vec<u8>)>,
}

impl Column {
    /// The nulls, least and greatest value, in the order the column's type
    /// gives it (parquet.thrift's `ColumnOrder` TYPE_ORDER): unsigned for
    /// the unsigned columns, whose physical type is signed; floats without
    /// NaN, a zero least as -0.0 and greatest as +0.0 (the format's rules,
    /// since a reader cannot tell which zero a page held); text by bytes;
    /// false before true.
    fn stats(&self) -> Stats {
        let nulls = self.defined.iter().filter(|&&d| !d).count() as i64;
        let min_max = match self.ty {
            ColumnType::Bool => {
                let (lo, hi) = (self.flags.iter().all(|&f| f), self.flags.iter().any(|&f| f));
                (!self.flags.is_empty()).then(|| (vec![lo as u8], vec![hi as u8]))
            }
            ColumnType::UInt8 | ColumnType::UInt16 | ColumnType::UInt32 => {
                plain_range(&self.plain, u32::from_le_bytes, u32::to_le_bytes)
            }
            ColumnType::UInt64 => plain_range(&self.plain, u64::from_le_bytes, u64::to_le_bytes),
            ColumnType::Int64 => plain_range(&self.plain, i64::from_le_bytes, i64::to_le_bytes),
            ColumnType::Float64 => {
                let v = self
                    .plain
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap()));
                let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
                let mut any = false;
                for x in v.filter(|x| !x.is_nan()) {
                    any = true;
                    lo = lo.min(x);
                    hi = hi.max(x);
                }
                if lo == 0.0 {
                    lo = -0.0;
                }
                if hi == 0.0 {
                    hi = 0.0;
                }
                any.then(|| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec()))
            }
            ColumnType::String => {
                let mut texts = Vec::new();
                let mut at = 0;
                while at < self.plain.len() {
                    let n = u32::from_le_bytes(self.plain[at..at + 4].try_into().unwrap()) as usize;
                    texts.push(&self.plain[at + 4..at + 4 + n]);
                    at += 4 + n;
                }
                range(texts.into_iter()).map(|(lo, hi)| (lo.to_vec(), hi.to_vec()))
            }
        };
        Stats { nulls, min_max }
    }
}

/// The least and greatest of the `N`-byte PLAIN values in `plain`, read and
/// written back by `read` and `write` (their type gives the order), if any.
fn plain_range<const N: usize, T: Ord + Copy>(
    plain: &[u8],
    read: fn([u8; N]) -> T,
    write: fn(T) -> [u8; N],
) -> Option<(Vec<u8>, Vec<u8>)> {
    let values = plain
        .chunks_exact(N)
        .map(|b| read(b.try_into().expect("N bytes")));
    range(values).map(|(lo, hi)| (write(lo).to_vec(), write(hi).to_vec()))
}

/// The least and greatest of `values`, if any.
fn range<T: Ord + Copy>(mut values: impl Iterator<Item = T>) -> Option<(T, T)> {
    let first = values.next()?;
    Some(values.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
}

/// The whole file: magic, the column chunks of one row group, the footer.
fn write_file(names: &[(&str, ColumnType)], cols: &[Column], created_by: &str) -> Vec<u8> {
    let rows = cols.first().map_or(0, |c| c.defined.len());
    let mut out = b"PAR1".to_vec();
    let mut chunks = Vec::with_capacity(cols.len());
    if rows > 0 {
        for col in cols {
            let start = out.len();
            let mut raw = 0;
            let (mut from, mut flags_from) = (0, 0);
            while from < rows {
                let start = if from == 0 { 0 } else { col.ends[from - 1] };
                let mut to = from + 1;
                while to < rows.min(from + PAGE_ROWS) && col.ends[to] - start <= PAGE_BYTES {
                    to += 1;
                }
                raw += write_page(&mut out, col, from, to, &mut flags_from);
                from = to;
            }
            chunks.push(Chunk {
                offset: start as i64,
                bytes: (out.len() - start) as i64,
                raw,
                stats: col.stats(),
            });
        }
    }
    let meta = file_metadata(names, &chunks, rows as i64, created_by);
    out.extend(&meta);
    out.extend((meta.len() as u32).to_le_bytes());
    out.extend(b"PAR1");
    out
}

/// One data page (v1) of rows `from..to` of `col`: its header, then,
/// Snappy-compressed, the definition levels (4-byte length, RLE runs) and
/// the PLAIN values. `flags_from`: the first of a flag column's values
/// not yet written (moved past this page's). Returns the page's size
/// uncompressed, header included.
fn write_page(
    out: &mut Vec<u8>,
    col: &Column,
    from: usize,
    to: usize,
    flags_from: &mut usize,
) -> i64 {
    let mut body = Vec::new();
    let levels = rle_levels(&col.defined[from..to]);
    body.extend((levels.len() as u32).to_le_bytes());
    body.extend(levels);
    if col.ty == ColumnType::Bool {
        // PLAIN booleans: one bit each, least significant first.
        let first = *flags_from;
        let n = col.defined[from..to].iter().filter(|&&d| d).count();
        *flags_from += n;
        let mut bits = vec![0u8; n.div_ceil(8)];
        for (i, &f) in col.flags[first..first + n].iter().enumerate() {
            bits[i / 8] |= (f as u8) << (i % 8);
        }
        body.extend(bits);
    } else {
        let a = if from == 0 { 0 } else { col.ends[from - 1] };
        body.extend(&col.plain[a..col.ends[to - 1]]);
    }
    let packed = snap::raw::Encoder::new()
        .compress_vec(&body)
        .expect("a page is far below Snappy's 4 GiB limit");
    let mut h = Compact::new();
    h.i32(1, 0); // type: DATA_PAGE
    h.i32(2, body.len() as i32); // uncompressed_page_size
    h.i32(3, packed.len() as i32); // compressed_page_size
    h.begin_struct(5); // data_page_header
    h.i32(1, (to - from) as i32); // num_values, nulls included
    h.i32(2, 0); // encoding: PLAIN
    h.i32(3, 3); // definition_level_encoding: RLE
    h.i32(4, 3); // repetition_level_encoding: RLE (there are none)
    h.end_struct();
    h.stop();
    let header_len = h.buf.len();
    out.extend(h.buf);
    out.extend(packed);
    (header_len + body.len()) as i64
}

/// Definition levels of bit width 1 in the RLE / bit-packing hybrid, as
/// runs only: for each run of equal levels, its length shifted left by one
/// (the low bit 0 says "run"), then the level in one byte.
fn rle_levels(defined: &[bool]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < defined.len() {
        let level = defined[i];
        let n = defined[i..].iter().take_while(|&&d| d == level).count();
        varint(&mut out, (n as u64) << 1);
        out.push(level as u8);
        i += n;
    }
    out
}

/// `FileMetaData`: version, schema, rows, the row group, who wrote it.
fn file_metadata(
    names: &[(&str, ColumnType)],
    chunks: &[Chunk],
    rows: i64,
    created_by: &str,
) -> Vec<u8> {
    let mut m = Compact::new();
    m.i32(1, 1); // version
    m.list_header(2, STRUCT, names.len() + 1); // schema
    m.begin_element();
    m.binary(4, b"schema"); // the root
    m.i32(5, names.len() as i32); // num_children
    m.end_struct();
    for &(name, ty) in names {
        m.begin_element();
        m.i32(1, ty.physical());
        m.i32(3, 1); // repetition_type: OPTIONAL
        m.binary(4, name.as_bytes());
        if let Some((converted, int_bits)) = ty.annotation() {
            m.i32(6, converted);
            m.begin_struct(10); // logicalType, a union
            match int_bits {
                None => {
                    m.begin_struct(1); // STRING
                    m.end_struct();
                }
                Some(bits) => {
                    m.begin_struct(10); // INTEGER
                    m.byte(1, bits); // bitWidth
                    m.bool(2, false); // isSigned
                    m.end_struct();
                }
            }
            m.end_struct();
        }
        m.end_struct();
    }
    m.i64(3, rows); // num_rows
    m.list_header(4, STRUCT, usize::from(!chunks.is_empty())); // row_groups
    if !chunks.is_empty() {
        m.begin_element();
        m.list_header(1, STRUCT, chunks.len()); // columns
        for (&(name, ty), c) in names.iter().zip(chunks) {
            m.begin_element();
            m.i64(2, c.offset); // file_offset
            m.begin_struct(3); // meta_data
            m.i32(1, ty.physical());
            m.list_header(2, I32, 2); // encodings: PLAIN, RLE
            varint(&mut m.buf, zigzag(0));
            varint(&mut m.buf, zigzag(3));
            m.list_header(3, BINARY, 1); // path_in_schema
            varint(&mut m.buf, name.len() as u64);
            m.buf.extend(name.as_bytes());
            m.i32(4, 1); // codec: SNAPPY
            m.i64(5, rows); // num_values
            m.i64(6, c.raw); // total_uncompressed_size
            m.i64(7, c.bytes); // total_compressed_size
            m.i64(9, c.offset); // data_page_offset
            m.begin_struct(12); // statistics
            m.i64(3, c.stats.nulls); // null_count
            if let Some((lo, hi)) = &c.stats.min_max {
                m.binary(5, hi); // max_value
                m.binary(6, lo); // min_value
            }
            m.end_struct();
            m.end_struct();
            m.end_struct();
        }
        let total: i64 = chunks.iter().map(|c| c.raw).sum();
        m.i64(2, total); // total_byte_size
        m.i64(3, rows); // num_rows
        m.end_struct();
    }
    m.binary(6, created_by.as_bytes());
    // Every column ordered by its type: without this a reader may not use
    // the statistics' min_value and max_value.
    m.list_header(7, STRUCT, names.len()); // column_orders
    for _ in names {
        m.begin_element();
        m.begin_struct(1); // TYPE_ORDER, an empty struct
        m.end_struct();
        m.end_struct();
    }
    m.stop();
    m.buf
}

/// Thrift compact-protocol type codes used here.
const I32: u8 = 5;
const I64: u8 = 6;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const STRUCT: u8 = 12;

/// A Thrift compact-protocol writer: each field header holds the step from
/// the previous field id of its struct, hence the stack of last ids.
struct Compact {
    buf: Vec<u8>,
    last: Vec<i16>,
}

impl Compact {
    fn new() -> Compact {
        Compact {
            buf: Vec::new(),
            last: vec![0],
        }
    }

    fn field(&mut self, id: i16, ty: u8) {
        let last = self.last.last_mut().expect("inside a struct");
        let step = id - *last;
        if (1..=15).contains(&step) {
            self.buf.push(((step as u8) << 4) | ty);
        } else {
            self.buf.push(ty);
            varint(&mut self.buf, zigzag(id as i64));
        }
        *last = id;
    }

    fn i32(&mut self, id: i16, v: i32) {
        self.field(id, I32);
        varint(&mut self.buf, zigzag(v as i64));
    }

    fn i64(&mut self, id: i16, v: i64) {
        self.field(id, I64);
        varint(&mut self.buf, zigzag(v));
    }

    fn byte(&mut self, id: i16, v: i8) {
        self.field(id, 3);
        self.buf.push(v as u8);
    }

    /// A bool field's value is its type code: 1 true, 2 false.
    fn bool(&mut self, id: i16, v: bool) {
        self.field(id, if v { 1 } else { 2 });
    }

    fn binary(&mut self, id: i16, v: &[u8]) {
        self.field(id, BINARY);
        varint(&mut self.buf, v.len() as u64);
        self.buf.extend(v);
    }

    fn list_header(&mut self, id: i16, elem: u8, n: usize) {
        self.field(id, LIST);
        if n < 15 {
            self.buf.push(((n as u8) << 4) | elem);
        } else {
            self.buf.push(0xf0 | elem);
            varint(&mut self.buf, n as u64);
        }
    }

    fn begin_struct(&mut self, id: i16) {
        self.field(id, STRUCT);
        self.last.push(0);
    }

    /// A struct as a list element: no field header.
    fn begin_element(&mut self) {
        self.last.push(0);
    }

    fn end_struct(&mut self) {
        self.buf.push(0);
        self.last.pop();
    }

    /// The end of the outermost struct.
    fn stop(&mut self) {
        self.buf.push(0);
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLS: &[(&str, ColumnType)] = &[
        ("a", ColumnType::UInt8),
        ("s", ColumnType::String),
        ("x", ColumnType::Float64),
        ("f", ColumnType::Bool),
    ];

    #[test]
    fn compact_fields_step_from_the_last_id_of_their_own_struct() {
        let mut c = Compact::new();
        c.i32(1, -1); // step 1, zigzag(-1) = 1
        c.begin_struct(3); // step 2
        c.i64(20, 64); // step 20 > 15: long form, zigzag(20) = 40, zigzag(64) = 128
        c.end_struct();
        c.bool(4, true); // step 1 from 3, in the outer struct
        c.stop();
        assert_eq!(
            c.buf,
            [0x15, 0x01, 0x2c, 0x06, 40, 0x80, 0x01, 0x00, 0x11, 0x00]
        );
    }

    #[test]
    fn definition_levels_are_runs_of_equal_levels() {
        let d = [true, true, true, false, true];
        // 3 × 1, 1 × 0, 1 × 1: (len << 1) then the level.
        assert_eq!(rle_levels(&d), [6, 1, 2, 0, 2, 1]);
        let long = vec![true; 200]; // 400 needs two varint bytes
        assert_eq!(rle_levels(&long), [0x90, 0x03, 1]);
    }

    #[test]
    fn cells_read_as_a_typed_csv_reader_reads_them() {
        let csv = "f,x,s,a,extra\ntrue,1.5,h0,7,z\nfalse,NaN,,255,z\n\n1,,NaN,0,z\n";
        let file = csv_to_parquet(csv, COLS, "t.csv", "test").expect("valid");
        assert_eq!(&file[..4], b"PAR1");
        assert_eq!(&file[file.len() - 4..], b"PAR1");
        let meta_len = u32::from_le_bytes(file[file.len() - 8..file.len() - 4].try_into().unwrap());
        assert!((meta_len as usize) < file.len() - 12);
        // Nulls in number columns only: "NaN" and "" are null in x, text in s.
        let mut x = Column {
            ty: ColumnType::Float64,
            defined: vec![],
            plain: vec![],
            ends: vec![],
            flags: vec![],
        };
        for cell in ["1.5", "NaN", ""] {
            x.push(cell).unwrap();
        }
        assert_eq!(x.defined, [true, false, false]);
        assert_eq!(x.plain, 1.5f64.to_le_bytes());
        let mut s = Column {
            ty: ColumnType::String,
            ..x
        };
        s.defined.clear();
        s.plain.clear();
        for cell in ["NaN", ""] {
            s.push(cell).unwrap();
        }
        assert_eq!(s.defined, [true, true]);
        assert_eq!(s.plain, [3, 0, 0, 0, b'N', b'a', b'N', 0, 0, 0, 0]);
    }

    #[test]
    fn a_cell_out_of_its_type_is_an_error_naming_line_column_and_value() {
        let e = csv_to_parquet("a,s,x,f\n256,h,1,true\n", COLS, "t.csv", "test").unwrap_err();
        assert_eq!(
            e.0,
            "t.csv, line 2, column `a`: `256` is not a whole number from 0 to 255"
        );
        let e = csv_to_parquet("a,s,x,f\n1,h,1,yes\n", COLS, "t.csv", "test").unwrap_err();
        assert!(
            e.0.contains("column `f`: `yes` is not true or false"),
            "{e}"
        );
        let e = csv_to_parquet("a,s,f\n", COLS, "t.csv", "test").unwrap_err();
        assert_eq!(e.0, "t.csv: no column `x`; the header has a, s, f");
        let e = csv_to_parquet("a,s,x,f\n1,h,1\n", COLS, "t.csv", "test").unwrap_err();
        assert_eq!(e.0, "t.csv, line 2: 3 cells where the header has 4");
    }
}
