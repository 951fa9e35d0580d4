//! Congestion-control algorithms. Each sees only the control-plane interface
//! (`crate::control`): events in, actions out. One file per algorithm.

pub mod dcqcn;

use crate::control::Cc;

/// Which controller every QP gets, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum CcConfig {
    /// No congestion control: QPs send at line rate (window permitting).
    None,
    Dcqcn(dcqcn::DcqcnParams),
}

impl CcConfig {
    pub fn name(&self) -> &'static str {
        match self {
            CcConfig::None => "none",
            CcConfig::Dcqcn(_) => "dcqcn",
        }
    }

    /// A fresh controller for one QP.
    pub fn make(&self) -> Cc {
        match self {
            CcConfig::None => Cc::Fixed,
            CcConfig::Dcqcn(p) => Cc::Dcqcn(dcqcn::Dcqcn::new(*p)),
        }
    }
}
