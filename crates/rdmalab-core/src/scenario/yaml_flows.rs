//! A fast reader for the one part of a scenario YAML that grows large: the
//! block list under `workload.flows`. PyYAML builds each of 100,000 flow
//! mappings through Python objects (about 10 s); this reads the common
//! shapes of that list in Rust, and the front end parses the rest of the
//! file with PyYAML as before.
//!
//! It is a fast path, never a second YAML dialect: it accepts only entries
//! whose meaning is certain (plain keys, scalars whose PyYAML type is
//! certain: text, decimal integers, plain decimals) and gives up (`None`)
//! on anything else — anchors, tags, escapes, a key given twice, a value
//! PyYAML would read as a bool, null, octal or timestamp — so that PyYAML
//! reads the whole file and reports any problem exactly as before.

/// A scalar of one flow entry, typed as PyYAML's safe loader types it.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowScalar<'a> {
    Str(&'a str),
    Int(i64),
    Float(f64),
}

/// The block list under `workload.flows`, read.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowBlock<'a> {
    /// Byte offset just after the colon of the `flows:` key: the front end
    /// puts a placeholder value there.
    pub value_start: usize,
    /// Byte offset of the first line after the list (the text's length if
    /// the list ends the file). Lines up to it hold only the list.
    pub end: usize,
    /// The entries in order, each its keys and values in order.
    pub entries: Vec<Vec<(&'a str, FlowScalar<'a>)>>,
}

/// Words PyYAML's resolver reads as a bool or null rather than as text.
const NOT_TEXT: [&str; 21] = [
    "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on",
    "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL",
];

/// Find and read the block list of `workload.flows` in a block-style
/// scenario. `None` when there is none or it holds anything outside the
/// fast path's certain subset (the caller then lets PyYAML read it all).
pub fn read_flow_block(text: &str) -> Option<FlowBlock<'_>> {
    // Line breaks other than `\n` would make PyYAML's lines differ from ours;
    // a tab may not indent YAML, and PyYAML's message for one stays its own.
    if text.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}', '\t']) {
        return None;
    }
    let lines = Lines::new(text);
    let n = lines.len();
    let mut i = (0..n).find(|&i| lines.indent(i) == Some(0) && key_line(lines.body(i)) == Some("workload"))?;
    // The first key inside `workload` sets the indentation of its keys.
    i += 1;
    let mut key_indent = None;
    let flows_line = loop {
        if i >= n {
            return None;
        }
        match lines.indent(i) {
            None => {}
            Some(0) => return None,
            Some(d) => {
                let k = *key_indent.get_or_insert(d);
                if d == k && key_line(lines.body(i)) == Some("flows") {
                    break i;
                }
            }
        }
        i += 1;
    };
    let value_start = lines.start[flows_line] + lines.text(flows_line).find(':')? + 1;
    let (entries, end_line) = read_entries(&lines, flows_line + 1, key_indent?)?;
    let end = if end_line < n { lines.start[end_line] } else { text.len() };
    Some(FlowBlock { value_start, end, entries })
}

/// The text's lines (split at `\n` only) and where each starts.
struct Lines<'a> {
    text: &'a str,
    start: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let mut start = vec![0];
        start.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        if start.last() == Some(&text.len()) {
            start.pop(); // a final newline opens no line
        }
        Lines { text, start }
    }

    fn len(&self) -> usize {
        self.start.len()
    }

    fn text(&self, i: usize) -> &'a str {
        let end = self.start.get(i + 1).map_or(self.text.len(), |e| e - 1);
        self.text[self.start[i]..end].trim_end_matches('\n')
    }

    /// Spaces before the line's content; `None` for a blank or comment-only line.
    fn indent(&self, i: usize) -> Option<usize> {
        let t = self.text(i);
        let d = t.len() - t.trim_start_matches(' ').len();
        match t[d..].chars().next() {
            None | Some('#') => None,
            Some(_) => Some(d),
        }
    }

    fn body(&self, i: usize) -> &'a str {
        self.text(i).trim_start_matches(' ')
    }
}

/// `KEY:` alone on a line (a trailing comment allowed): the key.
fn key_line(body: &str) -> Option<&str> {
    let (key, rest) = body.split_once(':')?;
    if !is_key(key) {
        return None;
    }
    let mut c = Cursor { s: rest, at: 0 };
    c.line_end().then_some(key)
}

/// The entries of the list starting at line `first`, and the line after it.
/// The list's dashes may sit at the parent's key indentation or deeper.
fn read_entries<'a>(
    lines: &Lines<'a>,
    first: usize,
    key_indent: usize,
) -> Option<(Vec<Vec<(&'a str, FlowScalar<'a>)>>, usize)> {
    let n = lines.len();
    let mut i = first;
    while i < n && lines.indent(i).is_none() {
        i += 1;
    }
    let dash = lines.indent(i)?;
    if dash < key_indent || !lines.body(i).starts_with("- ") {
        return None; // not a block list (`flows:` empty, or a nested mapping)
    }
    let mut entries = Vec::new();
    let mut end = i;
    while i < n {
        let Some(d) = lines.indent(i) else {
            i += 1;
            continue;
        };
        let body = lines.body(i);
        if d <= key_indent && (d < dash || !body.starts_with("- ")) {
            break; // the next key of `workload`, or of the file
        }
        if d != dash || !body.starts_with("- ") {
            return None; // a line that belongs to no entry we understand
        }
        let after = body[1..].trim_start_matches(' ');
        let col = d + (body.len() - after.len());
        let mut entry = Vec::new();
        if after.starts_with('{') {
            let mut c = Cursor { s: after, at: 1 };
            flow_mapping(&mut c, &mut entry)?;
            i += 1;
        } else {
            // A block mapping: `- key: value`, then `key: value` at its column.
            block_pair(after, &mut entry)?;
            i += 1;
            while i < n {
                match lines.indent(i) {
                    None => {}
                    Some(k) if k == col => block_pair(lines.body(i), &mut entry)?,
                    Some(k) if k <= dash => break,
                    Some(_) => return None,
                }
                i += 1;
            }
        }
        if has_duplicate(&entry) {
            return None; // PyYAML names both lines
        }
        entries.push(entry);
        end = i;
    }
    Some((entries, end))
}

fn has_duplicate(entry: &[(&str, FlowScalar)]) -> bool {
    entry.iter().enumerate().any(|(i, (k, _))| entry[..i].iter().any(|(j, _)| j == k))
}

/// `{key: value, ...}` to the end of the line, the `{` already read.
fn flow_mapping<'a>(c: &mut Cursor<'a>, entry: &mut Vec<(&'a str, FlowScalar<'a>)>) -> Option<()> {
    c.spaces();
    if c.eat('}') {
        return c.line_end().then_some(());
    }
    loop {
        let key = c.key()?;
        if !c.eat(':') || c.spaces() == 0 {
            return None;
        }
        entry.push((key, c.scalar(true)?));
        c.spaces();
        if c.eat('}') {
            return c.line_end().then_some(());
        }
        if !c.eat(',') {
            return None;
        }
        c.spaces();
    }
}

/// `key: value` filling a line (a trailing comment allowed).
fn block_pair<'a>(body: &'a str, entry: &mut Vec<(&'a str, FlowScalar<'a>)>) -> Option<()> {
    let mut c = Cursor { s: body, at: 0 };
    let key = c.key()?;
    if !c.eat(':') || c.spaces() == 0 {
        return None; // `key:` alone opens a nested value
    }
    entry.push((key, c.scalar(false)?));
    c.line_end().then_some(())
}

struct Cursor<'a> {
    s: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.at).copied()
    }

    fn eat(&mut self, ch: char) -> bool {
        let hit = self.peek() == Some(ch as u8);
        self.at += hit as usize;
        hit
    }

    fn spaces(&mut self) -> usize {
        let from = self.at;
        while self.peek() == Some(b' ') {
            self.at += 1;
        }
        self.at - from
    }

    fn take_while(&mut self, ok: impl Fn(u8) -> bool) -> &'a str {
        let from = self.at;
        while self.peek().is_some_and(&ok) {
            self.at += 1;
        }
        &self.s[from..self.at]
    }

    /// Only spaces and, after at least one space, a comment up to the line's end.
    fn line_end(&mut self) -> bool {
        let spaced = self.spaces() > 0;
        match self.peek() {
            None => true,
            Some(b'#') if spaced => self.s[self.at..].chars().all(printable),
            Some(_) => false,
        }
    }

    fn key(&mut self) -> Option<&'a str> {
        let k = self.take_while(|b| b.is_ascii_alphanumeric() || b == b'_');
        is_key(k).then_some(k)
    }

    /// A plain or simply quoted scalar whose PyYAML type is certain.
    fn scalar(&mut self, in_flow: bool) -> Option<FlowScalar<'a>> {
        match self.peek()? {
            q @ (b'\'' | b'"') => {
                self.at += 1;
                let body = self.take_while(|b| b != q && b != b'\\' && (b' '..=b'~').contains(&b));
                self.eat(q as char).then_some(FlowScalar::Str(body))
            }
            _ => {
                let v = self.take_while(|b| b.is_ascii_alphanumeric() || b"_./+-".contains(&b));
                // In a flow mapping, `,` and `}` end a plain scalar; elsewhere only the line's end does.
                let next = self.peek();
                let ends = next.is_none() || next == Some(b' ') || (in_flow && matches!(next, Some(b',' | b'}')));
                if ends {
                    typed(v)
                } else {
                    None
                }
            }
        }
    }
}

/// A key as PyYAML reads it: plain text, not a bool or null word.
fn is_key(k: &str) -> bool {
    let b = k.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && !NOT_TEXT.contains(&k)
}

/// The type PyYAML's safe loader gives a plain scalar, when it is certain:
/// text starting with a letter, `_` or `/` (not a bool or null word); a
/// number with a unit (`4KB`, `1.5us`, `100Gb/s`); a decimal integer; a plain
/// decimal. Anything else (`0x10`, `017`, `1e3`, `.5`, `2026-01-01`) is `None`.
fn typed(v: &str) -> Option<FlowScalar<'_>> {
    let b = v.as_bytes();
    let first = *b.first()?;
    if first.is_ascii_alphabetic() || first == b'_' || first == b'/' {
        return (!NOT_TEXT.contains(&v)).then_some(FlowScalar::Str(v));
    }
    let unsigned = v.strip_prefix(['+', '-']).unwrap_or(v);
    let digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 18 {
        return None;
    }
    let rest = &unsigned[digits..];
    let (fraction, unit) = match rest.strip_prefix('.') {
        Some(r) => {
            let f = r.bytes().take_while(u8::is_ascii_digit).count();
            if f == 0 || f > 18 {
                return None;
            }
            (true, &r[f..])
        }
        None => (false, rest),
    };
    if unit.is_empty() {
        if fraction {
            return v.parse().ok().map(FlowScalar::Float);
        }
        // `0`, `12`, not `012` (octal to PyYAML).
        if digits > 1 && unsigned.starts_with('0') {
            return None;
        }
        return v.parse().ok().map(FlowScalar::Int);
    }
    // A number with a unit of letters and `/`: never an int, float or
    // timestamp to PyYAML; `0x..` and `0b..` are hex and binary.
    let unit_ok = unit.as_bytes()[0].is_ascii_alphabetic() && unit.bytes().all(|c| c.is_ascii_alphabetic() || c == b'/');
    let signed = unsigned.len() != v.len();
    let radix = &unsigned[..digits] == "0" && !fraction && matches!(unit.as_bytes()[0], b'x' | b'b');
    (unit_ok && !signed && !radix).then_some(FlowScalar::Str(v))
}

/// Characters PyYAML accepts in a comment (printable, not a line break).
fn printable(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use super::FlowScalar::{Float, Int, Str};
    use super::*;

    fn entries(text: &str) -> Option<Vec<Vec<(&str, FlowScalar<'_>)>>> {
        read_flow_block(text).map(|b| b.entries)
    }

    const HEAD: &str = "duration: 1ms\nworkload:\n  poisson: {load: 0.3}\n  flows:\n";

    #[test]
    fn reads_flow_and_block_entries_and_where_they_end() {
        let text = format!(
            "{HEAD}  - {{src: h0, dst: h1, size: 4KB, start: 2us}}  # first\n\n  # a comment\n  - src: h2\n    dst: 'h3'\n    dport: 7\n  incast: []\nseed: 1\n"
        );
        let b = read_flow_block(&text).unwrap();
        assert_eq!(
            b.entries,
            vec![
                vec![("src", Str("h0")), ("dst", Str("h1")), ("size", Str("4KB")), ("start", Str("2us"))],
                vec![("src", Str("h2")), ("dst", Str("h3")), ("dport", Int(7))],
            ]
        );
        assert_eq!(&text[..b.value_start], format!("{HEAD}").trim_end_matches('\n'));
        assert!(text[b.end..].starts_with("  incast: []"));
    }

    #[test]
    fn dashes_may_be_indented_and_the_list_may_end_the_file() {
        let text = "workload:\n    flows:\n        -   {size: 1.5, dport: -3}\n";
        let b = read_flow_block(text).unwrap();
        assert_eq!(b.entries, vec![vec![("size", Float(1.5)), ("dport", Int(-3))]]);
        assert_eq!(b.end, text.len());
    }

    #[test]
    fn gives_up_on_anything_pyyaml_might_read_otherwise() {
        for entry in [
            "{src: h0, src: h1}",     // a key given twice: PyYAML names both lines
            "{src: yes}",             // a bool
            "{src: ~}",               // null
            "{size: 0x10}",           // hex
            "{size: 0b10}",           // binary
            "{size: 017}",            // octal
            "{size: 1e3us}",          // text to PyYAML, but `1.0e+3` is a float: no exponents
            "{size: 1.0e+3}",
            "{start: 2026-01-01}",    // a timestamp
            "{start: 1:30}",          // sexagesimal
            "{size: .5}",
            "{size: -4KB}",
            "{src: &a h0}",           // an anchor
            "{src: *a}",              // an alias
            "{src: !!str h0}",        // a tag
            "{src: \"h\\x30\"}",      // an escape
            "{src: h0,}",             // a trailing comma
            "{src: h0",               // a mapping over several lines
            "{src:h0}",
            "{<<: x}",                // a merge key
            "{on: 1}",                // a bool key
            "{src: h0}#c",            // `#` without a space is not a comment
            "{src: h0} # \u{85}",     // a line break PyYAML knows
            "src:",                   // a nested value
            "src: h0 h1",
            "[h0, h1]",
            "",
        ] {
            let text = format!("{HEAD}  - {entry}\n");
            assert_eq!(entries(&text), None, "{entry}");
        }
        for shape in [
            "workload:\n  flows: []\n",
            "workload:\n  flows:\n  -\n    src: h0\n",
            "workload:\n  flows:\n  - src: h0\n     dst: h1\n",
            "workload:\n  flows:\n    - {src: h0}\n   - {src: h1}\n",
            "workload:\n  flows:\n  - {src: h0}\r\n",
            "workload:\n  flows:\n  - {src: h0} # \t\n",
            "workload:\n  flows:\n  poisson: {load: 0.3}\n",
            "workload:\n  flows: &f\n  - {src: h0}\n",
            "base: x\n  workload:\n    flows:\n    - {src: h0}\n",
        ] {
            assert_eq!(entries(shape), None, "{shape:?}");
        }
    }

    #[test]
    fn typed_scalars_match_pyyaml() {
        assert_eq!(typed("h0"), Some(Str("h0")));
        assert_eq!(typed("100Gb/s"), Some(Str("100Gb/s")));
        assert_eq!(typed("0us"), Some(Str("0us")));
        assert_eq!(typed("1.5us"), Some(Str("1.5us")));
        assert_eq!(typed("/tmp/x"), Some(Str("/tmp/x")));
        assert_eq!(typed("0"), Some(Int(0)));
        assert_eq!(typed("+12"), Some(Int(12)));
        assert_eq!(typed("1.25"), Some(Float(1.25)));
        // `0x..` and `0b..` are left to PyYAML whole, even `0bytes` (text to it).
        for v in ["Yes", "NULL", "0xFF", "0b", "0bytes", "1e3", "1.", "1_000", "0o7", "0x1", "007", ".inf", "1234567890123456789"] {
            assert_eq!(typed(v), None, "{v}");
        }
    }
}
