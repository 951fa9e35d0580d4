//! A key as a model declares it: the one place its unit, default, allowed
//! values, rules and meaning are written. The reader checks a value against
//! the declaration and the reference docs are generated from it, so a key
//! cannot be documented with one range and checked with another.

use super::units;
use super::{show, Obj, Reader};
use crate::time::Duration;
use serde_json::Value;

/// One key of a model's section of a scenario (`mtu` of `nic`).
#[derive(Clone, Copy, Debug)]
pub struct Key {
    /// Its name within the section.
    pub name: &'static str,
    /// The kind of value, as the reference's unit column says it.
    pub unit: &'static str,
    /// The default as a scenario would write it (`1024B`, `4us`, `packet`);
    /// [`REQUIRED`]: the key must be given; [`NONE`]: no value unless given
    /// (the meaning says what that does).
    pub default: &'static str,
    /// What the reader accepts.
    pub allowed: Allowed,
    /// How it depends on other keys, shown after the allowed values.
    pub rule: Rule,
    /// What it does, and the source of its default.
    pub meaning: &'static str,
}

/// [`Key::default`] of a key that must be given.
pub const REQUIRED: &str = "required";
/// [`Key::default`] of a key that has no value unless given.
pub const NONE: &str = "none";

/// How a [`Key`] depends on the other keys of its section.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// It stands alone.
    None,
    /// It means something only when the section's key `key` (given or by
    /// its default) is one of `values`; given otherwise, it is refused
    /// ([`Reader::check_rules`]), so the docs and the check are one rule.
    OnlyWith {
        key: &'static str,
        values: &'static [&'static str],
    },
    /// A rule the model's own code checks (it spans sections, or is not
    /// of the shapes above); the text is what the docs show.
    Text(&'static str),
}

impl Rule {
    /// The rule as the reference's allowed column shows it.
    pub fn describe(&self) -> String {
        match *self {
            Rule::None => String::new(),
            Rule::OnlyWith { key, values } => format!("only with {}", one_of(key, values)),
            Rule::Text(text) => text.into(),
        }
    }
}

/// "`key: a`" or "`key: a` or `key: b`".
fn one_of(key: &str, values: &[&str]) -> String {
    values
        .iter()
        .map(|v| format!("`{key}: {v}`"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The values a [`Key`] accepts.
#[derive(Clone, Copy, Debug)]
pub enum Allowed {
    /// An integer from `min` to `max`.
    Int { min: u64, max: u64 },
    /// A size from `min` to `max` bytes.
    Size { min: u64, max: u64 },
    /// A number from `min` (excluded when `min_open`) to `max`.
    Number { min: f64, max: f64, min_open: bool },
    /// A duration of at least `min_ps` picoseconds (0 or 1).
    Duration { min_ps: u64 },
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// `true` or `false`.
    Bool,
    /// Read by the model's own code (a word or a quantity, say); the text
    /// is what the docs show and what its messages say.
    Custom(&'static str),
}

impl Allowed {
    /// The values, as the reference's allowed column shows them.
    pub fn describe(&self) -> String {
        match *self {
            Allowed::Int { min, max } => format!("{min} to {max}"),
            Allowed::Size { min, max } if max >= units::MAX_SIZE_BYTES => format!("≥ {min}B"),
            Allowed::Size { min, max } => format!("{min}B to {max}B"),
            Allowed::Number {
                min,
                max,
                min_open: true,
            } => format!("> {min} and ≤ {max}"),
            Allowed::Number { min, max, .. } => format!("{min} to {max}"),
            Allowed::Duration { min_ps: 0 } => "≥ 0".into(),
            Allowed::Duration { .. } => "> 0".into(),
            Allowed::OneOf(words) => words
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", "),
            Allowed::Bool => "`true`, `false`".into(),
            Allowed::Custom(text) => text.into(),
        }
    }
}

impl Key {
    /// The allowed column: the values, then the rule.
    pub fn allowed_text(&self) -> String {
        match (self.allowed.describe(), self.rule.describe()) {
            (v, r) if r.is_empty() => v,
            (v, r) => format!("{v}; {r}"),
        }
    }

    /// Whether the key has a default value to read. A [`NONE`] key is
    /// read only when given; a [`REQUIRED`] one is refused when missing.
    fn has_default(&self) -> bool {
        self.default != REQUIRED && self.default != NONE
    }

    /// The default, read as the key's value would be. A declaration whose
    /// default does not read is a bug in the model (each model's tests
    /// write every default and compare).
    pub(crate) fn default_size(&self) -> u64 {
        units::parse_bytes(self.default)
            .unwrap_or_else(|e| panic!("default of `{}`: {e}", self.name))
    }
    pub(crate) fn default_duration(&self) -> Duration {
        units::parse_duration(self.default)
            .unwrap_or_else(|e| panic!("default of `{}`: {e}", self.name))
    }
    pub(crate) fn default_number(&self) -> f64 {
        self.default
            .parse()
            .unwrap_or_else(|e| panic!("default of `{}`: {e}", self.name))
    }
}

/// Reading a declared key: the default and the check come from the declaration.
impl Reader {
    /// Refuse every key of section `o` given where its [`Rule::OnlyWith`]
    /// says it means nothing (`keys`: the section's declarations, which
    /// give the other key's default when it is not written).
    pub(crate) fn check_rules(&mut self, o: &Obj, keys: &[Key]) {
        for k in keys {
            let (Rule::OnlyWith { key, values }, Some(given)) = (k.rule, o.get(k.name)) else {
                continue;
            };
            let other = match o.get(key) {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => keys
                    .iter()
                    .find(|d| d.name == key)
                    .map_or("", |d| d.default)
                    .to_string(),
            };
            if !values.contains(&other.as_str()) {
                let given = show(given);
                self.err(
                    o.key(k.name),
                    given,
                    format!("only applies with {}", one_of(&o.key(key), values)),
                );
            }
        }
    }

    pub(crate) fn key_int(&mut self, o: &Obj, k: &Key) -> Option<u64> {
        let Allowed::Int { min, max } = k.allowed else {
            panic!("`{}` is not declared an integer", k.name)
        };
        let default = k.has_default().then(|| k.default.parse().ok()).flatten();
        self.int(o, k.name, default, min, max)
    }

    pub(crate) fn key_size(&mut self, o: &Obj, k: &Key) -> Option<u64> {
        let Allowed::Size { min, max } = k.allowed else {
            panic!("`{}` is not declared a size", k.name)
        };
        let v = self.bytes(o, k.name, k.has_default().then(|| k.default_size()))?;
        if !(min..=max).contains(&v) {
            self.err(
                o.key(k.name),
                format!("`{v}B`"),
                format!("allowed: {}", k.allowed_text()),
            );
            return None;
        }
        Some(v)
    }

    pub(crate) fn key_duration(&mut self, o: &Obj, k: &Key) -> Option<Duration> {
        let Allowed::Duration { min_ps } = k.allowed else {
            panic!("`{}` is not declared a duration", k.name)
        };
        let default = k.has_default().then(|| k.default_duration());
        if min_ps == 0 {
            self.duration(o, k.name, default)
        } else {
            self.positive_duration(o, k.name, default)
        }
    }

    pub(crate) fn key_number(&mut self, o: &Obj, k: &Key) -> Option<f64> {
        let Allowed::Number { min, max, min_open } = k.allowed else {
            panic!("`{}` is not declared a number", k.name)
        };
        let default = k.has_default().then(|| k.default_number());
        self.float(o, k.name, default, min, max, min_open)
    }

    pub(crate) fn key_choice(&mut self, o: &Obj, k: &Key) -> Option<String> {
        let Allowed::OneOf(words) = k.allowed else {
            panic!("`{}` is not declared a choice", k.name)
        };
        self.choice(o, k.name, words, Some(k.default))
    }

    pub(crate) fn key_bool(&mut self, o: &Obj, k: &Key) -> bool {
        let Allowed::Bool = k.allowed else {
            panic!("`{}` is not declared a boolean", k.name)
        };
        self.boolean(o, k.name, k.default == "true")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_values_read_as_the_docs_show_them() {
        assert_eq!(Allowed::Int { min: 1, max: 7 }.describe(), "1 to 7");
        assert_eq!(
            Allowed::Size { min: 64, max: 9000 }.describe(),
            "64B to 9000B"
        );
        assert_eq!(
            Allowed::Size {
                min: 1,
                max: units::MAX_SIZE_BYTES
            }
            .describe(),
            "≥ 1B"
        );
        assert_eq!(Allowed::Duration { min_ps: 0 }.describe(), "≥ 0");
        assert_eq!(
            Allowed::Number {
                min: 0.0,
                max: 1024.0,
                min_open: true
            }
            .describe(),
            "> 0 and ≤ 1024"
        );
        assert_eq!(
            Allowed::Number {
                min: 0.0,
                max: 1.0,
                min_open: false
            }
            .describe(),
            "0 to 1"
        );
        assert_eq!(Allowed::Duration { min_ps: 1 }.describe(), "> 0");
        assert_eq!(Allowed::OneOf(&["a", "b"]).describe(), "`a`, `b`");
    }
}
