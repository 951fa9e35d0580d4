//! Python bindings: a thin layer that turns scenarios (as JSON text) into
//! runs, reports progress, and writes the core's tables to files. Nothing in
//! the core depends on this crate.

use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use rdmalab_core::algo::CcConfig;
use rdmalab_core::control::{
    Actions, CcContext, CcEvent, Controller, EventMask, HintKind, CC_TIMER_SLOTS,
};
use rdmalab_core::parallel::{ParallelRun, Step};
use rdmalab_core::scenario::Scenario;
use rdmalab_core::time::{Rate, Time};
use rdmalab_core::world::{Progress, World};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "A scenario was refused before the run; the message lists every problem."
);
create_exception!(
    _core,
    RunError,
    PyRuntimeError,
    "A run ended early with an error (event cap, failing controller)."
);

fn parse(json: &str) -> PyResult<Scenario> {
    Scenario::from_json_str(json).map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// Check a scenario without running it. Returns a short description; with
/// `quantities`, also `quantities`: `(key, kind, value)` for every quantity
/// written with a unit, in its base unit (bit/s, ps, bytes), as the core
/// read it.
#[pyfunction]
#[pyo3(signature = (json, quantities = false))]
fn validate(py: Python<'_>, json: &str, quantities: bool) -> PyResult<PyObject> {
    let d = PyDict::new(py);
    let s = if quantities {
        let (s, q) = Scenario::from_json_str_with_quantities(json)
            .map_err(|e| ScenarioError::new_err(e.to_string()))?;
        let q: Vec<(String, &str, u64)> = q.into_iter().map(|q| (q.key, q.kind, q.value)).collect();
        d.set_item("quantities", q)?;
        s
    } else {
        parse(json)?
    };
    d.set_item("name", &s.name)?;
    d.set_item("nodes", s.topology.nodes.len())?;
    d.set_item("hosts", s.topology.host_count())?;
    d.set_item("links", s.topology.links.len())?;
    d.set_item("flows", s.workload.flows.len())?;
    d.set_item("apps", s.workload.apps.len())?;
    d.set_item("cc", s.cc.name())?;
    d.set_item("duration_ps", s.run.stop_at.ps())?;
    let (late_flows, late_apps) = s.workload.late_starts(s.run.stop_at);
    d.set_item("late_flows", late_flows)?;
    d.set_item("late_apps", late_apps)?;
    // (key, text, whether it holds only because the core sees no
    // controller: a Python controller, which the core is given as `none`,
    // lifts it).
    let warnings: Vec<(String, String, bool)> = s
        .warnings
        .iter()
        .map(|w| (w.key.clone(), w.to_string(), w.without_cc))
        .collect();
    d.set_item("warnings", warnings)?;
    // Building catches what only a built world can tell (e.g. multi-homed hosts).
    s.build().map_err(ScenarioError::new_err)?;
    Ok(d.into())
}

/// Stop the process on a second interrupt, even while native code runs.
///
/// Python handles SIGINT (and the CLI's SIGTERM) between bytecodes only, so
/// a C controller stuck in a loop never returns to let it: Ctrl-C would set
/// a flag that nothing reads. Python's own C-level handler still writes the
/// signal's number to the wakeup fd (`signal.set_wakeup_fd`) at once; `fd`
/// is the read end of that pipe. A thread that holds no GIL reads it: a
/// second SIGINT or SIGTERM writes `last_words` to standard error and ends
/// the process with status 130, saving nothing. `hint` is written if the
/// process still runs `hint_after_ms` after the first one.
/// Every key a model declares, as the reference docs list it: a list of
/// dicts with `section`, `name`, `unit`, `default`, `allowed`, `meaning`.
#[pyfunction]
fn scenario_keys(py: Python<'_>) -> PyResult<Vec<PyObject>> {
    let mut out = Vec::new();
    for (section, keys) in rdmalab_core::scenario::SECTIONS {
        for k in *keys {
            let d = PyDict::new(py);
            d.set_item("section", *section)?;
            d.set_item("name", k.name)?;
            d.set_item("unit", k.unit)?;
            d.set_item("default", k.default)?;
            d.set_item("allowed", k.allowed_text())?;
            d.set_item("meaning", k.meaning)?;
            out.push(d.into_any().unbind());
        }
    }
    Ok(out)
}

#[pyfunction]
fn watch_interrupts(fd: i32, hint: String, last_words: String, hint_after_ms: u64) -> PyResult<()> {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    // SAFETY: the caller hands over the read end of a pipe it created and
    // never uses again; the thread below owns it from here on.
    let mut pipe = unsafe { std::fs::File::from_raw_fd(fd) };
    fn say(text: &str) {
        // Straight to fd 2: the stuck thread may hold any lock, libc's or Rust's.
        // SAFETY: writes `text.len()` bytes from a live buffer.
        unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
    }
    std::thread::Builder::new()
        .name("rdmalab-interrupts".into())
        .spawn(move || {
            let mut seen = 0u32;
            let mut buf = [0u8; 64];
            loop {
                let n = match pipe.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                };
                for &sig in &buf[..n] {
                    if i32::from(sig) != libc::SIGINT && i32::from(sig) != libc::SIGTERM {
                        continue;
                    }
                    seen += 1;
                    if seen == 1 {
                        let hint = hint.clone();
                        std::thread::spawn(move || {
                            std::thread::sleep(std::time::Duration::from_millis(hint_after_ms));
                            say(&hint);
                        });
                    } else {
                        say(&last_words);
                        // _exit, not exit: no atexit handlers or stdio flushes,
                        // which could wait on a lock the stuck thread holds.
                        // SAFETY: ends the process; nothing runs after it.
                        unsafe { libc::_exit(130) };
                    }
                }
            }
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the interrupt watcher: {e}")))?;
    Ok(())
}

/// The block list under `workload.flows` of a scenario's YAML text, read in
/// Rust (see `rdmalab_core::scenario::yaml_flows`): `(value_start, end,
/// flows)` with offsets in characters, as Python slices text, or `None` when
/// PyYAML must read the file (anything outside the fast path's subset).
#[pyfunction]
fn read_yaml_flows(py: Python<'_>, text: &str) -> PyResult<Option<(usize, usize, PyObject)>> {
    use rdmalab_core::scenario::yaml_flows::{read_flow_block, FlowScalar};
    use std::collections::HashMap;

    let Some(block) = read_flow_block(text) else {
        return Ok(None);
    };
    let chars = |byte: usize| {
        if text.is_ascii() {
            byte
        } else {
            text[..byte].chars().count()
        }
    };
    // One Python string per distinct key, shared by every entry.
    let mut keys: HashMap<&str, Bound<'_, PyString>> = HashMap::new();
    let mut flows = Vec::with_capacity(block.entries.len());
    for entry in &block.entries {
        let d = PyDict::new(py);
        for (k, v) in entry {
            let key = keys.entry(k).or_insert_with(|| PyString::new(py, k));
            match v {
                FlowScalar::Str(s) => d.set_item(&*key, *s)?,
                FlowScalar::Int(i) => d.set_item(&*key, *i)?,
                FlowScalar::Float(f) => d.set_item(&*key, *f)?,
            }
        }
        flows.push(d);
    }
    let list = PyList::new(py, flows)?;
    Ok(Some((chars(block.value_start), chars(block.end), list.into_any().unbind())))
}

/// A flow file of the ns-3 HPCC simulator read in Rust (see
/// `rdmalab_core::scenario::ns3_flows`), or `None` when the front end must
/// read it with its Python reference (text that is not ASCII, an integer
/// beyond 64 bits or longer than 640 characters). `where_` starts each
/// message; `switches` are node ids below `nodes`.
#[pyfunction]
fn read_ns3_flows(
    text: &str,
    where_: &str,
    nodes: usize,
    switches: Vec<usize>,
) -> Option<Ns3Flows> {
    let mut is_switch = vec![false; nodes];
    for s in switches {
        if let Some(x) = is_switch.get_mut(s) {
            *x = true;
        }
    }
    rdmalab_core::scenario::ns3_flows::read_flow_file(text, where_, &is_switch)
        .map(|file| Ns3Flows { file })
}

/// ns-3's `Seconds(text)` in ns as the core reads a flow's start: `None`
/// where the front end's `seconds_to_ns` raises ValueError. ASCII only (the
/// core gives up on other text; Python reads other scripts' digits).
#[pyfunction]
fn ns3_seconds_to_ns(text: &str) -> PyResult<Option<u64>> {
    if !text.is_ascii() {
        return Err(PyValueError::new_err("ns3_seconds_to_ns: ASCII text only"));
    }
    Ok(rdmalab_core::scenario::ns3_flows::seconds_to_ns(text))
}

/// The link lines after the links an ns-3 HPCC topology file counts, as
/// (how many, the first one's line number, the first one, the count of
/// links), or `None` when there are none: the core's
/// `Topology::hpcc_file_links_past_count`, which its scenario check warns
/// with, for `rdmalab hpcc convert`'s warning (one rule, in one place).
#[pyfunction]
fn hpcc_links_past_count(text: &str) -> Option<(usize, usize, String, u64)> {
    rdmalab_core::net::topology::Topology::hpcc_file_links_past_count(text)
        .map(|p| (p.lines, p.first_line, p.first, p.counted))
}

/// The flows of an ns-3 flow file, kept in Rust until they become scenario
/// flows: the converter's checks (one pg, late flows, order) ask it
/// questions instead of walking 100,000 Python dicts.
#[pyclass(name = "Ns3Flows")]
struct Ns3Flows {
    file: rdmalab_core::scenario::ns3_flows::FlowFile,
}

#[pymethods]
impl Ns3Flows {
    /// A message per bad line, in file order.
    #[getter]
    fn problems(&self) -> Vec<String> {
        self.file.problems.clone()
    }

    fn __len__(&self) -> usize {
        self.file.flows.len()
    }

    /// `(line, pg)` of the first flow.
    fn first_pg(&self) -> Option<(usize, u8)> {
        self.file.flows.first().map(|f| (f.line, f.pg))
    }

    /// `(line, pg)` of the first flow whose pg differs from the first's.
    fn first_other_pg(&self) -> Option<(usize, u8)> {
        self.file.first_other_pg().map(|f| (f.line, f.pg))
    }

    /// Drop the flows starting at or after `stop_ns`: `(how many, the first one's line)`.
    fn drop_late(&mut self, stop_ns: u64) -> (usize, Option<usize>) {
        self.file.drop_late(stop_ns)
    }

    fn sorted_by_start(&self) -> bool {
        self.file.sorted_by_start()
    }

    /// `(non-blank lines after the flows the first line counts, the first
    /// one's line number, the count)`, as the front end's `unread_flow_lines`
    /// gives them, from the reader's own pass (that second pass in Python
    /// took 0.07 s on 100,000 flows).
    fn unread_lines(&self) -> (usize, Option<usize>, u64) {
        (self.file.unread.0, self.file.unread.1, self.file.count)
    }

    /// The flows as a native scenario's `workload.flows`, as the front end's
    /// `_flow` writes each: `{src: h1, dst: h2, size: 1000B, start: 2s}`,
    /// and `dport` unless it is ns-3's 100.
    fn scenario_flows(&self, py: Python<'_>) -> PyResult<PyObject> {
        use pyo3::intern;
        use rdmalab_core::scenario::ns3_flows::ps_text;
        // One name string per host, shared by its flows.
        let mut names: Vec<Option<Bound<'_, PyString>>> = Vec::new();
        let mut name = |n: u32| {
            let i = n as usize;
            if names.len() <= i {
                names.resize(i + 1, None);
            }
            names[i]
                .get_or_insert_with(|| PyString::new(py, &format!("h{n}")))
                .clone()
        };
        let list = PyList::empty(py);
        for f in &self.file.flows {
            let d = PyDict::new(py);
            d.set_item(intern!(py, "src"), name(f.src))?;
            d.set_item(intern!(py, "dst"), name(f.dst))?;
            d.set_item(intern!(py, "size"), format!("{}B", f.size))?;
            d.set_item(intern!(py, "start"), ps_text(u128::from(f.start_ns) * 1000))?;
            if f.dport != 100 {
                d.set_item(intern!(py, "dport"), f.dport)?;
            }
            list.append(d)?;
        }
        Ok(list.into_any().unbind())
    }
}

/// Write `csv_path` (a table the core wrote) as the Parquet file
/// `parquet_path` with `columns` (name, type name) in that order. A cell
/// that does not read as its column's type is a ValueError naming the file,
/// line, column and value; an unknown type name names the allowed ones.
#[pyfunction]
fn csv_to_parquet(
    csv_path: PathBuf,
    parquet_path: PathBuf,
    columns: Vec<(String, String)>,
) -> PyResult<()> {
    use rdmalab_core::record::parquet::{self, ColumnType};
    let mut typed = Vec::with_capacity(columns.len());
    for (name, ty) in &columns {
        let Some(t) = ColumnType::from_name(ty) else {
            let allowed: Vec<&str> = ColumnType::NAMES.iter().map(|(n, _)| *n).collect();
            return Err(PyValueError::new_err(format!(
                "column `{name}`: type `{ty}` is not one the Parquet writer knows; allowed: {}",
                allowed.join(", ")
            )));
        };
        typed.push((name.as_str(), t));
    }
    let csv = std::fs::read_to_string(&csv_path)
        .map_err(|e| PyOSError::new_err(format!("cannot read {}: {e}", csv_path.display())))?;
    let what = csv_path.display().to_string();
    let created_by = format!("rdmalab version {}", env!("CARGO_PKG_VERSION"));
    let bytes = parquet::csv_to_parquet(&csv, &typed, &what, &created_by)
        .map_err(|e| PyValueError::new_err(e.0))?;
    std::fs::write(&parquet_path, bytes)
        .map_err(|e| PyOSError::new_err(format!("cannot write {}: {e}", parquet_path.display())))
}

/// Compact JSON (`json.dumps(..., separators=(",", ":"))`) laid out as
/// `json.dumps(..., indent=2)` lays it out, byte for byte. Python's encoder
/// falls back to pure Python when asked to indent: `scenario.json` of
/// 100,000 flows took seconds to write.
#[pyfunction]
fn indent_json(compact: &str) -> String {
    let b = compact.as_bytes();
    let mut out = String::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                // A string, copied as it is; `\` escapes the next byte.
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                out.push_str(&compact[start..(i + 1).min(b.len())]);
            }
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                out.push(open as char);
                if b.get(i + 1) == Some(&close) {
                    out.push(close as char);
                    i += 1;
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            close @ (b'}' | b']') => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(close as char);
            }
            b',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            b':' => out.push_str(": "),
            _ => {
                // A number, `true`, `false`, `null`, `NaN` or `Infinity`: ASCII up to the next structural byte.
                let start = i;
                while i + 1 < b.len() && !b"{}[],:\"".contains(&b[i + 1]) {
                    i += 1;
                }
                out.push_str(&compact[start..=i]);
            }
        }
        i += 1;
    }
    out
}

/// Whether `value` passes the scenario loader's value check
/// (`rdmalab.scenario._check_finite`): at most `max_values` values as the
/// check walks them (a shared mapping counted each time it is reached),
/// none deeper than `max_depth`, no NaN or infinity. It names no problem:
/// when there is one, the walk in Python runs and names it. Walking 100,000
/// flows in Python took most of a second.
#[pyfunction]
fn values_ok(value: &Bound<'_, PyAny>, max_values: i64, max_depth: usize) -> bool {
    fn walk(v: &Bound<'_, PyAny>, depth: usize, budget: &mut i64, max_depth: usize) -> bool {
        *budget -= 1;
        if *budget < 0 || depth > max_depth {
            return false;
        }
        if let Ok(f) = v.downcast::<PyFloat>() {
            return f.value().is_finite();
        }
        // JSON would carry an integer beyond 64 bits to the core as a float,
        // and its message would show `1.8446744073709552e+19`, not what was written.
        if let Ok(i) = v.downcast::<PyInt>() {
            return i.extract::<i64>().is_ok() || i.extract::<u64>().is_ok();
        }
        if let Ok(d) = v.downcast::<PyDict>() {
            return d.iter().all(|(_, x)| walk(&x, depth + 1, budget, max_depth));
        }
        if let Ok(l) = v.downcast::<PyList>() {
            return l.iter().all(|x| walk(&x, depth + 1, budget, max_depth));
        }
        true
    }
    let mut budget = max_values;
    walk(value, 0, &mut budget, max_depth)
}

/// Whether `flows` is a list of dicts whose keys are `str` and whose values
/// are `str` or an `int` within 64 bits, those very types (a `bool` is an
/// `int` subclass): the flows `rdmalab hpcc convert` made, untouched, which
/// the scenario loader may take without copying or checking them value by
/// value (`Conversion.load`). Checking them in Python took 0.15 s for
/// 100,000 flows.
#[pyfunction]
fn plain_flows(flows: &Bound<'_, PyAny>) -> bool {
    let Ok(list) = flows.downcast_exact::<PyList>() else {
        return false;
    };
    list.iter().all(|f| {
        f.downcast_exact::<PyDict>().is_ok_and(|d| {
            d.iter().all(|(k, v)| {
                k.is_exact_instance_of::<PyString>()
                    && (v.is_exact_instance_of::<PyString>()
                        || (v.is_exact_instance_of::<PyInt>()
                            && (v.extract::<i64>().is_ok() || v.extract::<u64>().is_ok())))
            })
        })
    })
}

/// What a Python controller sees of an event.
#[pyclass(unsendable, name = "Event")]
struct PyEvent {
    /// `TX`, `ACK`, `NACK`, `CNP`, `TIMER` or `TIMEOUT`.
    #[pyo3(get)]
    kind: &'static str,
    /// TX: payload bytes sent (accumulated if coalesced).
    #[pyo3(get)]
    bytes: u64,
    #[pyo3(get)]
    packets: u32,
    /// ACK: newly acknowledged bytes, stream offset acknowledged through, RTT, ECN echo, hops.
    #[pyo3(get)]
    acked_bytes: u64,
    #[pyo3(get)]
    acked_through: u64,
    #[pyo3(get)]
    rtt_ps: u64,
    #[pyo3(get)]
    ece: bool,
    #[pyo3(get)]
    hops: u8,
    /// NACK: the PSN the receiver expects.
    #[pyo3(get)]
    expected_psn: u32,
    /// TIMER: the slot (0..3) that expired.
    #[pyo3(get)]
    slot: u8,
    /// RTT: the probed path (UDP source port) and whether the probe was lost.
    #[pyo3(get)]
    udp_sport: u16,
    #[pyo3(get)]
    lost: bool,
    /// RTT: when the probe left the NIC (ps).
    #[pyo3(get)]
    sent_ps: u64,
    /// RX: whether any of the received packets was ECN-marked.
    #[pyo3(get)]
    ce: bool,
    /// PEER: the 4 words the other end sent, and whether the sender sent them.
    #[pyo3(get)]
    words: Vec<u32>,
    #[pyo3(get)]
    to_receiver: bool,
    /// HINT: its name and value.
    #[pyo3(get)]
    hint: String,
    #[pyo3(get)]
    value: f64,
    /// HOST: PCIe utilisation and mean DMA latency, QPs with data, port utilisation.
    #[pyo3(get)]
    pcie_utilization: f64,
    #[pyo3(get)]
    pcie_latency_ps: u64,
    #[pyo3(get)]
    active_qps: u32,
    #[pyo3(get)]
    port_utilization: f64,
}

/// What a Python controller may read, and where it records actions.
#[pyclass(unsendable, name = "Context")]
struct PyContext {
    #[pyo3(get)]
    now_ps: u64,
    #[pyo3(get)]
    line_rate_bps: u64,
    #[pyo3(get)]
    rate_bps: u64,
    #[pyo3(get)]
    bytes_in_flight: u64,
    #[pyo3(get)]
    snd_nxt_bytes: u64,
    #[pyo3(get)]
    base_rtt_ps: u64,
    #[pyo3(get)]
    path_hops: u8,
    #[pyo3(get)]
    mtu: u32,
    #[pyo3(get)]
    coalesced: u32,
    /// The event happened at the QP's data receiver (RX, or a message from the sender).
    #[pyo3(get)]
    at_receiver: bool,
    /// The QP's id (a key for per-flow tables shared across QPs).
    #[pyo3(get)]
    qp: u32,
    /// The tenant that owns the QP (`workload.tenants`), as a number the
    /// QPs of one tenant share, or None: what a per-tenant defence groups by.
    #[pyo3(get)]
    tenant: Option<u32>,
    /// Counters of the NIC where the event happened: its node id, QPs in its
    /// round robin, frame bytes sent and received, data payload received.
    #[pyo3(get)]
    nic_node: u32,
    #[pyo3(get)]
    nic_active_qps: u32,
    #[pyo3(get)]
    nic_tx_bytes: u64,
    #[pyo3(get)]
    nic_rx_bytes: u64,
    #[pyo3(get)]
    nic_rx_payload: u64,
    /// INT hops as (queue bytes, tx bytes, timestamp ps, link rate bps).
    #[pyo3(get)]
    int_hops: Vec<(u64, u64, u64, u64)>,
    /// The extensible CC header (`control.cc_header`) as 32-bit words: on an
    /// ACK what the data packet carried (echoed), on RX what it carries.
    #[pyo3(get)]
    cc_header: Vec<u32>,
    actions: Actions,
    /// Whether the call this context was made for is still running: after
    /// it, its actions are no longer read, so one recorded then is refused.
    live: bool,
}

/// A whole-number argument of a controller action, in `lo..=hi`. PyO3's own
/// conversion took `True` as 1 and said of a negative or too large number
/// only "out of range integral type conversion attempted", naming neither
/// the call, the value nor what is allowed; `call` names them.
fn whole(
    v: &Bound<'_, PyAny>,
    lo: u64,
    hi: u64,
    call: impl Fn() -> String,
    allowed: &str,
) -> PyResult<u64> {
    let bad = || PyValueError::new_err(format!("{}: allowed: {allowed}", call()));
    if v.is_instance_of::<PyBool>() {
        return Err(bad());
    }
    // i128: a negative number, or one past u64, is a value to name, not an OverflowError.
    let n: i128 = v.extract().map_err(|_| bad())?;
    if n < lo as i128 || n > hi as i128 {
        return Err(bad());
    }
    Ok(n as u64)
}

/// How a message shows an argument: Python's repr.
fn shown(v: &Bound<'_, PyAny>) -> String {
    v.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into())
}

const MAX_SHARE: u64 = 65536;

/// The error for a name a controller read that `obj` (an Event or a
/// Context) does not have: the public names it has, and the closest one.
fn no_attribute(obj: &Bound<'_, PyAny>, what: &str, name: &str) -> PyErr {
    let names: Vec<String> = obj
        .get_type()
        .dir()
        .map(|l| {
            l.iter()
                .filter_map(|n| n.extract::<String>().ok())
                .filter(|n| !n.starts_with('_'))
                .collect()
        })
        .unwrap_or_default();
    // A name it starts (`now` of `now_ps`), else one at most two edits away.
    let near = names
        .iter()
        .filter(|n| name.len() >= 3 && n.starts_with(name))
        .min_by_key(|n| n.len())
        .or_else(|| {
            names
                .iter()
                .map(|n| (edit_distance(n, name), n))
                .min()
                .filter(|(d, _)| *d <= 2)
                .map(|(_, n)| n)
        })
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    pyo3::exceptions::PyAttributeError::new_err(format!(
        "{what} has no attribute `{name}`{near}; it has: {}",
        names.join(", ")
    ))
}

/// Levenshtein distance, for the suggestion above.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + (ca != cb) as usize).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[pymethods]
impl PyEvent {
    /// Called only for a name the event lacks: say which it has.
    fn __getattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyObject> {
        Err(no_attribute(slf.as_any(), "an Event", name))
    }
}

impl PyContext {
    /// Refuse an action on the context of an earlier call (one a controller
    /// kept, say in on_start): it would be recorded where nothing reads it.
    fn live(&self, action: &str) -> PyResult<()> {
        if self.live {
            return Ok(());
        }
        Err(PyValueError::new_err(format!(
            "{action} on the ctx of an earlier call, whose actions are no longer read; \
             allowed: actions on the ctx passed to the current on_event or on_start"
        )))
    }
}

#[pymethods]
impl PyContext {
    /// Called only for a name the context lacks: say which it has.
    fn __getattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyObject> {
        Err(no_attribute(slf.as_any(), "a Context", name))
    }

    /// Set the QP's dequeue rate (bit/s): an int or a float (`rate * 0.5`),
    /// rounded to whole bit/s. The action's check then holds it to 1 bit/s
    /// to the line rate.
    fn set_rate(&mut self, bps: &Bound<'_, PyAny>) -> PyResult<()> {
        self.live("set_rate")?;
        // Not a bool: `True` would be 1 bit/s.
        let v: Option<f64> = if bps.is_instance_of::<PyBool>() {
            None
        } else {
            bps.extract().ok()
        };
        match v {
            // Past u64 the conversion below saturates, and the action's check
            // would name u64::MAX bit/s, not the rate given: refused here,
            // as given.
            Some(v) if v.is_finite() && v.round() >= u64::MAX as f64 => {
                Err(PyValueError::new_err(format!(
                    "set_rate({}): above the line rate {}; allowed: a finite rate in bit/s (an int or a float), 1 to the line rate",
                    shown(bps),
                    Rate(self.line_rate_bps)
                )))
            }
            // Below 0.5 it would round to 0 bit/s, refused later as a rate
            // the controller never gave.
            Some(v) if v.is_finite() && v > 0.0 && v.round() == 0.0 => Err(PyValueError::new_err(format!(
                "set_rate({}): rounds to 0 bit/s; allowed: a finite rate in bit/s (an int or a float), 1 to the line rate",
                shown(bps)
            ))),
            Some(v) if v.is_finite() && v >= 0.0 => {
                self.actions.rate = Some(Rate(v.round() as u64));
                Ok(())
            }
            _ => Err(PyValueError::new_err(format!(
                "set_rate({}): allowed: a finite rate in bit/s (an int or a float), 1 to the line rate",
                v.map_or_else(|| shown(bps), |v| v.to_string())
            ))),
        }
    }
    /// Set the window in bytes in flight; None removes it.
    #[pyo3(signature = (bytes=None))]
    fn set_window(&mut self, bytes: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.live("set_window")?;
        self.actions.window = Some(match bytes {
            None => None,
            Some(b) => Some(whole(
                b,
                1,
                u64::MAX,
                || format!("set_window({})", shown(b)),
                "a whole number of bytes, at least 1, or None (no window)",
            )?),
        });
        Ok(())
    }
    /// Arm timer `slot` (0..3) at absolute time `at_ps`, now or later.
    fn set_timer(&mut self, slot: &Bound<'_, PyAny>, at_ps: &Bound<'_, PyAny>) -> PyResult<()> {
        self.live("set_timer")?;
        let call = || format!("set_timer({}, {})", shown(slot), shown(at_ps));
        let slot = whole(
            slot,
            0,
            CC_TIMER_SLOTS as u64 - 1,
            call,
            &format!("timer slots 0 to {}", CC_TIMER_SLOTS - 1),
        )? as usize;
        // A time in the past would fire at once, again and again if the
        // handler re-arms it, until the event cap ends the run long after.
        let at = whole(
            at_ps,
            self.now_ps,
            u64::MAX,
            call,
            &format!(
                "an absolute time in ps, a whole number (an int), now ({} ps) or later",
                self.now_ps
            ),
        )?;
        self.actions.timers[slot] = Some(Some(Time(at)));
        Ok(())
    }
    /// Send an out-of-band RTT probe along the path of UDP source port `udp_sport`.
    fn request_probe(&mut self, udp_sport: &Bound<'_, PyAny>) -> PyResult<()> {
        self.live("request_probe")?;
        let sport = whole(
            udp_sport,
            0,
            u16::MAX as u64,
            || format!("request_probe({})", shown(udp_sport)),
            "a UDP source port, 0 to 65535",
        )? as u16;
        let a = &mut self.actions;
        if (a.probe_count as usize) < a.probes.len() {
            a.probes[a.probe_count as usize] = sport;
            a.probe_count += 1;
        }
        Ok(())
    }
    /// Move the QP's data onto the path of UDP source port `udp_sport`.
    fn set_path(&mut self, udp_sport: &Bound<'_, PyAny>) -> PyResult<()> {
        self.live("set_path")?;
        let sport = whole(
            udp_sport,
            0,
            u16::MAX as u64,
            || format!("set_path({})", shown(udp_sport)),
            "a UDP source port, 0 to 65535",
        )?;
        self.actions.path = Some(sport as u16);
        Ok(())
    }
    /// Send four 32-bit words to the QP's other end (an out-of-band message).
    fn send_oob(&mut self, words: &Bound<'_, PyAny>) -> PyResult<()> {
        self.live("send_oob")?;
        let call = || format!("send_oob({})", shown(words));
        let allowed = "a list of four whole numbers, each 0 to 4294967295";
        let items: Vec<Bound<'_, PyAny>> = match words.extract() {
            Ok(items) if !words.is_instance_of::<PyString>() => items,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "{}: allowed: {allowed}",
                    call()
                )))
            }
        };
        if items.len() != 4 {
            return Err(PyValueError::new_err(format!(
                "{}: allowed: {allowed}",
                call()
            )));
        }
        let mut out = [0u32; 4];
        for (o, w) in out.iter_mut().zip(&items) {
            *o = whole(w, 0, u32::MAX as u64, call, allowed)? as u32;
        }
        self.actions.oob = Some(out);
        Ok(())
    }
    /// The QP's share in the NIC's QP scheduler: packets per round-robin turn.
    fn set_share(&mut self, packets: &Bound<'_, PyAny>) -> PyResult<()> {
        self.live("set_share")?;
        let n = whole(
            packets,
            1,
            MAX_SHARE,
            || format!("set_share({})", shown(packets)),
            &format!("packets per turn, 1 to {MAX_SHARE}"),
        )?;
        self.actions.share = Some(n as u32);
        Ok(())
    }
    /// Move the QP's data to traffic class `class` (1 to 7).
    fn set_class(&mut self, class: &Bound<'_, PyAny>) -> PyResult<()> {
        self.live("set_class")?;
        let c = whole(
            class,
            1,
            7,
            || format!("set_class({})", shown(class)),
            "a traffic class, 1 to 7 (0 is the control class)",
        )?;
        self.actions.class = Some(c as u8);
        Ok(())
    }
    /// Write word `i` (0 to 15) of the QP's extensible CC header, carried by
    /// its data packets from the next one on and echoed on their ACKs.
    fn set_cc_header_word(
        &mut self,
        i: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.live("set_cc_header_word")?;
        let call = || format!("set_cc_header_word({}, {})", shown(i), shown(value));
        let max = rdmalab_core::control::MAX_CC_HEADER_WORDS;
        let i = whole(
            i,
            0,
            max as u64 - 1,
            call,
            &format!("words 0 to {}", max - 1),
        )? as usize;
        let value = whole(
            value,
            0,
            u32::MAX as u64,
            call,
            "a 32-bit word, 0 to 4294967295",
        )? as u32;
        self.actions.header_mask |= 1 << i;
        self.actions.header[i] = value;
        Ok(())
    }
    fn cancel_timer(&mut self, slot: &Bound<'_, PyAny>) -> PyResult<()> {
        self.live("cancel_timer")?;
        let slot = whole(
            slot,
            0,
            CC_TIMER_SLOTS as u64 - 1,
            || format!("cancel_timer({})", shown(slot)),
            &format!("timer slots 0 to {}", CC_TIMER_SLOTS - 1),
        )? as usize;
        self.actions.timers[slot] = Some(None);
        Ok(())
    }
}

/// A KeyboardInterrupt raised inside a Python controller (Ctrl-C while it
/// ran). The controller's guard turns any unwinding into a run error;
/// [`run_error`] gives this back instead, so the run ends as interrupted (the
/// command's exit 130, `end: interrupted`), not as a controller that failed.
static INTERRUPTED: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);

/// The Python exception for a run that ended with error `e`.
fn run_error(e: impl std::fmt::Display) -> PyErr {
    let interrupt = INTERRUPTED.lock().unwrap_or_else(|p| p.into_inner()).take();
    interrupt.unwrap_or_else(|| RunError::new_err(e.to_string()))
}

/// A controller written in Python, behind the same `Controller` trait as the
/// built-ins. Each callback takes the GIL and builds two small objects, so it
/// is much slower than Rust: for prototyping.
struct PyController {
    name: String,
    obj: PyObject,
    mask: EventMask,
}

impl PyController {
    fn context(ctx: &CcContext) -> PyContext {
        PyContext {
            now_ps: ctx.now.ps(),
            line_rate_bps: ctx.line_rate.bps(),
            rate_bps: ctx.rate.bps(),
            bytes_in_flight: ctx.bytes_in_flight,
            snd_nxt_bytes: ctx.snd_nxt_bytes,
            base_rtt_ps: ctx.path.base_rtt.ps(),
            path_hops: ctx.path.hops,
            mtu: ctx.path.mtu,
            coalesced: ctx.coalesced,
            at_receiver: ctx.at_receiver,
            qp: ctx.qp,
            tenant: (ctx.tenant != u32::MAX).then_some(ctx.tenant),
            nic_node: ctx.nic.node,
            nic_active_qps: ctx.nic.active_qps,
            nic_tx_bytes: ctx.nic.tx_bytes,
            nic_rx_bytes: ctx.nic.rx_bytes,
            nic_rx_payload: ctx.nic.rx_payload,
            int_hops: ctx
                .int
                .iter()
                .map(|h| {
                    (
                        h.qlen_bytes,
                        h.tx_bytes,
                        h.timestamp.ps(),
                        h.link_rate.bps(),
                    )
                })
                .collect(),
            cc_header: ctx.header.to_vec(),
            actions: Actions::default(),
            live: true,
        }
    }

    /// Call `method` and copy the recorded actions into `ctx`; a Python
    /// exception unwinds to the NIC's guard, which reports it as a run error
    /// naming the controller and the event.
    fn call(&self, method: &str, ev: Option<PyEvent>, ctx: &mut CcContext) {
        Python::with_gil(|py| {
            let pctx = Py::new(py, Self::context(ctx)).expect("context object");
            let result = match ev {
                Some(e) => {
                    let pev = Py::new(py, e).expect("event object");
                    self.obj.call_method1(py, method, (pev, pctx.clone_ref(py)))
                }
                None => {
                    if !self.obj.bind(py).hasattr(method).unwrap_or(false) {
                        return;
                    }
                    self.obj.call_method1(py, method, (pctx.clone_ref(py),))
                }
            };
            if let Err(e) = result {
                if e.is_instance_of::<PyKeyboardInterrupt>(py) {
                    // Ctrl-C while Python code runs arrives here; it is the
                    // user's interrupt, not the controller's failure.
                    *INTERRUPTED.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    std::panic::resume_unwind(Box::new(rdmalab_core::control::ControllerRaised(
                        "was interrupted".into(),
                    )));
                }
                let tb = e
                    .traceback(py)
                    .and_then(|t| t.format().ok())
                    .unwrap_or_default();
                // resume_unwind, not panic!: the NIC's guard turns it into a
                // run error, and no panic hook prints a Rust backtrace first.
                std::panic::resume_unwind(Box::new(rdmalab_core::control::ControllerRaised(
                    format!(
                        "raised {}{}",
                        e,
                        if tb.is_empty() {
                            String::new()
                        } else {
                            format!("\n{tb}")
                        }
                    ),
                )));
            }
            // A value returned is no action: `return rate` would be ignored
            // without a word, and the controller would seem to do nothing.
            if let Ok(v) = &result {
                if !v.is_none(py) {
                    let v = shown(v.bind(py));
                    std::panic::resume_unwind(Box::new(rdmalab_core::control::ControllerRaised(
                        format!(
                            "returned {v} from {method}; allowed: None (record actions on ctx, \
                             as ctx.set_rate(bps), and return nothing)"
                        ),
                    )));
                }
            }
            let a = {
                let mut c = pctx.borrow_mut(py);
                c.live = false;
                c.actions
            };
            if let Some(r) = a.rate {
                ctx.set_rate(r);
            }
            if let Some(w) = a.window {
                ctx.set_window(w);
            }
            for &sport in &a.probes[..a.probe_count as usize] {
                ctx.request_probe(sport);
            }
            if let Some(sport) = a.path {
                ctx.set_path(sport);
            }
            if let Some(words) = a.oob {
                ctx.send_oob(words);
            }
            if let Some(s) = a.share {
                ctx.set_share(s);
            }
            if let Some(c) = a.class {
                ctx.set_class(c);
            }
            for i in 0..rdmalab_core::control::MAX_CC_HEADER_WORDS {
                if a.header_mask & (1 << i) != 0 {
                    ctx.set_header_word(i, a.header[i]);
                }
            }
            for (slot, t) in a.timers.iter().enumerate() {
                match t {
                    Some(Some(at)) => ctx.set_timer(slot, *at),
                    Some(None) => ctx.cancel_timer(slot),
                    None => {}
                }
            }
        })
    }
}

impl Controller for PyController {
    fn name(&self) -> &str {
        &self.name
    }
    fn subscriptions(&self) -> EventMask {
        self.mask
    }
    fn on_start(&mut self, ctx: &mut CcContext) {
        self.call("on_start", None, ctx);
    }
    fn on_event(&mut self, ev: &CcEvent, ctx: &mut CcContext) {
        let mut e = PyEvent {
            kind: ev.name(),
            bytes: 0,
            packets: 0,
            acked_bytes: 0,
            acked_through: 0,
            rtt_ps: 0,
            ece: false,
            hops: 0,
            expected_psn: 0,
            slot: 0,
            udp_sport: 0,
            lost: false,
            sent_ps: 0,
            ce: false,
            words: Vec::new(),
            to_receiver: false,
            hint: String::new(),
            value: 0.0,
            pcie_utilization: 0.0,
            pcie_latency_ps: 0,
            active_qps: 0,
            port_utilization: 0.0,
        };
        match *ev {
            CcEvent::Tx { bytes, packets } => {
                e.bytes = bytes as u64;
                e.packets = packets;
            }
            CcEvent::Ack {
                acked_bytes,
                acked_through,
                rtt,
                ece,
                hops,
            } => {
                e.acked_bytes = acked_bytes;
                e.acked_through = acked_through;
                e.rtt_ps = rtt.ps();
                e.ece = ece;
                e.hops = hops;
            }
            CcEvent::Nack { expected_psn } => e.expected_psn = expected_psn,
            CcEvent::Timer { slot } => e.slot = slot,
            CcEvent::Rtt {
                udp_sport,
                sent,
                rtt,
                lost,
            } => {
                e.udp_sport = udp_sport;
                e.sent_ps = sent.ps();
                e.rtt_ps = rtt.ps();
                e.lost = lost;
            }
            CcEvent::Rx { bytes, packets, ce } => {
                e.bytes = bytes as u64;
                e.packets = packets;
                e.ce = ce;
            }
            CcEvent::Peer { words, to_receiver } => {
                e.words = words.to_vec();
                e.to_receiver = to_receiver;
            }
            CcEvent::Hint { kind, value } => {
                e.hint = kind.name();
                e.value = value;
            }
            CcEvent::Host {
                pcie_utilization,
                pcie_latency,
                active_qps,
                port_utilization,
            } => {
                e.pcie_utilization = pcie_utilization;
                e.pcie_latency_ps = pcie_latency.ps();
                e.active_qps = active_qps;
                e.port_utilization = port_utilization;
            }
            CcEvent::Cnp | CcEvent::Timeout => {}
        }
        self.call("on_event", Some(e), ctx);
    }
}

fn event_mask(py: Python<'_>, obj: &PyObject) -> PyResult<EventMask> {
    let Ok(subs) = obj.getattr(py, "subscriptions") else {
        return Ok(EventMask::DEFAULT);
    };
    let names: Vec<String> = subs.extract(py)?;
    let mut m = 0u16;
    for n in names {
        m |= match n.as_str() {
            "TX" => EventMask::TX,
            "ACK" => EventMask::ACK,
            "NACK" => EventMask::NACK,
            "CNP" => EventMask::CNP,
            "TIMEOUT" => EventMask::TIMEOUT,
            "RTT" => EventMask::RTT,
            "RX" => EventMask::RX,
            "PEER" | "HINT" => EventMask::PEER,
            "HOST" => EventMask::HOST,
            other => {
                return Err(ScenarioError::new_err(format!(
                    "cc.class: subscriptions names `{other}`; allowed: TX, ACK, NACK, CNP, TIMEOUT, RTT, RX, PEER, HINT, HOST (timers always arrive)"
                )))
            }
        };
    }
    Ok(EventMask(m))
}

/// One run of one scenario.
#[pyclass(unsendable)]
struct Simulation {
    /// The run in one world; `None` while it runs in parallel.
    world: Option<World>,
    /// A run split over threads (`threads` > 1), until it is folded into `world`.
    par: Option<ParallelRun>,
    name: String,
    progress: Progress,
    /// Settings the scenario accepts that do nothing in this run.
    warnings: Vec<String>,
}

impl Simulation {
    /// The run as one world, folding a parallel run first (at a window
    /// boundary its state is the serial run's, so it can go on serially).
    fn world(&mut self) -> &mut World {
        if let Some(p) = self.par.take() {
            self.world = Some(p.fold());
        }
        self.world.as_mut().expect("a world or a parallel run")
    }

    /// Read the run's configuration without folding it.
    fn config<T>(&self, f: impl FnOnce(&World) -> T) -> T {
        match (&self.world, &self.par) {
            (Some(w), _) => f(w),
            (None, Some(p)) => p.with_world(f),
            (None, None) => unreachable!("a world or a parallel run"),
        }
    }
}

fn write_file(
    dir: &PathBuf,
    name: &str,
    f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> PyResult<()> {
    let path = dir.join(name);
    let file = File::create(&path)
        .map_err(|e| PyOSError::new_err(format!("cannot write {}: {e}", path.display())))?;
    let mut w = BufWriter::new(file);
    f(&mut w)
        .and_then(|_| w.flush())
        .map_err(|e| PyOSError::new_err(format!("cannot write {}: {e}", path.display())))
}

#[pymethods]
impl Simulation {
    /// `controller`, if given, is a callable returning a new Python controller
    /// object for each QP (it replaces the scenario's `cc`); `controller_name`
    /// names it in errors and summaries.
    #[new]
    #[pyo3(signature = (json, controller=None, controller_name=None, threads=1))]
    fn new(
        py: Python<'_>,
        json: &str,
        controller: Option<PyObject>,
        controller_name: Option<String>,
        threads: usize,
    ) -> PyResult<Self> {
        let s = parse(json)?;
        // A Python controller gives a CC scope the controller it needs.
        let warnings: Vec<String> = s
            .warnings
            .iter()
            .filter(|w| !(w.without_cc && controller.is_some()))
            .map(|w| w.to_string())
            .collect();
        let mut world = s.build().map_err(ScenarioError::new_err)?;
        if threads > 1 {
            if controller.is_some() {
                return Err(ScenarioError::new_err(format!(
                    "threads: {threads} runs built-in controllers only; a Python controller runs on one thread; allowed: threads 1"
                )));
            }
            let mut worlds = vec![world];
            for _ in 1..threads {
                worlds.push(s.build().map_err(ScenarioError::new_err)?);
            }
            let par = ParallelRun::new(worlds).map_err(ScenarioError::new_err)?;
            return Ok(Simulation {
                world: None,
                par: Some(par),
                name: s.name,
                progress: Progress::Running,
                warnings,
            });
        }
        if threads == 0 {
            return Err(ScenarioError::new_err(
                "threads: 0; allowed: 1 (serial) or more",
            ));
        }
        if let Some(factory) = controller {
            let name = controller_name.unwrap_or_else(|| "python".to_string());
            // Check the factory and the subscriptions once, before the run.
            let probe = factory.call0(py)?;
            let mask = event_mask(py, &probe)?;
            let n = name.clone();
            let make = move || -> Box<dyn Controller> {
                let obj = Python::with_gil(|py| factory.call0(py))
                    .unwrap_or_else(|e| panic!("constructor raised {e}"));
                Box::new(PyController {
                    name: n.clone(),
                    obj,
                    mask,
                })
            };
            world.cc_cfg = CcConfig::custom(name, make);
            world.check_signals().map_err(ScenarioError::new_err)?;
        }
        Ok(Simulation {
            world: Some(world),
            par: None,
            name: s.name,
            progress: Progress::Running,
            warnings,
        })
    }

    /// Advance to simulated time `until_ps`; returns "running", "all_flows_done" or "stop_time".
    fn run_until(&mut self, until_ps: u64) -> PyResult<&'static str> {
        if self.progress == Progress::Running {
            if let Some(p) = self.par.as_mut() {
                match p.run_until(Time(until_ps)).map_err(run_error)? {
                    Step::Progress(pr) => self.progress = pr,
                    Step::FoldToSerial => {
                        self.progress = self.world().run_until(Time(until_ps)).map_err(run_error)?
                    }
                }
                if self.progress != Progress::Running {
                    self.world();
                }
            } else {
                self.progress = self.world().run_until(Time(until_ps)).map_err(run_error)?;
            }
        }
        Ok(match self.progress {
            Progress::Running => "running",
            Progress::AllFlowsDone => "all_flows_done",
            Progress::StopTime => "stop_time",
        })
    }

    /// Send an application hint (`weight`, `target_latency_us`, `priority`,
    /// `customN`) to QP `qp`'s controller now, between two `run_until` calls.
    fn hint(&mut self, qp: u32, kind: &str, value: f64) -> PyResult<()> {
        let k = HintKind::parse(kind).ok_or_else(|| {
            PyValueError::new_err(format!(
                "hint `{kind}`: allowed weight, target_latency_us, priority, customN"
            ))
        })?;
        self.world()
            .hint(qp, k, value)
            .map_err(PyValueError::new_err)?;
        if let Some(e) = self.world().error.take() {
            return Err(run_error(e));
        }
        Ok(())
    }

    /// (flows, applications) that start at or after the stop time: they
    /// cannot complete.
    #[getter]
    fn late_starts(&self) -> (usize, usize) {
        self.config(|w| w.workload.late_starts(w.run.stop_at))
    }

    /// Settings the scenario accepts that do nothing in this run, one line
    /// each: the key, its value and what it needs to take effect.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// The scenario asks for a packet capture (`records.pcap`).
    #[getter]
    fn pcap_configured(&self) -> bool {
        self.config(|w| w.pcap_cfg.is_some())
    }

    /// Start the capture `records.pcap` asks for, into the file `path`
    /// (before the run; frames are written as they leave their ports).
    fn open_pcap(&mut self, path: PathBuf) -> PyResult<()> {
        let file = File::create(&path)
            .map_err(|e| PyOSError::new_err(format!("cannot write {}: {e}", path.display())))?;
        self.world()
            .start_pcap(Box::new(file))
            .map_err(|e| PyOSError::new_err(format!("cannot write {}: {e}", path.display())))
    }

    #[getter]
    fn now_ps(&self) -> u64 {
        match &self.par {
            Some(p) => p.now().ps(),
            None => self.config(|w| w.now().ps()),
        }
    }
    #[getter]
    fn stop_ps(&self) -> u64 {
        self.config(|w| w.run.stop_at.ps())
    }
    #[getter]
    fn flows_total(&self) -> usize {
        self.config(|w| w.workload.flows.len())
    }
    #[getter]
    fn flows_done(&self) -> usize {
        match &self.par {
            Some(p) => p.flows_done(),
            None => self.config(|w| w.rec.flows.len()),
        }
    }
    #[getter]
    fn events(&self) -> u64 {
        match &self.par {
            Some(p) => p.events(),
            None => self.config(|w| w.q.processed()),
        }
    }
    /// Threads the run uses (1: serial, or folded into one world).
    #[getter]
    fn threads(&self) -> usize {
        self.par.as_ref().map_or(1, |p| p.threads())
    }
    /// Bytes of every flow of the workload (perftest applications have no
    /// end, so they count for nothing): the progress line's measure of work.
    #[getter]
    fn flow_bytes_total(&self) -> u64 {
        self.config(|w| w.workload.flows.iter().map(|f| f.bytes).sum())
    }
    /// Data payload that has reached its receiver so far (a counter, cheap to read).
    #[getter]
    fn payload_arrived(&self) -> u64 {
        match &self.par {
            Some(p) => p.payload_arrived(),
            None => self.config(|w| w.stats.data_payload_arrived),
        }
    }

    /// Append the `fct.txt` lines of the flows finished after the first
    /// `done` to `path` (created if missing); returns how many flows are
    /// finished now, the `done` of the next call. ns-3 users watch fct.txt grow.
    fn append_fct(&mut self, path: PathBuf, done: usize) -> PyResult<usize> {
        let now = self.flows_done();
        if now > done || !path.exists() {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| PyOSError::new_err(format!("cannot write {}: {e}", path.display())))?;
            let mut f = std::io::BufWriter::new(file);
            match self.par.as_mut() {
                Some(p) => p.write_hpcc_fct_from(&mut f, done),
                None => self.world().write_hpcc_fct_from(&mut f, done),
            }
            .and_then(|_| f.flush())
            .map_err(|e| PyOSError::new_err(format!("cannot write {}: {e}", path.display())))?;
        }
        Ok(now)
    }

    /// Counters and invariants of the run so far.
    fn summary(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        let (progress, name) = (self.progress, self.name.clone());
        let w: &World = self.world();
        let s = &w.stats;
        let d = PyDict::new(py);
        d.set_item("name", name)?;
        d.set_item("seed", w.run.seed)?;
        d.set_item("cc", w.cc_cfg.name())?;
        d.set_item(
            "end",
            match progress {
                Progress::Running => "running",
                Progress::AllFlowsDone => "all_flows_done",
                Progress::StopTime => "stop_time",
            },
        )?;
        d.set_item("sim_time_ps", w.now().ps())?;
        d.set_item("events", w.q.processed())?;
        d.set_item("switch_packet_hops", s.switch_tx_packets)?;
        d.set_item("nic_tx_packets", s.nic_tx_packets)?;
        d.set_item("flows_total", w.workload.flows.len())?;
        d.set_item("flows_completed", w.rec.flows.len())?;
        d.set_item("apps", w.workload.apps.len())?;
        d.set_item("data_payload_sent_bytes", s.data_payload_sent)?;
        d.set_item("data_payload_arrived_bytes", s.data_payload_arrived)?;
        d.set_item("data_payload_dropped_bytes", s.data_payload_dropped)?;
        d.set_item("data_payload_in_network_bytes", w.data_payload_in_network())?;
        let posted: u64 = w.qps.iter().map(|q| q.byte_end).sum();
        let delivered: u64 = w.qps.iter().map(|q| q.delivered_bytes).sum();
        d.set_item("message_bytes_posted", posted)?;
        d.set_item("message_bytes_delivered", delivered)?;
        d.set_item("dropped_frames", w.rec.dropped_frames())?;
        d.set_item("retransmitted_packets", s.retransmitted_packets)?;
        d.set_item("timeouts", s.timeouts)?;
        d.set_item("nacks_sent", s.nacks_sent)?;
        d.set_item("cnps_sent", s.cnps_sent)?;
        d.set_item("acks_sent", s.acks_sent)?;
        d.set_item("ecn_marked_packets", s.ecn_marked)?;
        d.set_item("pfc_pauses", s.pfc_pauses_sent)?;
        d.set_item("pfc_resumes", s.pfc_resumes_sent)?;
        d.set_item("peak_live_packets", s.peak_live_packets)?;
        if let Some((frames, ce)) = w.pcap_counts() {
            d.set_item("pcap_frames", frames)?;
            d.set_item("pcap_ecn_ce_frames", ce)?;
        }
        let cl = s.control_loop;
        d.set_item("control_loops", cl.count)?;
        d.set_item("control_loop_mean_ps", cl.mean_ps())?;
        d.set_item("control_loop_min_ps", cl.min_ps)?;
        d.set_item("control_loop_max_ps", cl.max_ps)?;
        d.set_item("packet_pool_slots", w.pkts.capacity_used())?;
        d.set_item("control_placement", w.placement_name())?;
        if let Some(cfg) = &w.nic_cfg.resources {
            // Whole-run cache miss rates and PCIe bytes by purpose, over every NIC.
            let all: Vec<_> = w
                .nics
                .iter()
                .filter_map(|n| n.res.as_ref().map(|r| r.counters()))
                .collect();
            let rate =
                |f: &dyn Fn(&rdmalab_core::nic::resources::ResourceCounters) -> (u64, u64)| {
                    let (h, m) = all
                        .iter()
                        .map(f)
                        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
                    if h + m == 0 {
                        0.0
                    } else {
                        m as f64 / (h + m) as f64
                    }
                };
            d.set_item("nic_resources", cfg.preset.as_str())?;
            d.set_item("qpc_miss_rate", rate(&|c| c.qpc))?;
            d.set_item("mtt_miss_rate", rate(&|c| c.mtt))?;
            d.set_item("wqe_miss_rate", rate(&|c| c.wqe))?;
            for p in rdmalab_core::nic::resources::PciePurpose::ALL {
                let b: u64 = all.iter().map(|c| c.pcie_bytes[p as usize]).sum();
                d.set_item(format!("pcie_{}_bytes", p.name()), b)?;
            }
            d.set_item(
                "context_stall_ps",
                all.iter().map(|c| c.stall_ps).sum::<u64>(),
            )?;
        }
        if w.nic_cfg.scheduler.is_some() {
            d.set_item("policy_firings", w.policy_firings.len())?;
        }
        if w.nic_cfg.uar.is_some() {
            let all: Vec<_> = w.nics.iter().filter_map(|n| n.uar.as_deref()).collect();
            d.set_item("doorbells", all.iter().map(|u| u.doorbells).sum::<u64>())?;
            d.set_item(
                "doorbell_bounces",
                all.iter().map(|u| u.bounces).sum::<u64>(),
            )?;
            d.set_item(
                "doorbell_wait_ps",
                all.iter().map(|u| u.wait_ps).sum::<u64>(),
            )?;
        }
        if matches!(
            w.nic_cfg.qp_scheduler,
            rdmalab_core::nic::QpScheduler::Srnic { .. }
        ) {
            d.set_item("wqes_fetched", s.wqes_fetched)?;
        }
        if let Some(op) = w.nic_cfg.on_path {
            d.set_item(
                "cc_core_tx_packets",
                w.nics.iter().map(|n| n.tx_core_packets).sum::<u64>(),
            )?;
            d.set_item(
                "cc_core_rx_packets",
                w.nics.iter().map(|n| n.rx_core_packets).sum::<u64>(),
            )?;
            if op.memory.is_some() {
                let mems: Vec<_> = w.nics.iter().filter_map(|n| n.ctx_mem.as_ref()).collect();
                let accesses = mems.iter().map(|m| m.accesses).sum::<u64>();
                let ps = mems.iter().map(|m| m.access_ps).sum::<u64>();
                d.set_item("cc_core_context_accesses", accesses)?;
                d.set_item(
                    "cc_core_context_misses",
                    mems.iter().map(|m| m.misses).sum::<u64>(),
                )?;
                d.set_item(
                    "cc_core_context_access_ns",
                    if accesses == 0 {
                        0.0
                    } else {
                        ps as f64 / accesses as f64 / 1e3
                    },
                )?;
            }
        }
        if let Some(fw) = &w.ctl {
            let s = &fw.stats;
            let sum = |a: &[u64]| a.iter().sum::<u64>();
            d.set_item("control_events_raised", sum(&s.raised))?;
            d.set_item("control_entries_processed", sum(&s.processed))?;
            d.set_item("control_hw_coalesced", sum(&s.hw_coalesced))?;
            d.set_item("control_sw_coalesced", sum(&s.sw_coalesced))?;
            d.set_item("control_entries_waiting", fw.waiting_entries())?;
            d.set_item("control_actions_installed", s.actions_installed)?;
            d.set_item("control_tx_bytes_raised", s.tx_bytes_raised)?;
            d.set_item("control_tx_bytes_processed", s.tx_bytes_processed)?;
            let busy: Vec<f64> = fw
                .threads
                .iter()
                .map(|t| t.busy_time.ps() as f64 / w.now().ps().max(1) as f64)
                .collect();
            d.set_item(
                "control_thread_busy_max",
                busy.iter().cloned().fold(0.0, f64::max),
            )?;
            if fw.placement.compute.is_some() {
                let m = s.memory;
                d.set_item("control_state_l1_hits", m.l1_hits)?;
                d.set_item("control_state_l2_hits", m.l2_hits)?;
                d.set_item("control_state_l3_hits", m.l3_hits)?;
                d.set_item("control_state_memory_reads", m.memory_reads)?;
            }
            if fw.placement.raw_eth.is_some() {
                d.set_item("control_raw_eth_sent", s.raw_eth_sent)?;
                d.set_item("control_raw_eth_dropped", s.raw_eth_dropped)?;
                d.set_item("control_raw_eth_wait_ps", s.raw_eth_wait.ps())?;
            }
        }
        Ok(d.into())
    }

    /// Write the CSV tables and the ns-3 HPCC-style text files into `dir`.
    fn write_tables(&mut self, dir: PathBuf) -> PyResult<Vec<String>> {
        // The capture's frames so far reach packets.pcap with the tables.
        self.world()
            .flush_pcap()
            .map_err(|e| PyOSError::new_err(format!("cannot write packets.pcap: {e}")))?;
        let w: &World = self.world();
        std::fs::create_dir_all(&dir)
            .map_err(|e| PyOSError::new_err(format!("cannot create {}: {e}", dir.display())))?;
        for &(name, table) in TABLES {
            if name == "counter_samples" && !w.rec.keep_counters {
                continue; // written only with `records.counters`
            }
            if name == "link_events" && !w.has_link_events() {
                continue; // written only when some link goes down
            }
            write_file(&dir, &format!("{name}.csv"), |f| table(w, f))?;
        }
        write_file(&dir, "fct.txt", |f| w.write_hpcc_fct(f))?;
        write_file(&dir, "pfc.txt", |f| w.write_hpcc_pfc(f))?;
        if w.qlen_monitor.is_some() {
            write_file(&dir, "qlen.txt", |f| w.write_hpcc_qlen(f))?;
        }
        Ok(TABLES.iter().map(|(n, _)| n.to_string()).collect())
    }

    /// One output table as CSV bytes, in memory (what `write_tables` writes
    /// to `NAME.csv`), for `rdmalab.run` without an output directory.
    fn table_csv(&mut self, name: &str) -> PyResult<Vec<u8>> {
        let Some(&(_, table)) = TABLES.iter().find(|(n, _)| *n == name) else {
            let names: Vec<&str> = TABLES.iter().map(|(n, _)| *n).collect();
            return Err(PyValueError::new_err(format!(
                "no table `{name}`; allowed: {}",
                names.join(", ")
            )));
        };
        let mut buf = Vec::new();
        table(self.world(), &mut buf)
            .map_err(|e| PyOSError::new_err(format!("cannot write table {name}: {e}")))?;
        Ok(buf)
    }
}

type TableWriter = fn(&World, &mut dyn Write) -> std::io::Result<()>;

/// The output tables, by name, in the order they are written.
const TABLES: &[(&str, TableWriter)] = &[
    ("flows", |w, f| w.write_flows_csv(f)),
    ("qp_samples", |w, f| w.write_qp_samples_csv(f)),
    ("port_samples", |w, f| w.write_port_samples_csv(f)),
    ("counter_samples", |w, f| w.write_counter_samples_csv(f)),
    ("link_events", |w, f| w.write_link_events_csv(f)),
    ("pfc_events", |w, f| w.write_pfc_csv(f)),
    ("drops", |w, f| w.write_drops_csv(f)),
    ("apps", |w, f| w.write_apps_csv(f)),
    ("control_delays", |w, f| w.write_control_delays_csv(f)),
    ("probes", |w, f| w.write_probes_csv(f)),
    ("nic_resources", |w, f| w.write_nic_resources_csv(f)),
    ("nic_memory", |w, f| w.write_nic_memory_csv(f)),
    ("policy_actions", |w, f| w.write_policy_actions_csv(f)),
    ("tenants", |w, f| w.write_tenants_csv(f)),
    ("collectives", |w, f| w.write_collectives_csv(f)),
    ("collective_ranks", |w, f| w.write_collective_ranks_csv(f)),
];

/// The built-in congestion-control algorithms and their declared parameters.
#[pyfunction]
fn algorithms(py: Python<'_>) -> PyResult<Vec<PyObject>> {
    let mut out = Vec::new();
    for a in rdmalab_core::algo::ALGORITHMS {
        let d = PyDict::new(py);
        d.set_item("name", a.name)?;
        d.set_item("summary", a.summary)?;
        d.set_item("needs", a.needs)?;
        let mut ps = Vec::new();
        for p in a.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("unit", p.kind.unit())?;
            pd.set_item("default", p.show(p.default))?;
            pd.set_item("min", p.show(p.min))?;
            pd.set_item("max", p.show(p.max))?;
            pd.set_item("description", p.description)?;
            pd.set_item("source", p.source)?;
            pd.set_item("not_with", p.not_with)?;
            ps.push(pd.into_any().unbind());
        }
        d.set_item("params", ps)?;
        out.push(d.into_any().unbind());
    }
    Ok(out)
}

/// The text of a shipped flow-size CDF (`size_bytes cdf_percent` lines), by name.
#[pyfunction]
fn builtin_cdf_text(name: &str) -> Option<&'static str> {
    rdmalab_core::workload::cdf::BUILTIN
        .iter()
        .find(|x| x.0 == name)
        .map(|x| x.1)
}

#[pyfunction]
fn builtin_cdfs() -> Vec<&'static str> {
    rdmalab_core::workload::cdf::BUILTIN
        .iter()
        .map(|x| x.0)
        .collect()
}

#[pyfunction]
fn builtin_topologies() -> Vec<&'static str> {
    rdmalab_core::scenario::BUILTIN_TOPOLOGIES
        .iter()
        .map(|x| x.0)
        .collect()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_keys, m)?)?;
    m.add_function(wrap_pyfunction!(watch_interrupts, m)?)?;
    m.add_function(wrap_pyfunction!(read_yaml_flows, m)?)?;
    m.add_function(wrap_pyfunction!(read_ns3_flows, m)?)?;
    m.add_function(wrap_pyfunction!(ns3_seconds_to_ns, m)?)?;
    m.add_function(wrap_pyfunction!(hpcc_links_past_count, m)?)?;
    m.add_function(wrap_pyfunction!(indent_json, m)?)?;
    m.add_function(wrap_pyfunction!(csv_to_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(values_ok, m)?)?;
    m.add_function(wrap_pyfunction!(plain_flows, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_cdfs, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_cdf_text, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_topologies, m)?)?;
    m.add_class::<Simulation>()?;
    m.add_class::<PyEvent>()?;
    m.add_class::<PyContext>()?;
    m.add_class::<Ns3Flows>()?;
    // The core's bounds, for the front end's own parsers (ns-3 files).
    m.add("MAX_RATE_BPS", rdmalab_core::scenario::units::MAX_RATE_BPS)?;
    m.add(
        "MAX_DURATION_PS",
        rdmalab_core::scenario::units::MAX_DURATION_PS,
    )?;
    m.add("MAX_NODES", rdmalab_core::net::topology::MAX_NODES)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("RunError", m.py().get_type::<RunError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // What the simulator was built from (build.rs): a sweep keeps runs of another build apart.
    m.add("__build__", env!("RDMALAB_SOURCE_HASH"))?;
    Ok(())
}
