//! Configuration as each model declares it: the keys a model reads from a
//! scenario, with unit, default, allowed values, source and meaning
//! ([`Key`]), and the [`Reader`] that reads them and collects every problem.
//! A model's section is read beside the model (`nic/config.rs`); the
//! scenario document as a whole (sections, cross-section rules) is read in
//! `scenario`. `docs/scenario-reference.md`'s key tables are generated from
//! the declarations.

mod key;
mod reader;
pub mod units;

pub use key::{Allowed, Key, Rule, NONE, REQUIRED};
pub(crate) use reader::{show, written, Obj, Reader};
pub use reader::{Quantity, ScenarioError};
