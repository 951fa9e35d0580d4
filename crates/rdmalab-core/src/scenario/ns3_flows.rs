//! The ns-3 HPCC simulator's flow file (`flow.txt`): a count `F`, then F
//! lines `src dst pg dport size start_s`. Reading 100,000 of them in Python
//! took a second; this reads and checks them in Rust with the front end's
//! messages, and the front end turns them into scenario flows.
//!
//! It is a fast path, never a second reading of the format: the reference is
//! the front end's Python (`rdmalab.hpcc.config.parse_flows`), and this reads
//! ASCII text exactly as Python's `str.splitlines`, `str.split`, `int` and
//! `float` do. It gives up (`None`) on what it could not read the same way
//! for certain — text that is not ASCII (Python's `int` reads other scripts'
//! digits, its `split` other spaces), integers beyond 64 bits or longer than
//! 640 characters — and the front end then reads that file with the
//! reference.

/// One flow of the file, checked: both ends hosts, distinct, values in range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ns3Flow {
    pub src: u32,
    pub dst: u32,
    /// ns-3's priority group: the traffic class, 0 to 7.
    pub pg: u8,
    pub dport: u16,
    pub size: u64,
    /// ns-3's `Seconds(start)` in ns (see `seconds_to_ns`).
    pub start_ns: u64,
    /// Where it is in the file (from 1), for messages.
    pub line: usize,
}

/// A flow file read: the flows that passed, and a message per problem in
/// file order (the caller adds them to the config's problems).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowFile {
    pub flows: Vec<Ns3Flow>,
    pub problems: Vec<String>,
    /// Non-blank lines after the flows the first line counts (ns-3 never
    /// reads them): how many, and the first one's line number.
    pub unread: (usize, Option<usize>),
    /// The count the first line gives.
    pub count: u64,
}

impl FlowFile {
    /// The first flow whose pg differs from the first flow's: rdmalab puts
    /// all data in one class, so there must be none.
    pub fn first_other_pg(&self) -> Option<&Ns3Flow> {
        let first = self.flows.first()?;
        self.flows.iter().find(|f| f.pg != first.pg)
    }

    /// Drop the flows that start at or after `stop_ns` (they never start, in
    /// ns-3 or rdmalab): how many there were and the first one's line.
    pub fn drop_late(&mut self, stop_ns: u64) -> (usize, Option<usize>) {
        let first = self
            .flows
            .iter()
            .find(|f| f.start_ns >= stop_ns)
            .map(|f| f.line);
        let before = self.flows.len();
        self.flows.retain(|f| f.start_ns < stop_ns);
        (before - self.flows.len(), first)
    }

    /// Whether start times never decrease in file order (ns-3 requires it:
    /// it schedules flows in file order).
    pub fn sorted_by_start(&self) -> bool {
        self.flows
            .windows(2)
            .all(|w| w[0].start_ns <= w[1].start_ns)
    }
}

/// Read a flow file as the reference does: the first non-blank line is the
/// count, the next `count` non-blank lines are flows, later lines are not
/// read (ns-3 reads exactly that many). `where_` starts every message (it
/// names FLOW_FILE and the file); `is_switch` has an entry per node of the
/// topology. `None`: the caller must read it with the reference.
pub fn read_flow_file(text: &str, where_: &str, is_switch: &[bool]) -> Option<FlowFile> {
    if !text.is_ascii() {
        return None;
    }
    let mut out = FlowFile::default();
    let mut lines = PyLines::new(text)
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| split(l).next().is_some());
    let Some((first_line, first)) = lines.next() else {
        out.problems.push(format!(
            "{where_}: empty; the first line must be the number of flows"
        ));
        return Some(out);
    };
    let count = match (py_int(split(first).next()?), split(first).count()) {
        (IntToken::Unsure, _) => return None,
        (IntToken::Int(n), 1) if n >= 0 => n as u64,
        _ => {
            let shown = split(first).collect::<Vec<_>>().join(" ");
            out.problems.push(format!(
                "{where_} line {first_line}: `{shown}` — the first line must be the number of flows"
            ));
            return Some(out);
        }
    };
    out.count = count;
    let body: Vec<(usize, &str)> = lines
        .by_ref()
        .take(usize::try_from(count).unwrap_or(usize::MAX))
        .collect();
    if let Some((line, _)) = lines.next() {
        out.unread = (1 + lines.count(), Some(line));
    }
    if (body.len() as u64) < count {
        out.problems.push(format!(
            "{where_}: the first line says {count} flows but only {} follow (ns-3 reads exactly that many)",
            body.len()
        ));
    }
    out.flows.reserve(body.len());
    'lines: for (n, line) in body {
        let bad = |problems: &mut Vec<String>, msg: &str| {
            let shown = split(line).collect::<Vec<_>>().join(" ");
            problems.push(format!("{where_} line {n} `{shown}`: {msg}"));
        };
        let mut toks = [""; 6];
        let mut k = 0;
        for t in split(line) {
            if k == 6 {
                k += 1;
                break;
            }
            toks[k] = t;
            k += 1;
        }
        if k != 6 {
            bad(
                &mut out.problems,
                "must be `src dst pg dport size start_time_s`",
            );
            continue;
        }
        let mut v = [0i64; 5];
        for (x, t) in v.iter_mut().zip(toks) {
            match py_int(t) {
                IntToken::Int(i) => *x = i,
                IntToken::NotInt => {
                    bad(&mut out.problems, NOT_NUMBERS);
                    continue 'lines;
                }
                IntToken::Unsure => return None,
            }
        }
        let Some(start_ns) = seconds_to_ns(toks[5]) else {
            bad(&mut out.problems, NOT_NUMBERS);
            continue;
        };
        let [src, dst, pg, dport, size] = v;
        let mut hosts_ok = true;
        for (role, x) in [("src", src), ("dst", dst)] {
            let host = usize::try_from(x).is_ok_and(|i| i < is_switch.len() && !is_switch[i]);
            if !host {
                bad(
                    &mut out.problems,
                    &format!("{role} {x} is not a host of the topology (ns-3 asserts it)"),
                );
                hosts_ok = false;
            }
        }
        if !hosts_ok {
            continue;
        }
        if src == dst {
            bad(&mut out.problems, "src and dst are the same host");
            continue;
        }
        if !(0..=65535).contains(&dport) || size < 0 || !(0..=7).contains(&pg) {
            bad(
                &mut out.problems,
                "dport must be 0-65535, size ≥ 0 and pg 0-7",
            );
            continue;
        }
        out.flows.push(Ns3Flow {
            src: src as u32,
            dst: dst as u32,
            pg: pg as u8,
            dport: dport as u16,
            size: size as u64,
            start_ns,
            line: n,
        });
    }
    Some(out)
}

const NOT_NUMBERS: &str =
    "src, dst, pg, dport and size must be integers and the start a number of seconds";

/// ns-3.17's `Seconds(double)` at ns resolution, as the front end's
/// `seconds_to_ns` computes it from Python's `float(text)`: the 64.64 fixed
/// point keeps trunc(v · 2^64), and the time is the high word of that times
/// 10^9. `None` where Python raises ValueError: not a number, or not from 0
/// to 2^33 s. ASCII text only: the caller gives up on any other.
pub fn seconds_to_ns(text: &str) -> Option<u64> {
    let v = py_float(text.trim_matches(FLOAT_SPACE))?;
    // As Python's `not v >= 0 or v >= 2.0**33`: -0.0 passes, NaN would not.
    if !(0.0..8_589_934_592.0).contains(&v) {
        return None;
    }
    // v = m · 2^e exactly; times 2^64 is exact, and int() truncates.
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, exp - 1075)
    };
    let shift = e + 64; // at most 44: v < 2^33
    let fixed: u128 = if shift >= 0 {
        (m as u128) << shift
    } else if shift > -64 {
        (m >> -shift) as u128
    } else {
        0
    };
    // fixed < 2^97, so the product fits in 127 bits and the result in 63.
    Some(((fixed * 1_000_000_000) >> 64) as u64)
}

/// A duration in ps as the front end's `ps_text` writes it for a native
/// scenario: exact, in the largest unit that divides it.
pub fn ps_text(ps: u128) -> String {
    for (unit, mult) in [
        ("s", 1_000_000_000_000u128),
        ("ms", 1_000_000_000),
        ("us", 1_000_000),
        ("ns", 1_000),
    ] {
        if ps.is_multiple_of(mult) {
            return format!("{}{unit}", ps / mult);
        }
    }
    format!("{ps}ps")
}

/// What Python's `float()` and `int()` strip from a string's ends (C's
/// isspace; `str.split` also splits at `\x1c`..`\x1f`, these do not).
const FLOAT_SPACE: [char; 6] = [' ', '\t', '\n', '\r', '\x0b', '\x0c'];

/// Python's `str.isspace()` on ASCII: what `str.split()` splits at.
fn py_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1f)
}

/// Python's `str.split()` (no argument) on ASCII text.
fn split(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| c.is_ascii() && py_space(c as u8))
        .filter(|t| !t.is_empty())
}

/// Python's `str.splitlines()` on ASCII text: lines end at `\n`, `\r`,
/// `\r\n`, `\x0b`, `\x0c` and `\x1c`..`\x1e`; a final line break starts no
/// further line.
struct PyLines<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> PyLines<'a> {
    fn new(text: &'a str) -> Self {
        PyLines { text, pos: 0 }
    }
}

impl<'a> Iterator for PyLines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let b = self.text.as_bytes();
        if self.pos >= b.len() {
            return None;
        }
        let start = self.pos;
        let mut i = start;
        while i < b.len() && !matches!(b[i], b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1e) {
            i += 1;
        }
        self.pos = if b.get(i) == Some(&b'\r') && b.get(i + 1) == Some(&b'\n') {
            i + 2
        } else {
            i + 1
        };
        Some(&self.text[start..i])
    }
}

/// Python's `int(token)` on an ASCII token without spaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IntToken {
    Int(i64),
    /// Python raises ValueError.
    NotInt,
    /// An integer beyond i64, or longer than 640 characters: past 640
    /// digits Python's `int` applies its limit on digits (4300 unless set
    /// otherwise). The caller gives up.
    Unsure,
}

/// `int()` in base 10: an optional sign, digits with single underscores
/// between them, leading zeros allowed.
fn py_int(t: &str) -> IntToken {
    let b = t.as_bytes();
    let (negative, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    if !underscored_digits(digits) {
        return IntToken::NotInt;
    }
    if digits.len() > 640 {
        return IntToken::Unsure;
    }
    let mut v: i64 = 0;
    for &c in digits.iter().filter(|&&c| c != b'_') {
        let d = i64::from(c - b'0');
        let next = v.checked_mul(10).and_then(|x| {
            if negative {
                x.checked_sub(d)
            } else {
                x.checked_add(d)
            }
        });
        match next {
            Some(x) => v = x,
            None => return IntToken::Unsure,
        }
    }
    IntToken::Int(v)
}

/// One or more digits, with single underscores only between two digits
/// (Python's grammar for digits in numbers, PEP 515).
fn underscored_digits(s: &[u8]) -> bool {
    !s.is_empty()
        && s[0].is_ascii_digit()
        && s[s.len() - 1].is_ascii_digit()
        && s.iter().all(|c| c.is_ascii_digit() || *c == b'_')
        && !s.windows(2).any(|w| w == b"__")
}

/// Python's `float()` of a stripped ASCII string, for finite spellings:
/// `[sign] (digits [. [digits]] | . digits) [e [sign] digits]`, digits as in
/// `underscored_digits`. `None` also for `inf` and `nan` in any spelling,
/// which Python reads but which no start time may be.
fn py_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let body = match b.first() {
        Some(b'+' | b'-') => &b[1..],
        _ => b,
    };
    let (mantissa, exponent) = match body.iter().position(|&c| c == b'e' || c == b'E') {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int_part, frac_part) = match mantissa.iter().position(|&c| c == b'.') {
        Some(i) => (&mantissa[..i], Some(&mantissa[i + 1..])),
        None => (mantissa, None),
    };
    let part_ok = |p: &[u8]| p.is_empty() || underscored_digits(p);
    // A mantissa without digits (`.`, `e5`) passes here; Rust's parse refuses it.
    let mantissa_ok = part_ok(int_part) && frac_part.is_none_or(part_ok);
    let exponent_ok = exponent.is_none_or(|e| {
        let digits = match e.first() {
            Some(b'+' | b'-') => &e[1..],
            _ => e,
        };
        underscored_digits(digits)
    });
    if !mantissa_ok || !exponent_ok {
        return None;
    }
    // Rust's parse rounds correctly, as Python's does: the same double.
    s.replace('_', "").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: &str = "FLOW_FILE `f`";

    /// Nodes 0..4, node 4 a switch.
    fn read(text: &str) -> Option<FlowFile> {
        read_flow_file(text, W, &[false, false, false, false, true])
    }

    fn problems(text: &str) -> Vec<String> {
        read(text).unwrap().problems
    }

    #[test]
    fn reads_flows_with_their_lines() {
        let f = read("\n2\r\n0 1 3 100 1000 2.0\n\n 2\t3 3 7 5 2.000002612 \n9\n").unwrap();
        assert_eq!(f.problems, Vec::<String>::new());
        assert_eq!(
            f.flows,
            vec![
                Ns3Flow {
                    src: 0,
                    dst: 1,
                    pg: 3,
                    dport: 100,
                    size: 1000,
                    start_ns: 2_000_000_000,
                    line: 3
                },
                Ns3Flow {
                    src: 2,
                    dst: 3,
                    pg: 3,
                    dport: 7,
                    size: 5,
                    start_ns: 2_000_002_611,
                    line: 5
                },
            ]
        );
    }

    #[test]
    fn lines_past_the_count_are_counted_not_read() {
        let f = read("2\n0 1 3 100 1 2\n\n1 0 3 100 1 2\n \n9 9 x\n\n0 1 3 100 1 2\n").unwrap();
        assert_eq!((f.flows.len(), f.count), (2, 2));
        assert_eq!(f.unread, (2, Some(6)));
        assert_eq!(read("1\n0 1 3 100 1 2\n\n").unwrap().unread, (0, None));
    }

    #[test]
    fn lines_end_where_pythons_splitlines_ends_them() {
        // \r, \x0b, \x0c and \x1c..\x1e end lines; \x1f only separates tokens.
        let f = read("3\r0 1 3 100 1 2\x0b1\x1f0 3 100 1 2\x0c\x1c2 3 3 100 1 2\x1d\x1e").unwrap();
        assert_eq!(
            f.flows.iter().map(|f| f.line).collect::<Vec<_>>(),
            vec![2, 3, 5]
        );
        assert_eq!(f.flows[1].src, 1);
    }

    #[test]
    fn the_count_line_is_checked() {
        assert_eq!(
            problems(" \n\t\n"),
            vec![format!(
                "{W}: empty; the first line must be the number of flows"
            )]
        );
        for (text, shown) in [("x\n", "x"), ("1 2\n", "1 2"), ("\n-1\n", "-1")] {
            let line = if text.starts_with('\n') { 2 } else { 1 };
            assert_eq!(
                problems(text),
                vec![format!(
                    "{W} line {line}: `{shown}` — the first line must be the number of flows"
                )]
            );
        }
        assert_eq!(
            problems("3\n0 1 3 100 1 2\n"),
            vec![format!(
                "{W}: the first line says 3 flows but only 1 follow (ns-3 reads exactly that many)"
            )]
        );
        assert_eq!(read("0_1\n0 1 3 100 1 2\n0 1 x\n").unwrap().flows.len(), 1);
        // A count of 0 reads no line: the bad one after it is not read, only counted.
        assert_eq!(
            read("0\n0 1 x\n"),
            Some(FlowFile {
                unread: (1, Some(2)),
                ..FlowFile::default()
            })
        );
    }

    #[test]
    fn each_bad_line_is_named_with_its_tokens() {
        let p = problems(
            "7\n0 1 3 100 1\n0 1 3 100 1 2 3\n0 1 3 1_00 1e3 2\n4 5 3 100 1 2\n1 1 3 100 1 2\n0 1 8 100 1 2\n0 1 3 100 -1 2\n",
        );
        assert_eq!(
            p,
            vec![
                format!("{W} line 2 `0 1 3 100 1`: must be `src dst pg dport size start_time_s`"),
                format!("{W} line 3 `0 1 3 100 1 2 3`: must be `src dst pg dport size start_time_s`"),
                format!("{W} line 4 `0 1 3 1_00 1e3 2`: {NOT_NUMBERS}"),
                format!("{W} line 5 `4 5 3 100 1 2`: src 4 is not a host of the topology (ns-3 asserts it)"),
                format!("{W} line 5 `4 5 3 100 1 2`: dst 5 is not a host of the topology (ns-3 asserts it)"),
                format!("{W} line 6 `1 1 3 100 1 2`: src and dst are the same host"),
                format!("{W} line 7 `0 1 8 100 1 2`: dport must be 0-65535, size ≥ 0 and pg 0-7"),
                format!("{W} line 8 `0 1 3 100 -1 2`: dport must be 0-65535, size ≥ 0 and pg 0-7"),
            ]
        );
        assert_eq!(
            problems("1\n-0 +1 003 65535 0 nan\n"),
            vec![format!("{W} line 2 `-0 +1 003 65535 0 nan`: {NOT_NUMBERS}")]
        );
        assert_eq!(problems("1\n-1 1 3 100 1 2\n")[0], format!("{W} line 2 `-1 1 3 100 1 2`: src -1 is not a host of the topology (ns-3 asserts it)"));
    }

    #[test]
    fn gives_up_where_python_reads_differently() {
        assert_eq!(read("1\n\u{661} 1 3 100 1 2\n"), None);
        assert_eq!(read("1\n0 1 3 100 99999999999999999999 2\n"), None);
        assert_eq!(read("99999999999999999999\n"), None);
        // An integer that fits is read, whatever its spelling.
        assert_eq!(
            read("1\n0 1 3 100 9223372036854775807 2\n").unwrap().flows[0].size,
            i64::MAX as u64
        );
        assert_eq!(py_int("-9223372036854775808"), IntToken::Int(i64::MIN));
        assert_eq!(py_int("9223372036854775808"), IntToken::Unsure);
        // Python refuses 1 written with 5000 digits (its limit on digits) unless told otherwise.
        assert_eq!(py_int(&format!("{}1", "0".repeat(640))), IntToken::Unsure);
        assert_eq!(py_int(&format!("{}1", "0_".repeat(319))), IntToken::Int(1));
    }

    #[test]
    fn ints_read_as_pythons_int() {
        for (t, v) in [
            ("0", 0),
            ("-0", 0),
            ("+7", 7),
            ("007", 7),
            ("1_000", 1000),
            ("0_0", 0),
        ] {
            assert_eq!(py_int(t), IntToken::Int(v), "{t}");
        }
        for t in [
            "", "+", "-", "_1", "1_", "1__0", "+_1", "1e3", "1.0", "0x10", " 1", "１",
        ] {
            assert_eq!(py_int(t), IntToken::NotInt, "{t}");
        }
    }

    #[test]
    fn seconds_read_as_ns3_reads_them() {
        for (t, ns) in [
            ("2.000002612", 2_000_002_611),
            ("2.000000612", 2_000_000_612),
            ("2.0002", 2_000_199_999),
            ("2", 2_000_000_000),
            ("2.", 2_000_000_000),
            (".5", 500_000_000),
            ("+1_0.0_1e-1_0", 1),
            ("-0", 0),
            ("-1e-400", 0),
            (" 1\x0b", 1_000_000_000),
            ("8589934591.99", 8_589_934_591_989_999_771),
        ] {
            assert_eq!(seconds_to_ns(t), Some(ns), "{t}");
        }
        for t in [
            "",
            ".",
            "e5",
            "1e",
            "1e+",
            "1_.5",
            "1._5",
            "1.0_",
            "1_e5",
            "1e_5",
            "inf",
            "-inf",
            "nan",
            "Infinity",
            "-1",
            "1e400",
            "8589934592",
            "0x1",
            "1\x1c",
            "1d",
        ] {
            assert_eq!(seconds_to_ns(t), None, "{t}");
        }
    }

    #[test]
    fn late_flows_pgs_and_order() {
        let mut f =
            read("4\n0 1 3 100 1 3\n0 1 3 100 1 2\n1 0 5 100 1 4\n1 0 5 100 1 2.5\n").unwrap();
        assert!(!f.sorted_by_start());
        // Equal starts are in order.
        assert!(read("2\n0 1 3 100 1 2\n1 0 3 100 1 2.0\n")
            .unwrap()
            .sorted_by_start());
        assert_eq!(f.first_other_pg().map(|x| (x.line, x.pg)), Some((4, 5)));
        assert_eq!(f.drop_late(3_000_000_000), (2, Some(2)));
        assert_eq!(
            f.flows.iter().map(|x| x.line).collect::<Vec<_>>(),
            vec![3, 5]
        );
        assert!(f.sorted_by_start());
        assert_eq!(f.first_other_pg().map(|x| x.line), Some(5));
        assert_eq!(f.drop_late(1), (2, Some(3)));
        assert_eq!(f.first_other_pg(), None);
    }

    #[test]
    fn durations_are_written_exactly() {
        assert_eq!(ps_text(2_000_000_000_000_000), "2000s");
        assert_eq!(ps_text(2_000_002_611_000), "2000002611ns");
        assert_eq!(ps_text(1_500_000_000), "1500us");
        assert_eq!(ps_text(1_001), "1001ps");
        assert_eq!(ps_text(0), "0s");
    }
}
