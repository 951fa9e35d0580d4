//! Controllers written in C against DOCA PCC's device API (`cc: {algorithm:
//! c, library: ...}`): the same `doca_pcc_dev_user_algo` a BlueField-3 runs,
//! loaded from a shared library and called once per event.
//!
//! The library holds the controller's code and rdmalab's C runtime
//! (`python/rdmalab/c/rdmalab_cc_runtime.c`, built in by `rdmalab cc` or by
//! the scenario loader). The layouts below mirror `rdmalab_cc.h`; the runtime
//! runs every call under a fault guard, so a crash in C becomes a run error
//! that names the controller, the event and the signal.
//!
//! Each run loads its own copy of the library file, so static variables in
//! the controller start afresh in every run of a sweep.

use crate::control::{CcContext, CcEvent, Controller, EventMask, CC_TIMER_SLOTS};
use crate::time::{Rate, Time};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Arc;

/// `rdmalab_cc.h`'s RDMALAB_CC_ABI_VERSION.
pub const ABI_VERSION: c_int = 1;
const CTXT_WORDS: usize = 32;
const RATE_UNCHANGED: u32 = u32::MAX;
/// DOCA_PCC_DEV_MAX_RATE: line rate in 20-bit fixed point.
const MAX_RATE: u32 = 1 << 20;

/// Event types: DOCA PCC's, then rdmalab's.
mod ev {
    pub const CNP: u8 = 2;
    pub const TX: u8 = 3;
    pub const ACK: u8 = 4;
    pub const NACK: u8 = 5;
    pub const RTT: u8 = 6;
    pub const START: u8 = 16;
    pub const TIMER: u8 = 17;
    pub const TIMEOUT: u8 = 18;
    pub const RX: u8 = 19;
    pub const NACK_OOS: u8 = 2;
    pub const FLAG_LOST: u8 = 1 << 6;
    pub const FLAG_ECN: u8 = 1 << 7;
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Ctxt {
    data: [u32; CTXT_WORDS],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Attr {
    bits: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Results {
    rate: u32,
    rtt_req: u32,
    probe_type_slot: u32,
    rate_bps: u64,
    window_op: u32,
    window_bytes: u64,
    timer_op: [u32; CC_TIMER_SLOTS],
    timer_ps: [u64; CC_TIMER_SLOTS],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Event {
    ev_type: u8,
    ev_subtype: u8,
    port_num: u8,
    flags: u8,
    flow_tag: u32,
    sn: u32,
    timestamp: u32,
    first_timestamp: u32,
    first_sn: u32,
    num_coalesced: u16,
    sent_32bytes: u16,
    sent_pkts: u16,
    reserved: u16,
    flow_qpn: u32,
    rtt_req_send_ts: u32,
    rtt_req_recv_ts: u32,
    rtt_resp_send_ts: u32,
    now_ps: u64,
    line_rate_bps: u64,
    cur_rate_bps: u64,
    rtt_ps: u64,
    bytes: u64,
    bytes_in_flight: u64,
    udp_sport: u32,
    hops: u32,
}

type CallFn = unsafe extern "C" fn(*mut Ctxt, *mut Event, *const Attr, *mut Results) -> c_int;
type InitFn = unsafe extern "C" fn(*const c_char, *mut u32) -> c_int;
type InfoFn = unsafe extern "C" fn(u32, *mut *const c_char, *mut u32, *mut u32, *mut u32) -> c_int;

/// A parameter the controller registered in `doca_pcc_dev_user_init`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CParam {
    pub name: String,
    pub default: u32,
    pub min: u32,
    pub max: u32,
}

/// One loaded copy of a controller library.
pub struct CLibrary {
    /// The controller's name in messages (`name`, or the library's file stem).
    pub label: String,
    handle: *mut c_void,
    call: CallFn,
    fini: unsafe extern "C" fn(),
    set_param: unsafe extern "C" fn(u32, u32),
    /// Event types the controller turned off (bit 1 << type).
    disabled: u32,
    pub params: Vec<CParam>,
    /// The private copy this instance was loaded from.
    copy: std::path::PathBuf,
}

// The library runs on the simulation's one thread; the handle is only
// shared so every QP's controller can reach it.
unsafe impl Send for CLibrary {}
unsafe impl Sync for CLibrary {}

fn signal_name(sig: c_int) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV (invalid memory access)".into(),
        libc::SIGBUS => "SIGBUS (bus error)".into(),
        libc::SIGFPE => "SIGFPE (arithmetic fault, e.g. an integer division by zero)".into(),
        libc::SIGILL => "SIGILL (illegal instruction)".into(),
        s => format!("signal {s}"),
    }
}

fn dlerror() -> String {
    // SAFETY: dlerror returns a thread-local C string or null.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

impl CLibrary {
    /// Load a private copy of `path`, check it carries rdmalab's runtime, and
    /// run the controller's `doca_pcc_dev_user_init`.
    pub fn load(path: &str, label: &str) -> Result<CLibrary, String> {
        static COPIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let copy = std::env::temp_dir().join(format!(
            "rdmalab-cc-{}-{n}-{}.so",
            std::process::id(),
            label.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        ));
        std::fs::copy(path, &copy).map_err(|e| format!("cannot read `{path}`: {e}"))?;
        let cpath = CString::new(copy.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: dlopen of a file we just wrote; symbols are checked below.
        let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        let _ = std::fs::remove_file(&copy);
        if handle.is_null() {
            // dlerror names the private copy; the user knows the file given.
            let err = dlerror().replace(&*copy.to_string_lossy(), path);
            // A library built with plain `cc -shared` that calls the DOCA
            // device API fails here, on the runtime's symbols, before the
            // check below for the runtime could say how to build it.
            let runtime = ["undefined symbol: doca_pcc_", "undefined symbol: rdmalab_"];
            let hint = if runtime.iter().any(|r| err.contains(r)) {
                "; it calls rdmalab's C runtime without linking it: build it with `rdmalab cc build` (it links the runtime)"
            } else {
                ""
            };
            return Err(format!("cannot load `{path}`: {err}{hint}"));
        }
        let sym = |name: &str| -> Option<*mut c_void> {
            let c = CString::new(name).ok()?;
            // SAFETY: handle is a live dlopen handle.
            let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
            (!p.is_null()).then_some(p)
        };
        let missing = |what: &str| {
            // SAFETY: closing the handle we opened.
            unsafe { libc::dlclose(handle) };
            Err(format!(
                "`{path}` has no `{what}`: build it with `rdmalab cc build` (it links rdmalab's C runtime) and define doca_pcc_dev_user_algo"
            ))
        };
        let Some(version) = sym("rdmalab_rt_abi_version") else {
            return missing("rdmalab_rt_abi_version");
        };
        if sym("doca_pcc_dev_user_algo").is_none() {
            return missing("doca_pcc_dev_user_algo");
        }
        let (Some(call), Some(init), Some(fini), Some(count), Some(info), Some(set)) = (
            sym("rdmalab_rt_call"),
            sym("rdmalab_rt_init"),
            sym("rdmalab_rt_fini"),
            sym("rdmalab_rt_param_count"),
            sym("rdmalab_rt_param_info"),
            sym("rdmalab_rt_set_param"),
        ) else {
            return missing("rdmalab_rt_call");
        };
        // SAFETY: the symbols are the runtime's, with the signatures of rdmalab_cc_runtime.c.
        unsafe {
            let version: unsafe extern "C" fn() -> c_int = std::mem::transmute(version);
            let v = version();
            if v != ABI_VERSION {
                libc::dlclose(handle);
                return Err(format!(
                    "`{path}` was built for C controller ABI {v}; this rdmalab speaks {ABI_VERSION}: rebuild it"
                ));
            }
            let mut lib = CLibrary {
                label: label.to_string(),
                handle,
                call: std::mem::transmute::<*mut c_void, CallFn>(call),
                fini: std::mem::transmute::<*mut c_void, unsafe extern "C" fn()>(fini),
                set_param: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(u32, u32)>(set),
                disabled: 0,
                params: Vec::new(),
                copy,
            };
            let init: InitFn = std::mem::transmute(init);
            let clabel = CString::new(label).unwrap_or_default();
            // RX events are off unless the controller clears their bit.
            let mut disabled: u32 = 1 << ev::RX;
            let sig = init(clabel.as_ptr(), &mut disabled);
            if sig != 0 {
                return Err(format!(
                    "C controller `{label}` raised {} in doca_pcc_dev_user_init",
                    signal_name(sig)
                ));
            }
            lib.disabled = disabled;
            // Libraries built before rdmalab_rt_param_error existed lack it.
            if let Some(err) = sym("rdmalab_rt_param_error") {
                let err: unsafe extern "C" fn() -> *const c_char = std::mem::transmute(err);
                let text = err();
                if !text.is_null() && *text != 0 {
                    return Err(format!(
                        "C controller `{label}`: {}",
                        CStr::from_ptr(text).to_string_lossy()
                    ));
                }
            }
            let count: unsafe extern "C" fn() -> u32 = std::mem::transmute(count);
            let info: InfoFn = std::mem::transmute(info);
            for i in 0..count() {
                let (mut name, mut d, mut lo, mut hi) = (std::ptr::null(), 0, 0, 0);
                if info(i, &mut name, &mut d, &mut lo, &mut hi) == 1 && !name.is_null() {
                    let name = CStr::from_ptr(name).to_string_lossy().into_owned();
                    lib.params.push(CParam {
                        name,
                        default: d,
                        min: lo,
                        max: hi,
                    });
                } else {
                    lib.params.push(CParam {
                        name: String::new(),
                        default: 0,
                        min: 0,
                        max: 0,
                    });
                }
            }
            // cc.params names a parameter case-insensitively: of two alike,
            // only the first could ever be set.
            for (i, p) in lib.params.iter().enumerate() {
                if let Some(j) = lib.params[..i]
                    .iter()
                    .position(|q| !p.name.is_empty() && q.name.eq_ignore_ascii_case(&p.name))
                {
                    return Err(format!(
                        "C controller `{label}` registers parameters {j} (`{}`) and {i} (`{}`) under one name; \
                         cc.params could set only the first: give each a name of its own",
                        lib.params[j].name, p.name
                    ));
                }
            }
            Ok(lib)
        }
    }

    /// Set registered parameter `name` to `value`; an unknown name or a value
    /// out of its registered range is refused.
    pub fn set_param(&self, name: &str, value: u64) -> Result<(), String> {
        let Some((i, p)) = self
            .params
            .iter()
            .enumerate()
            .find(|(_, p)| !p.name.is_empty() && p.name.eq_ignore_ascii_case(name))
        else {
            let names: Vec<&str> = self
                .params
                .iter()
                .map(|p| p.name.as_str())
                .filter(|n| !n.is_empty())
                .collect();
            return Err(format!(
                "unknown parameter of C controller `{}`; allowed: {}",
                self.label,
                if names.is_empty() {
                    "none (it registers none with doca_pcc_dev_algo_init_param)".to_string()
                } else {
                    names.join(", ")
                }
            ));
        };
        if value < p.min as u64 || value > p.max as u64 {
            return Err(format!(
                "allowed: {} to {} (as doca_pcc_dev_algo_init_param registered it)",
                p.min, p.max
            ));
        }
        // SAFETY: the runtime's setter, index in range.
        unsafe { (self.set_param)(i as u32, value as u32) };
        Ok(())
    }

    fn mask(&self) -> EventMask {
        let on = |t: u8| self.disabled & (1 << t) == 0;
        let mut m = 0;
        for (t, bit) in [
            (ev::CNP, EventMask::CNP),
            (ev::TX, EventMask::TX),
            (ev::ACK, EventMask::ACK),
            (ev::NACK, EventMask::NACK),
            (ev::RTT, EventMask::RTT),
            (ev::TIMEOUT, EventMask::TIMEOUT),
            (ev::RX, EventMask::RX),
        ] {
            if on(t) {
                m |= bit;
            }
        }
        EventMask(m)
    }
}

impl Drop for CLibrary {
    fn drop(&mut self) {
        // SAFETY: the handlers go back before the code they point to is unmapped.
        unsafe {
            (self.fini)();
            libc::dlclose(self.handle);
        }
        let _ = std::fs::remove_file(&self.copy);
    }
}

/// Two configurations are equal when they load the same instance.
impl PartialEq for CLibrary {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl std::fmt::Debug for CLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CLibrary({})", self.label)
    }
}

/// One QP's C controller: its 128-byte context and the library it calls.
pub struct CController {
    lib: Arc<CLibrary>,
    ctxt: Ctxt,
    /// Events handed to the controller so far (DOCA's serial number).
    sn: u32,
}

impl CController {
    pub fn new(lib: Arc<CLibrary>) -> Self {
        CController {
            lib,
            ctxt: Ctxt {
                data: [0; CTXT_WORDS],
            },
            sn: 0,
        }
    }

    fn event(&mut self, ty: u8, ctx: &CcContext) -> Event {
        self.sn = self.sn.wrapping_add(1);
        let ns = (ctx.now.ps() / 1000) as u32;
        Event {
            ev_type: ty,
            flow_tag: ctx.qp,
            flow_qpn: ctx.qp & 0xFF_FFFF,
            sn: self.sn,
            first_sn: self.sn,
            timestamp: ns,
            first_timestamp: ns,
            num_coalesced: ctx.coalesced.min(u16::MAX as u32) as u16,
            now_ps: ctx.now.ps(),
            line_rate_bps: ctx.line_rate.bps(),
            cur_rate_bps: ctx.rate.bps(),
            bytes_in_flight: ctx.bytes_in_flight,
            udp_sport: ctx.udp_sport as u32,
            ..Default::default()
        }
    }

    /// Run the controller on event `e` and turn its results into actions.
    fn run(&mut self, mut e: Event, ctx: &mut CcContext) -> Result<(), String> {
        let mut r = Results {
            rate: RATE_UNCHANGED,
            ..Default::default()
        };
        let attr = Attr::default();
        // SAFETY: the runtime's guarded call with pointers to live, repr(C) values.
        let sig = unsafe { (self.lib.call)(&mut self.ctxt, &mut e, &attr, &mut r) };
        let name = &self.lib.label;
        if sig != 0 {
            return Err(format!(
                "C controller `{name}` raised {} in doca_pcc_dev_user_algo",
                signal_name(sig)
            ));
        }
        let line = ctx.line_rate;
        if r.rate_bps != 0 {
            if r.rate_bps > line.bps() {
                return Err(format!(
                    "C controller `{name}` set rdmalab_rate_bps = {} above the line rate {line}",
                    r.rate_bps
                ));
            }
            ctx.set_rate(Rate(r.rate_bps));
        } else if r.rate != RATE_UNCHANGED {
            if r.rate == 0 || r.rate > MAX_RATE {
                return Err(format!(
                    "C controller `{name}` set rate = {} (allowed: 1 to {MAX_RATE}, a 20-bit fixed-point fraction of line rate)",
                    r.rate
                ));
            }
            let bps = (line.bps() as u128 * r.rate as u128 / MAX_RATE as u128) as u64;
            ctx.set_rate(Rate(bps.max(1)));
        }
        if r.rtt_req != 0 {
            ctx.request_probe(ctx.udp_sport);
        }
        match r.window_op {
            0 => {}
            1 => ctx.set_window(Some(r.window_bytes)),
            2 => ctx.set_window(None),
            op => {
                return Err(format!(
                    "C controller `{name}` set rdmalab_window_op = {op} (allowed: 0 keep, 1 set, 2 remove)"
                ))
            }
        }
        for (slot, (&op, &at)) in r.timer_op.iter().zip(&r.timer_ps).enumerate() {
            match op {
                0 => {}
                1 if at >= ctx.now.ps() => ctx.set_timer(slot, Time(at)),
                1 => {
                    return Err(format!(
                        "C controller `{name}` armed timer {slot} at {at} ps, before now ({} ps)",
                        ctx.now.ps()
                    ))
                }
                2 => ctx.cancel_timer(slot),
                op => {
                    return Err(format!(
                        "C controller `{name}` set rdmalab_timer_op[{slot}] = {op} (allowed: 0 keep, 1 arm, 2 cancel)"
                    ))
                }
            }
        }
        Ok(())
    }

    pub fn try_on_start(&mut self, ctx: &mut CcContext) -> Result<(), String> {
        let e = self.event(ev::START, ctx);
        self.run(e, ctx)
    }

    pub fn try_on_event(&mut self, event: &CcEvent, ctx: &mut CcContext) -> Result<(), String> {
        let e = match *event {
            CcEvent::Cnp => self.event(ev::CNP, ctx),
            CcEvent::Tx { bytes, packets } => {
                let mut e = self.event(ev::TX, ctx);
                e.sent_32bytes = bytes.div_ceil(32).min(u16::MAX as u32) as u16;
                e.sent_pkts = packets.min(u16::MAX as u32) as u16;
                e.bytes = bytes as u64;
                e
            }
            CcEvent::Ack {
                acked_bytes,
                rtt,
                ece,
                hops,
                ..
            } => {
                let mut e = self.event(ev::ACK, ctx);
                e.rtt_ps = rtt.ps();
                e.bytes = acked_bytes;
                e.hops = hops as u32;
                if ece {
                    e.ev_attr_flags(ev::FLAG_ECN);
                }
                e
            }
            CcEvent::Nack { .. } => {
                let mut e = self.event(ev::NACK, ctx);
                e.ev_subtype = ev::NACK_OOS;
                e
            }
            CcEvent::Rtt {
                udp_sport,
                sent,
                rtt,
                lost,
            } => {
                let mut e = self.event(ev::RTT, ctx);
                e.rtt_req_send_ts = (sent.ps() / 1000) as u32;
                e.rtt_ps = rtt.ps();
                e.udp_sport = udp_sport as u32;
                if lost {
                    e.ev_attr_flags(ev::FLAG_LOST);
                }
                e
            }
            CcEvent::Timer { slot } => {
                let mut e = self.event(ev::TIMER, ctx);
                e.ev_subtype = slot;
                e
            }
            CcEvent::Timeout => self.event(ev::TIMEOUT, ctx),
            CcEvent::Rx { bytes, ce, .. } => {
                let mut e = self.event(ev::RX, ctx);
                e.bytes = bytes as u64;
                if ce {
                    e.ev_attr_flags(ev::FLAG_ECN);
                }
                e
            }
            // Peer messages, hints and host reports have no C form yet.
            CcEvent::Peer { .. } | CcEvent::Hint { .. } | CcEvent::Host { .. } => return Ok(()),
        };
        self.run(e, ctx)
    }
}

impl Event {
    fn ev_attr_flags(&mut self, f: u8) {
        self.flags |= f;
    }
}

impl Controller for CController {
    fn name(&self) -> &str {
        &self.lib.label
    }
    fn subscriptions(&self) -> EventMask {
        self.lib.mask()
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        // Cc::on_event calls try_on_event, which reports errors.
        let _ = self.try_on_event(ev, ctx);
    }
}
