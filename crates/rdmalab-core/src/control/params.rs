//! Declared parameters of a controller: name, kind (which fixes the unit),
//! default, allowed range, meaning and the source of the default.
//!
//! Algorithms declare a `&[ParamSpec]` table; scenarios are checked against
//! it (unknown names, missing units and out-of-range values are refused) and
//! the reference documentation is generated from it, so a parameter cannot
//! exist without a unit, a default and a source.

use crate::time::{Duration, Rate};

/// What a parameter is, and so the unit scenarios write it in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A plain number (a gain, a fraction, a factor).
    Float,
    /// A whole number (a count of stages, packets).
    Int,
    Bool,
    /// bit/s, written `100Gbps`.
    Rate,
    /// picoseconds, written `10us`.
    Duration,
    /// bytes, written `64KB`.
    Bytes,
}

impl ParamKind {
    pub fn unit(self) -> &'static str {
        match self {
            ParamKind::Float => "number",
            ParamKind::Int => "integer",
            ParamKind::Bool => "true/false",
            ParamKind::Rate => "rate",
            ParamKind::Duration => "duration",
            ParamKind::Bytes => "size",
        }
    }
}

/// One declared parameter. Numbers are in base units: bit/s, ps, bytes.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    pub default: f64,
    pub min: f64,
    pub max: f64,
    pub description: &'static str,
    pub source: &'static str,
    /// A boolean parameter of the same table that, when on, leaves this one
    /// without meaning: written beside it, it is refused.
    pub not_with: Option<&'static str>,
}

impl ParamSpec {
    /// Declare that this parameter means nothing while `flag` is on.
    pub const fn not_with(mut self, flag: &'static str) -> Self {
        self.not_with = Some(flag);
        self
    }

    /// Render a base-unit value the way scenarios write it.
    pub fn show(&self, v: f64) -> String {
        match self.kind {
            ParamKind::Float => format!("{v}"),
            ParamKind::Int => format!("{}", v as i64),
            ParamKind::Bool => format!("{}", v != 0.0),
            ParamKind::Rate => format!("{}", Rate(v as u64)),
            ParamKind::Duration => format!("{}", Duration(v as u64)),
            ParamKind::Bytes => format!("{}B", v as u64),
        }
    }
}

/// Values for a parameter table, defaults filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamValues {
    names: Vec<&'static str>,
    values: Vec<f64>,
}

impl ParamValues {
    pub fn defaults(specs: &[ParamSpec]) -> Self {
        ParamValues {
            names: specs.iter().map(|s| s.name).collect(),
            values: specs.iter().map(|s| s.default).collect(),
        }
    }

    pub fn set(&mut self, name: &str, v: f64) -> bool {
        match self.names.iter().position(|n| *n == name) {
            Some(i) => {
                self.values[i] = v;
                true
            }
            None => false,
        }
    }

    /// The value of a declared parameter (panics on an undeclared name: a bug in the algorithm).
    pub fn get(&self, name: &str) -> f64 {
        let i = self
            .names
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("undeclared parameter `{name}`"));
        self.values[i]
    }
    pub fn rate(&self, name: &str) -> Rate {
        Rate(self.get(name).round() as u64)
    }
    pub fn duration(&self, name: &str) -> Duration {
        Duration(self.get(name).round() as u64)
    }
    pub fn bytes(&self, name: &str) -> u64 {
        self.get(name).round() as u64
    }
    pub fn int(&self, name: &str) -> u32 {
        self.get(name).round() as u32
    }
    pub fn flag(&self, name: &str) -> bool {
        self.get(name) != 0.0
    }
}

/// Shorthands for declaring tables.
pub const fn rate(
    name: &'static str,
    default_bps: f64,
    min: f64,
    max: f64,
    description: &'static str,
    source: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Rate,
        default: default_bps,
        min,
        max,
        description,
        source,
        not_with: None,
    }
}
pub const fn duration(
    name: &'static str,
    default_ps: f64,
    min: f64,
    max: f64,
    description: &'static str,
    source: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Duration,
        default: default_ps,
        min,
        max,
        description,
        source,
        not_with: None,
    }
}
pub const fn float(
    name: &'static str,
    default: f64,
    min: f64,
    max: f64,
    description: &'static str,
    source: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Float,
        default,
        min,
        max,
        description,
        source,
        not_with: None,
    }
}
pub const fn int(
    name: &'static str,
    default: f64,
    min: f64,
    max: f64,
    description: &'static str,
    source: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Int,
        default,
        min,
        max,
        description,
        source,
        not_with: None,
    }
}
pub const fn boolean(
    name: &'static str,
    default: bool,
    description: &'static str,
    source: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Bool,
        default: if default { 1.0 } else { 0.0 },
        min: 0.0,
        max: 1.0,
        description,
        source,
        not_with: None,
    }
}
pub const fn bytes(
    name: &'static str,
    default: f64,
    min: f64,
    max: f64,
    description: &'static str,
    source: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Bytes,
        default,
        min,
        max,
        description,
        source,
        not_with: None,
    }
}

/// 1 µs in ps, 1 Gb/s in bit/s: for readable tables.
pub const US: f64 = 1e6;
pub const GBPS: f64 = 1e9;
pub const MBPS: f64 = 1e6;
