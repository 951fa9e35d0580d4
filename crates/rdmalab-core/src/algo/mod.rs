//! Congestion-control algorithms. Each sees only the control-plane interface
//! (`crate::control`): events in, actions out. One file per algorithm.

pub mod dcqcn;

use crate::control::{Cc, Controller};
use std::sync::Arc;

/// Makes a user-defined controller for each new QP.
#[derive(Clone)]
pub struct ControllerFactory {
    pub name: String,
    pub make: Arc<dyn Fn() -> Box<dyn Controller>>,
}

impl std::fmt::Debug for ControllerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ControllerFactory({})", self.name)
    }
}

impl PartialEq for ControllerFactory {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.make, &o.make)
    }
}

/// Which controller every QP gets, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum CcConfig {
    /// No congestion control: QPs send at line rate (window permitting).
    None,
    Dcqcn(dcqcn::DcqcnParams),
    /// A user-defined controller, e.g. written against [`Controller`] in Rust.
    Custom(ControllerFactory),
}

impl CcConfig {
    pub fn name(&self) -> &str {
        match self {
            CcConfig::None => "none",
            CcConfig::Dcqcn(_) => "dcqcn",
            CcConfig::Custom(f) => &f.name,
        }
    }

    /// A fresh controller for one QP.
    pub fn make(&self) -> Cc {
        match self {
            CcConfig::None => Cc::Fixed,
            CcConfig::Dcqcn(p) => Cc::Dcqcn(dcqcn::Dcqcn::new(*p)),
            CcConfig::Custom(f) => Cc::Custom((f.make)()),
        }
    }
}
