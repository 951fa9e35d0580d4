//! Reading a scenario document: typed values out of JSON, each problem
//! collected with the key's dotted path, the value as written and what is
//! allowed. The models read their own sections with it (see [`super::Key`]);
//! `scenario` reads the document as a whole.

use super::units;
use crate::time::{Duration, Rate};
use serde_json::{Map, Value};
use std::fmt;

/// One problem with a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    /// Dotted path of the key, e.g. `workload.flows[2].dst`.
    pub key: String,
    /// The offending value as written (empty for a missing key).
    pub value: String,
    /// What would be accepted.
    pub allowed: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}: {}", self.key, self.allowed)
        } else {
            write!(f, "{}: {} — {}", self.key, self.value, self.allowed)
        }
    }
}

pub(crate) fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("`{s}`"),
        other => format!("`{other}`"),
    }
}

/// Key `k` of `o` as the user wrote it, or `parsed` when it was not given
/// (its default).
pub(crate) fn written(o: &Obj, k: &str, parsed: &impl fmt::Display) -> String {
    o.get(k).map(show).unwrap_or_else(|| format!("`{parsed}`"))
}

/// Reads a scenario's values, key by key, and collects every problem
/// instead of stopping at the first.
pub(crate) struct Reader {
    pub(crate) errs: Vec<ScenarioError>,
    /// The quantities read with a unit, when asked for (not by default: a
    /// key per flow of a 100,000-flow workload is time and memory).
    pub(crate) quantities: Option<Vec<Quantity>>,
}

/// A quantity a scenario wrote with a unit, as the core read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantity {
    /// Its key, as messages name it: `topology.host_link.rate`.
    pub key: String,
    /// `rate`, `duration` or `size`.
    pub kind: &'static str,
    /// In the base unit: bit/s, picoseconds or bytes.
    pub value: u64,
}

/// What `Reader::unit_value` reads: a kind of quantity and its base unit.
pub(crate) trait UnitKind {
    const KIND: &'static str;
    fn base(&self) -> u64;
}

impl UnitKind for Rate {
    const KIND: &'static str = "rate";
    fn base(&self) -> u64 {
        self.bps()
    }
}

impl UnitKind for Duration {
    const KIND: &'static str = "duration";
    fn base(&self) -> u64 {
        self.ps()
    }
}

impl UnitKind for u64 {
    const KIND: &'static str = "size";
    fn base(&self) -> u64 {
        *self
    }
}

/// A JSON object being read, with its path and the keys it allows.
pub(crate) struct Obj<'a> {
    pub(crate) path: String,
    pub(crate) map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    pub(crate) fn key(&self, k: &str) -> String {
        if self.path.is_empty() {
            k.to_string()
        } else {
            format!("{}.{}", self.path, k)
        }
    }
    pub(crate) fn get(&self, k: &str) -> Option<&'a Value> {
        self.map.get(k).filter(|v| !v.is_null())
    }
}

impl Reader {
    pub(crate) fn new(record_quantities: bool) -> Reader {
        Reader {
            errs: Vec::new(),
            quantities: record_quantities.then(Vec::new),
        }
    }

    pub(crate) fn err(
        &mut self,
        key: impl Into<String>,
        value: impl Into<String>,
        allowed: impl Into<String>,
    ) {
        self.errs.push(ScenarioError {
            key: key.into(),
            value: value.into(),
            allowed: allowed.into(),
        });
    }

    pub(crate) fn obj<'a>(
        &mut self,
        v: &'a Value,
        path: &str,
        allowed: &[&str],
    ) -> Option<Obj<'a>> {
        match v {
            Value::Object(map) => {
                for k in map.keys() {
                    if !allowed.contains(&k.as_str()) {
                        let key = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        self.err(
                            key,
                            "",
                            format!("unknown key; allowed here: {}", allowed.join(", ")),
                        );
                    }
                }
                Some(Obj {
                    path: path.to_string(),
                    map,
                })
            }
            other => {
                self.err(
                    if path.is_empty() { "(scenario)" } else { path },
                    show(other),
                    "must be a mapping of keys to values",
                );
                None
            }
        }
    }

    pub(crate) fn sub<'a>(&mut self, o: &Obj<'a>, k: &str, allowed: &[&str]) -> Option<Obj<'a>> {
        let v = o.get(k)?;
        self.obj(v, &o.key(k), allowed)
    }

    pub(crate) fn string(&mut self, o: &Obj, k: &str, default: Option<&str>) -> Option<String> {
        match o.get(k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.err(o.key(k), show(other), "must be a string");
                None
            }
            None => match default {
                Some(d) => Some(d.to_string()),
                None => {
                    self.err(o.key(k), "", "is required");
                    None
                }
            },
        }
    }

    /// Refuse a name the output tables would write (tenants, perftest
    /// applications, jobs, policies) if it holds a character that splits
    /// their unquoted CSV cells: a comma, a double quote or a line break.
    pub(crate) fn table_name(&mut self, key: impl Into<String>, name: &str) {
        if name.contains([',', '"', '\n', '\r']) {
            self.err(
                key,
                format!("`{}`", name.escape_debug()),
                "a name without commas, double quotes or line breaks: it is written into the CSV tables as it is",
            );
        }
    }

    pub(crate) fn choice(
        &mut self,
        o: &Obj,
        k: &str,
        options: &[&str],
        default: Option<&str>,
    ) -> Option<String> {
        let s = self.string(o, k, default)?;
        if options.contains(&s.as_str()) {
            Some(s)
        } else {
            self.err(
                o.key(k),
                format!("`{s}`"),
                format!("allowed: {}", options.join(", ")),
            );
            None
        }
    }

    pub(crate) fn unit_value<T: UnitKind>(
        &mut self,
        o: &Obj,
        k: &str,
        default: Option<T>,
        parse: fn(&str) -> Result<T, String>,
        example: &str,
    ) -> Option<T> {
        // A bare 0 is 0 in every unit (`start: 0`): read it as written with
        // the example's unit.
        let zero = match o.get(k) {
            Some(Value::Number(n)) if n.as_f64() == Some(0.0) => Some(Value::String(format!(
                "0{}",
                example.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
            ))),
            _ => None,
        };
        match zero.as_ref().or(o.get(k)) {
            Some(Value::String(s)) => match parse(s) {
                Ok(v) => {
                    if let Some(q) = self.quantities.as_mut() {
                        q.push(Quantity {
                            key: o.key(k),
                            kind: T::KIND,
                            value: v.base(),
                        });
                    }
                    Some(v)
                }
                Err(e) => {
                    self.err(o.key(k), format!("`{s}`"), e);
                    None
                }
            },
            Some(Value::Number(n)) => {
                self.err(
                    o.key(k),
                    format!("`{n}`"),
                    format!("has no unit; write it with one, like `{example}`"),
                );
                None
            }
            Some(other) => {
                self.err(
                    o.key(k),
                    show(other),
                    format!("must be a quantity with a unit, like `{example}`"),
                );
                None
            }
            None => {
                if default.is_none() {
                    self.err(
                        o.key(k),
                        "",
                        format!("is required (a quantity like `{example}`)"),
                    );
                }
                default
            }
        }
    }

    pub(crate) fn rate(&mut self, o: &Obj, k: &str, default: Option<Rate>) -> Option<Rate> {
        let r = self.unit_value(o, k, default, units::parse_rate, "100Gbps")?;
        if r.bps() == 0 {
            // As written: `0.4bps` rounds to 0, which the user never wrote.
            self.err(
                o.key(k),
                written(o, k, &r),
                "must be greater than 0 bit/s; allowed: at least 1bps (rates are whole bits per second)",
            );
            return None;
        }
        Some(r)
    }

    pub(crate) fn duration(
        &mut self,
        o: &Obj,
        k: &str,
        default: Option<Duration>,
    ) -> Option<Duration> {
        self.unit_value(o, k, default, units::parse_duration, "10us")
    }

    pub(crate) fn positive_duration(
        &mut self,
        o: &Obj,
        k: &str,
        default: Option<Duration>,
    ) -> Option<Duration> {
        let d = self.duration(o, k, default)?;
        if d.ps() == 0 {
            // As written: `1e-20us` rounds to 0, which the user never wrote.
            self.err(
                o.key(k),
                written(o, k, &d),
                "must be greater than 0; allowed: at least 1ps (times are whole picoseconds)",
            );
            return None;
        }
        Some(d)
    }

    pub(crate) fn bytes(&mut self, o: &Obj, k: &str, default: Option<u64>) -> Option<u64> {
        self.unit_value(o, k, default, units::parse_bytes, "64KB")
    }

    pub(crate) fn int(
        &mut self,
        o: &Obj,
        k: &str,
        default: Option<u64>,
        min: u64,
        max: u64,
    ) -> Option<u64> {
        match o.get(k) {
            Some(Value::Number(n)) if n.as_u64().is_some() => {
                let v = n.as_u64().unwrap();
                if v < min || v > max {
                    self.err(
                        o.key(k),
                        format!("`{v}`"),
                        format!("allowed: an integer from {min} to {max}"),
                    );
                    None
                } else {
                    Some(v)
                }
            }
            Some(other) => {
                self.err(
                    o.key(k),
                    show(other),
                    format!("allowed: an integer from {min} to {max}"),
                );
                None
            }
            None => {
                if default.is_none() {
                    self.err(
                        o.key(k),
                        "",
                        format!("is required (an integer from {min} to {max})"),
                    );
                }
                default
            }
        }
    }

    pub(crate) fn float(
        &mut self,
        o: &Obj,
        k: &str,
        default: Option<f64>,
        min: f64,
        max: f64,
        min_open: bool,
    ) -> Option<f64> {
        // YAML 1.1 reads `1e-3` (no dot) as a string; accept numeric strings.
        let numeric_string = match o.get(k) {
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match o.get(k) {
            Some(v @ (Value::Number(_) | Value::String(_)))
                if v.is_number() || numeric_string.is_some() =>
            {
                let v = v.as_f64().or(numeric_string).unwrap_or(f64::NAN);
                let low_ok = if min_open { v > min } else { v >= min };
                if !(low_ok && v <= max) {
                    let lo = if min_open { "greater than" } else { "at least" };
                    self.err(
                        o.key(k),
                        format!("`{v}`"),
                        format!("allowed: a number {lo} {min} and at most {max}"),
                    );
                    None
                } else {
                    Some(v)
                }
            }
            Some(other) => {
                // A policy threshold takes any number: f64's limits spelt out
                // are 309 digits each.
                let allowed = if min == f64::MIN && max == f64::MAX {
                    "must be a number, like 20 or 0.5".to_string()
                } else {
                    format!("must be a number from {min} to {max}")
                };
                self.err(o.key(k), show(other), allowed);
                None
            }
            None => {
                if default.is_none() {
                    self.err(o.key(k), "", "is required");
                }
                default
            }
        }
    }

    pub(crate) fn boolean(&mut self, o: &Obj, k: &str, default: bool) -> bool {
        match o.get(k) {
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                self.err(o.key(k), show(other), "must be true or false");
                default
            }
            None => default,
        }
    }

    /// Entries of a list key `k` (a single mapping counts as a list of one),
    /// each with its dotted path (`workload.flows[2]`).
    pub(crate) fn list<'a>(&mut self, o: &Obj<'a>, k: &str) -> Vec<(String, &'a Value)> {
        match o.get(k) {
            None => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("{}[{i}]", o.key(k)), v))
                .collect(),
            Some(v @ Value::Object(_)) => vec![(o.key(k), v)],
            Some(other) => {
                self.err(
                    o.key(k),
                    show(other),
                    "must be a mapping or a list of mappings",
                );
                Vec::new()
            }
        }
    }
}
