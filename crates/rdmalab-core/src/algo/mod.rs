//! Congestion-control algorithms. Each sees only the control-plane interface
//! (`crate::control`): events in, actions out. One file per algorithm, each
//! declaring its parameters (`PARAMS`) with unit, default, range and source.

pub mod c;
pub mod dcqcn;
pub mod dctcp;
pub mod doca_rtt;
pub mod fair_share;
pub mod homa;
pub mod hpcc;
pub mod multipath;
pub mod port_meter;
pub mod receiver_backpressure;
pub mod receiver_grants;
pub mod swift;
pub mod tenant_guard;
pub mod timely;

use crate::control::params::{ParamSpec, ParamValues};
use crate::control::{Cc, Controller};
use std::sync::Arc;

/// A built-in algorithm as scenarios name it.
pub struct AlgorithmInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [ParamSpec],
    /// Signals it needs from the fabric, for the docs and for validation.
    pub needs: &'static str,
}

/// Algorithms with a measured cost per processed event on a NIC core:
/// (name, cycles, source). `control.compute` uses them unless told otherwise.
pub const MEASURED_CYCLES: &[(&str, u64, &str)] = &[
    (
        "swift",
        2020,
        "SCR (NSDI'25) A.12, Fig. 22: a Swift update with per-flow bookkeeping takes about 4 µs on the BlueField-3 DPA; 4 µs at its 505 MHz clock",
    ),
    (
        "dcqcn",
        60,
        "SwCC (ATC'25) Fig. 10 bounds DCQCN to 44–85 cycles per event on its RISC-V cores; rdmalab's fit (docs/swcc.md)",
    ),
];

/// The measured cycles per event of a built-in algorithm, and their source.
pub fn measured_cycles(name: &str) -> Option<(u64, &'static str)> {
    MEASURED_CYCLES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, c, s)| (c, s))
}

/// Every built-in algorithm, in the order the docs list them.
pub const ALGORITHMS: &[AlgorithmInfo] = &[
    AlgorithmInfo { name: "none", summary: "no congestion control: line rate, window permitting", params: &[], needs: "" },
    AlgorithmInfo {
        name: "dcqcn",
        summary: "DCQCN reaction point (ECN → CNP), Mellanox/ns-3 HPCC timer-driven form",
        params: dcqcn::PARAMS,
        needs: "ECN marking at switches (switch.ecn.enabled)",
    },
    AlgorithmInfo { name: "timely", summary: "TIMELY: rate from the RTT gradient, once per RTT", params: timely::PARAMS, needs: "" },
    AlgorithmInfo {
        name: "dctcp",
        summary: "DCTCP, rate-based as in ns-3 HPCC, or window-based as in SRNIC (`window`): α from ECN echoes, cut by α/2",
        params: dctcp::PARAMS,
        needs: "ECN marking with a step threshold (kmin = kmax, pmax = 1)",
    },
    AlgorithmInfo {
        name: "hpcc",
        summary: "HPCC: rate (and window) from INT link utilisation",
        params: hpcc::PARAMS,
        needs: "INT at switches (switch.int: true)",
    },
    AlgorithmInfo {
        name: "swift",
        summary: "Swift: delay-based AIMD window against a hop- and flow-scaled target",
        params: swift::PARAMS,
        needs: "",
    },
    AlgorithmInfo {
        name: "fair-static",
        summary: "SCR fair QP scheduler, static allocation: every flow of a NIC gets capacity / n (with a floor), from TX events",
        params: fair_share::STATIC_PARAMS,
        needs: "",
    },
    AlgorithmInfo {
        name: "water-filling",
        summary: "SCR fair QP scheduler, water filling: saturated flows grow by a step while capacity remains, idle allocation is reclaimed",
        params: fair_share::WATER_FILLING_PARAMS,
        needs: "",
    },
    AlgorithmInfo {
        name: "doca-rtt",
        summary: "NVIDIA DOCA PCC's rtt_template sample: AIMD on out-of-band RTT probes, fixed-point rates",
        params: doca_rtt::PARAMS,
        needs: "",
    },
    AlgorithmInfo {
        name: "receiver-grants",
        summary: "Receiver-driven grants (SCR §A.8, Homa-like): the receiver measures its port and grants the sender the free bandwidth as an out-of-band credit",
        params: receiver_grants::PARAMS,
        needs: "RX events at the receiver (placement swcc or host-cpu, or control.rx_events: true)",
    },
    AlgorithmInfo {
        name: "receiver-backpressure",
        summary: "Receiver-driven backpressure (SCR §A.8, ECN-like): out-of-band notices while the receiver's port is busy or marked; MD per notice, timed AI",
        params: receiver_backpressure::PARAMS,
        needs: "RX events at the receiver (placement swcc or host-cpu, or control.rx_events: true)",
    },
    AlgorithmInfo {
        name: "homa",
        summary: "Homa (SwCC Table 3): receiver-driven credits; one BDP unscheduled, then SRPT grants out of band to the `overcommit` messages with the fewest bytes left",
        params: homa::PARAMS,
        needs: "RX events at the receiver (placement swcc or host-cpu, or control.rx_events: true) and control.cc_header of at least 8 B (message lengths)",
    },
    AlgorithmInfo {
        name: "tenant-guard",
        summary: "DCQCN plus a receiver that watches each tenant's share of its busy port and sends out-of-band notices to a tenant above an equal share, whose QPs cap their rate (MD per notice, timed AI): rdmalab's defense against parallel, staggered and shuffled-overlay attacks",
        params: tenant_guard::PARAMS,
        needs: "ECN marking at switches, tenants (workload.tenants), RX events at the receiver (placement swcc or host-cpu, or control.rx_events: true)",
    },
    AlgorithmInfo {
        name: "multipath",
        summary: "SCR multipath selection: probe K source-port paths, move the QP to the fastest live one (line rate)",
        params: multipath::PARAMS,
        needs: "",
    },
];

pub fn algorithm(name: &str) -> Option<&'static AlgorithmInfo> {
    ALGORITHMS.iter().find(|a| a.name == name)
}

/// State the controllers of one run share across QPs, per NIC (SCR's DPA
/// keeps such global records). The world creates it, so runs never share it.
#[derive(Clone, Default)]
pub struct SharedTables {
    /// Flow tables of the fair QP schedulers, by sending NIC.
    pub fair: fair_share::NicTables,
    /// Granted QPs, by receiving NIC.
    pub grants: receiver_grants::GrantTables,
    /// Tenant ledgers of the tenant guards, by receiving node.
    pub tenant_guard: tenant_guard::GuardTables,
    /// Incoming messages of the Homa receivers, by receiving node.
    pub homa: homa::HomaTables,
}

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
    Timely(timely::TimelyParams),
    Dctcp(dctcp::DctcpParams),
    Hpcc(hpcc::HpccParams),
    Swift(swift::SwiftParams),
    DocaRtt(doca_rtt::DocaRttParams),
    FairShare(fair_share::FairParams),
    ReceiverGrants(receiver_grants::ReceiverGrantsParams),
    ReceiverBackpressure(receiver_backpressure::ReceiverBackpressureParams),
    TenantGuard(tenant_guard::TenantGuardParams),
    Homa(homa::HomaParams),
    Multipath(multipath::MultipathParams),
    /// A user-defined controller, e.g. written against [`Controller`] in Rust.
    Custom(ControllerFactory),
    /// A controller in C (DOCA PCC's device API), loaded for this run.
    C(Arc<c::CLibrary>),
}

impl CcConfig {
    /// A controller of your own: `make` makes one for each new QP (or CC
    /// scope), and `name` stands for it in outputs and errors.
    /// `s.cc = CcConfig::custom("aimd", || Box::new(Aimd::default()));`
    pub fn custom(
        name: impl Into<String>,
        make: impl Fn() -> Box<dyn Controller> + 'static,
    ) -> CcConfig {
        CcConfig::Custom(ControllerFactory {
            name: name.into(),
            make: Arc::new(make),
        })
    }

    /// The configuration of built-in algorithm `name` with parameter values `v`.
    pub fn builtin(name: &str, v: &ParamValues) -> Option<CcConfig> {
        Some(match name {
            "none" => CcConfig::None,
            "dcqcn" => CcConfig::Dcqcn(dcqcn::DcqcnParams::from_values(v)),
            "timely" => CcConfig::Timely(timely::TimelyParams::from_values(v)),
            "dctcp" => CcConfig::Dctcp(dctcp::DctcpParams::from_values(v)),
            "hpcc" => CcConfig::Hpcc(hpcc::HpccParams::from_values(v)),
            "swift" => CcConfig::Swift(swift::SwiftParams::from_values(v)),
            "doca-rtt" => CcConfig::DocaRtt(doca_rtt::DocaRttParams::from_values(v)),
            "fair-static" => CcConfig::FairShare(fair_share::FairParams::static_from(v)),
            "water-filling" => CcConfig::FairShare(fair_share::FairParams::water_filling_from(v)),
            "receiver-grants" => {
                CcConfig::ReceiverGrants(receiver_grants::ReceiverGrantsParams::from_values(v))
            }
            "receiver-backpressure" => CcConfig::ReceiverBackpressure(
                receiver_backpressure::ReceiverBackpressureParams::from_values(v),
            ),
            "homa" => CcConfig::Homa(homa::HomaParams::from_values(v)),
            "tenant-guard" => {
                CcConfig::TenantGuard(tenant_guard::TenantGuardParams::from_values(v))
            }
            "multipath" => CcConfig::Multipath(multipath::MultipathParams::from_values(v)),
            _ => return None,
        })
    }

    pub fn name(&self) -> &str {
        match self {
            CcConfig::None => "none",
            CcConfig::Dcqcn(_) => "dcqcn",
            CcConfig::Timely(_) => "timely",
            CcConfig::Dctcp(_) => "dctcp",
            CcConfig::Hpcc(_) => "hpcc",
            CcConfig::Swift(_) => "swift",
            CcConfig::DocaRtt(_) => "doca-rtt",
            CcConfig::FairShare(p) if p.water_filling => "water-filling",
            CcConfig::FairShare(_) => "fair-static",
            CcConfig::ReceiverGrants(_) => "receiver-grants",
            CcConfig::ReceiverBackpressure(_) => "receiver-backpressure",
            CcConfig::TenantGuard(_) => "tenant-guard",
            CcConfig::Homa(_) => "homa",
            CcConfig::Multipath(_) => "multipath",
            CcConfig::Custom(f) => &f.name,
            CcConfig::C(lib) => &lib.label,
        }
    }

    /// A fresh controller for one QP with no shared state (to ask what it
    /// subscribes to).
    pub fn make(&self) -> Cc {
        self.make_in(&Default::default())
    }

    /// A fresh controller for one QP of a run whose NICs keep `tables`.
    pub fn make_in(&self, tables: &SharedTables) -> Cc {
        match self {
            CcConfig::None => Cc::Fixed,
            CcConfig::Dcqcn(p) => Cc::Dcqcn(dcqcn::Dcqcn::new(*p)),
            CcConfig::Timely(p) => Cc::Timely(timely::Timely::new(*p)),
            CcConfig::Dctcp(p) => Cc::Dctcp(dctcp::Dctcp::new(*p)),
            CcConfig::Hpcc(p) => Cc::Hpcc(hpcc::Hpcc::new(*p)),
            CcConfig::Swift(p) => Cc::Swift(swift::Swift::new(*p)),
            CcConfig::DocaRtt(p) => Cc::DocaRtt(doca_rtt::DocaRtt::new(*p)),
            CcConfig::FairShare(p) => {
                Cc::FairShare(fair_share::FairShare::new(*p, tables.fair.clone()))
            }
            CcConfig::ReceiverGrants(p) => Cc::ReceiverGrants(
                receiver_grants::ReceiverGrants::shared(*p, tables.grants.clone()),
            ),
            CcConfig::ReceiverBackpressure(p) => {
                Cc::ReceiverBackpressure(receiver_backpressure::ReceiverBackpressure::new(*p))
            }
            CcConfig::Homa(p) => Cc::Homa(homa::Homa::new(*p, tables.homa.clone())),
            CcConfig::TenantGuard(p) => Cc::TenantGuard(tenant_guard::TenantGuard::new(
                *p,
                tables.tenant_guard.clone(),
            )),
            CcConfig::Multipath(p) => Cc::Multipath(crate::algo::multipath::Multipath::new(*p)),
            CcConfig::Custom(f) => Cc::Custom((f.make)()),
            CcConfig::C(lib) => Cc::C(c::CController::new(lib.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_default_lies_in_its_range_and_has_a_source() {
        for a in ALGORITHMS {
            for p in a.params {
                assert!(
                    p.min <= p.default && p.default <= p.max,
                    "{}.{}",
                    a.name,
                    p.name
                );
                assert!(
                    !p.source.is_empty() && !p.description.is_empty(),
                    "{}.{}",
                    a.name,
                    p.name
                );
            }
            assert!(CcConfig::builtin(a.name, &ParamValues::defaults(a.params)).is_some());
        }
    }
}
