//! NVIDIA DOCA PCC's `rtt_template` sample (RP side), ported by renaming:
//! delay-based AIMD driven by out-of-band RTT probes, with one probe in
//! flight per flow, continuously. Rates are 20-bit fixed-point fractions of
//! line rate and factors 16-bit fixed point, as on the BlueField-3 DPA.
//!
//! * New flow: rate = `new_flow_rate`, request a probe.
//! * CNP or NACK: only set a flag for the next RTT event.
//! * RTT event: `rtt = T4 − T1`; `min_rtt` tracks the smallest sample (reset
//!   to `initial_min_rtt` on about 1/256 of samples, as the sample does when
//!   the low byte of the end timestamp is 0). Then:
//!   NACK flag and rtt ≥ max_delay → rate × (1 − 5f);
//!   else CNP flag or rtt ≥ max_delay → rate × (1 − 2f);
//!   else rtt − min_rtt > base_relative_rtt → rate × (1 − f); else rate + ai.
//!   Clamp to [min_rate, 1], clear the flags, request the next probe.
//! * A lost probe is re-requested (the sample's abort/retry).
//!
//! Not ported: the high-utilisation mode (it needs the port TX-utilisation
//! host signal, which rdmalab does not model yet).
//!
//! Defaults: `rtt_template_algo_params.h` (DOCA 3.2.1+).

use crate::control::params::{self as p, ParamSpec, ParamValues};
use crate::control::{CcContext, CcEvent, Controller, EventMask};
use crate::time::{Duration, Rate};

/// Line rate as a 20-bit fixed-point fraction (DOCA_PCC_DEV_MAX_RATE).
pub const MAX_RATE_FXP20: u32 = 1 << 20;

pub const PARAMS: &[ParamSpec] = &[
    p::float(
        "update_factor",
        6553.0 / 65536.0,
        0.0,
        0.2,
        "decrease step f (fxp16 0.1)",
        "DOCA rtt_template UPDATE_FACTOR = 6553",
    ),
    p::float(
        "ai",
        52428.0 / 1048576.0,
        0.0,
        1.0,
        "additive increase per RTT event, fraction of line rate",
        "DOCA rtt_template AI = 5 % (fxp20 52428)",
    ),
    p::duration(
        "base_relative_rtt",
        13.0 * p::US,
        0.0,
        1e12,
        "target queueing delay rtt − min_rtt",
        "DOCA rtt_template BASE_RELATIVE_RTT = 13000 ns",
    ),
    p::float(
        "new_flow_rate",
        1.0,
        1e-6,
        1.0,
        "rate of a new flow, fraction of line rate",
        "DOCA rtt_template NEW_FLOW_RATE = 1<<20",
    ),
    p::float(
        "min_rate",
        64.0 / 1048576.0,
        1e-6,
        1.0,
        "rate floor, fraction of line rate",
        "DOCA rtt_template MIN_RATE = 1<<(20−14)",
    ),
    p::duration(
        "max_delay",
        150.0 * p::US,
        1.0,
        1e12,
        "an RTT this large counts as congestion, like a CNP",
        "DOCA rtt_template MAX_DELAY = 150000 ns",
    ),
    p::duration(
        "initial_min_rtt",
        200.0 * p::US,
        1.0,
        1e12,
        "min_rtt start value and reset value",
        "DOCA rtt_template INITIAL_MIN_RTT = 200000 ns",
    ),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DocaRttParams {
    /// f in 16-bit fixed point.
    pub update_factor_fxp16: u32,
    /// AI in 20-bit fixed point of line rate.
    pub ai_fxp20: u32,
    pub base_relative_rtt: Duration,
    pub new_flow_rate_fxp20: u32,
    pub min_rate_fxp20: u32,
    pub max_delay: Duration,
    pub initial_min_rtt: Duration,
}

impl DocaRttParams {
    pub fn from_values(v: &ParamValues) -> Self {
        let fxp16 = |x: f64| (x * 65536.0).round() as u32;
        let fxp20 = |x: f64| ((x * MAX_RATE_FXP20 as f64).round() as u32).clamp(1, MAX_RATE_FXP20);
        DocaRttParams {
            update_factor_fxp16: fxp16(v.get("update_factor")),
            ai_fxp20: (v.get("ai") * MAX_RATE_FXP20 as f64).round() as u32,
            base_relative_rtt: v.duration("base_relative_rtt"),
            new_flow_rate_fxp20: fxp20(v.get("new_flow_rate")),
            min_rate_fxp20: fxp20(v.get("min_rate")),
            max_delay: v.duration("max_delay"),
            initial_min_rtt: v.duration("initial_min_rtt"),
        }
    }
}

impl Default for DocaRttParams {
    fn default() -> Self {
        Self::from_values(&ParamValues::defaults(PARAMS))
    }
}

/// The per-flow context (the sample's 48-byte `doca_pcc_dev_algo_ctxt_t`).
#[derive(Clone, Debug)]
pub struct DocaRtt {
    p: DocaRttParams,
    cur_rate: u32,
    was_nack: bool,
    was_cnp: bool,
    min_rtt: Duration,
    probes_answered: u64,
}

/// `a × (1 − k·f)` in 16-bit fixed point, as `doca_pcc_dev_fxp_mult` would.
#[inline]
fn decrease(rate: u32, k: u32, f_fxp16: u32) -> u32 {
    let factor = 65536u64.saturating_sub(k as u64 * f_fxp16 as u64);
    ((rate as u64 * factor) >> 16) as u32
}

impl DocaRtt {
    pub fn new(p: DocaRttParams) -> Self {
        DocaRtt {
            p,
            cur_rate: 0,
            was_nack: false,
            was_cnp: false,
            min_rtt: p.initial_min_rtt,
            probes_answered: 0,
        }
    }

    pub fn rate_fxp20(&self) -> u32 {
        self.cur_rate
    }

    fn emit(&self, ctx: &mut CcContext) {
        let bps =
            (ctx.line_rate.bps() as u128 * self.cur_rate as u128 / MAX_RATE_FXP20 as u128) as u64;
        ctx.set_rate(Rate(bps.max(1)));
    }

    /// The sample's core logic on one RTT sample.
    fn on_rtt(&mut self, rtt: Duration) {
        let p = self.p;
        self.probes_answered += 1;
        // The sample resets min_rtt when the low byte of the end timestamp is 0
        // (≈ 1 sample in 256); rdmalab uses every 256th answer, deterministically.
        if self.probes_answered % 256 == 0 {
            self.min_rtt = p.initial_min_rtt;
        }
        if rtt < self.min_rtt {
            self.min_rtt = rtt;
        }
        let f = p.update_factor_fxp16;
        let congested = rtt >= p.max_delay;
        self.cur_rate = if self.was_nack && congested {
            decrease(self.cur_rate, 5, f)
        } else if self.was_cnp || congested {
            decrease(self.cur_rate, 2, f)
        } else if rtt.ps().saturating_sub(self.min_rtt.ps()) > p.base_relative_rtt.ps() {
            decrease(self.cur_rate, 1, f)
        } else {
            self.cur_rate.saturating_add(p.ai_fxp20)
        };
        self.cur_rate = self.cur_rate.clamp(p.min_rate_fxp20, MAX_RATE_FXP20);
        self.was_nack = false;
        self.was_cnp = false;
    }
}

impl Controller for DocaRtt {
    fn name(&self) -> &str {
        "doca-rtt"
    }
    fn subscriptions(&self) -> EventMask {
        EventMask(EventMask::RTT | EventMask::CNP | EventMask::NACK)
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        self.cur_rate = self.p.new_flow_rate_fxp20;
        self.emit(ctx);
        ctx.request_probe(ctx.udp_sport);
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        match *ev {
            CcEvent::Cnp => self.was_cnp = true,
            CcEvent::Nack { .. } => self.was_nack = true,
            CcEvent::Rtt { rtt, lost, .. } => {
                if !lost {
                    self.on_rtt(rtt);
                    self.emit(ctx);
                }
                // One probe in flight, continuously; a lost one is retried.
                ctx.request_probe(ctx.udp_sport);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::Actions;
    use crate::time::Time;

    const LINE: Rate = Rate::gbps(100);

    fn rtt(d: &mut DocaRtt, us: u64) -> Actions {
        let mut a = Actions::default();
        let mut ctx = CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a);
        d.on_event(
            &CcEvent::Rtt {
                udp_sport: 7,
                sent: Time::ZERO,
                rtt: Duration::from_us(us),
                lost: false,
            },
            &mut ctx,
        );
        a
    }

    fn started() -> DocaRtt {
        let mut d = DocaRtt::new(DocaRttParams::default());
        let mut a = Actions::default();
        let mut ctx = CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a);
        d.on_start(&mut ctx);
        assert_eq!(a.probe_count, 1, "a new flow asks for a probe at once");
        d
    }

    #[test]
    fn defaults_are_the_samples_raw_values() {
        let p = DocaRttParams::default();
        assert_eq!(p.update_factor_fxp16, 6553);
        assert_eq!(p.ai_fxp20, 52428);
        assert_eq!(p.min_rate_fxp20, 64);
        assert_eq!(p.new_flow_rate_fxp20, 1 << 20);
    }

    #[test]
    fn queueing_above_the_target_decreases_by_f_and_below_adds_ai() {
        let mut d = started();
        rtt(&mut d, 10); // min_rtt = 10 µs; relative 0 → +AI (capped at line)
        assert_eq!(d.rate_fxp20(), 1 << 20);
        let a = rtt(&mut d, 30); // relative 20 µs > 13 µs → × (1 − f)
        assert_eq!(d.rate_fxp20(), decrease(1 << 20, 1, 6553));
        assert_eq!(a.probe_count, 1, "every answer re-arms the probe");
        let before = d.rate_fxp20();
        rtt(&mut d, 12);
        assert_eq!(d.rate_fxp20(), before + 52428);
    }

    #[test]
    fn a_cnp_flag_or_a_huge_rtt_cuts_by_2f_and_a_nack_with_huge_rtt_by_5f() {
        let mut d = started();
        rtt(&mut d, 10);
        let mut a = Actions::default();
        d.on_event(
            &CcEvent::Cnp,
            &mut CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a),
        );
        assert!(a.rate.is_none(), "a CNP only sets a flag");
        rtt(&mut d, 10);
        assert_eq!(d.rate_fxp20(), decrease(1 << 20, 2, 6553));
        let r = d.rate_fxp20();
        d.on_event(
            &CcEvent::Nack { expected_psn: 0 },
            &mut CcContext::new(Time::ZERO, LINE, LINE, 0, &mut a),
        );
        rtt(&mut d, 200);
        assert_eq!(d.rate_fxp20(), decrease(r, 5, 6553));
    }

    #[test]
    fn the_rate_never_leaves_its_bounds() {
        let mut d = started();
        for _ in 0..1000 {
            rtt(&mut d, 500);
        }
        assert_eq!(d.rate_fxp20(), 64);
    }
}
