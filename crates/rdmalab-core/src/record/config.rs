//! The `records` section of a scenario: what a run samples and keeps, each
//! key declared once ([`KEYS`]) and read into a [`RecordsConfig`].
//! `records.pcap` names hosts, links and flows, so the scenario reads it
//! once the topology and the workload are known; its key is declared here.

use crate::config::{Allowed, Key, Obj, Reader, Rule};
use crate::time::Duration;
use serde_json::Value;

/// The default sample period.
const SAMPLE_INTERVAL_DEFAULT: Duration = Duration(10_000_000);

const SAMPLE_INTERVAL: Key = Key {
    name: "sample_interval",
    unit: "duration, or `off`",
    default: "10us",
    allowed: Allowed::Custom("> 0, at most 10 million samples over `duration`, or `off`"),
    rule: Rule::None,
    meaning: "Period of the per-QP samples (rate, throughput, bytes in flight) and the switch-port queue samples. `off` turns sampling off. Both the string `\"off\"` and YAML's bare `off`, which YAML reads as `false`, are accepted. rdmalab choice.",
};
const PROBES: Key = Key {
    name: "probes",
    unit: "bool",
    default: "true",
    allowed: Allowed::Bool,
    rule: Rule::None,
    meaning: "Keep one row per probe answer or probe loss in the `probes` table. A probing controller (`multipath`) on a long run writes one per probe; `false` keeps probing and drops the rows. rdmalab choice.",
};
const COUNTERS: Key = Key {
    name: "counters",
    unit: "bool",
    default: "false",
    allowed: Allowed::Bool,
    rule: Rule::Text("needs `records.sample_interval`"),
    meaning: "Write the `counter_samples` table: per sample period, the run's ECN marks, CNPs, PFC frames, drops, retransmissions and timeouts, so the report can draw them over time. Off by default: one small row per sample, and a run's files stay as they were. rdmalab choice.",
};
const QLEN_MONITOR: Key = Key {
    name: "qlen_monitor",
    unit: "mapping",
    default: "none",
    allowed: Allowed::Custom("`{start, end}`, durations, end ≥ start"),
    rule: Rule::None,
    meaning: "Write `qlen.txt` in the ns-3 HPCC simulator's QLEN_MON format: every 100 ns between the two (absolute) times each switch port's queued data bytes go into a 1 KB-bin histogram, dumped at every multiple of 100 ms (only then, as ns-3). Costs one event per 100 ns and a pass over all switch ports. `none`: off.",
};
const PCAP: Key = Key {
    name: "pcap",
    unit: "mapping, or `true` / `false`",
    default: "none",
    allowed: Allowed::Custom("the keys of `records.pcap` below; `true` is `{}`"),
    rule: Rule::None,
    meaning: "Write `packets.pcap`: the frames that start on the wire at the capture points, as RoCEv2 frames Wireshark and tshark dissect ([outputs](outputs.md#packetspcap--the-frames-leaving-chosen-ports-recordspcap) has the frame layout and addresses). The capture points are the union of `hosts`, `ports` and `links`; with none of them, every host's link in both directions. Needs an output directory (`--out`, `out_dir=`). Costs one branch per frame when off; when on, a frame's encoding and write at each capture point. `none`: off. rdmalab choice.",
};

/// Every key of the `records` section, in the order the reference lists them.
pub const KEYS: &[Key] = &[SAMPLE_INTERVAL, QLEN_MONITOR, PROBES, COUNTERS, PCAP];

/// The sample period (`None`: `off`), whether probe rows are kept and
/// whether run-wide counters are sampled.
pub(crate) fn read_kept(r: &mut Reader, o: &Obj) -> Option<(Option<Duration>, bool, bool)> {
    let names: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
    let Some(rec) = r.sub(o, "records", &names) else {
        return Some((Some(SAMPLE_INTERVAL_DEFAULT), true, false));
    };
    let probes = r.key_bool(&rec, &PROBES);
    let counters = r.key_bool(&rec, &COUNTERS);
    let interval = match rec.get(SAMPLE_INTERVAL.name) {
        Some(Value::String(s)) if s == "off" => Some(None),
        // YAML 1.1 reads a bare `off` as false.
        Some(Value::Bool(false)) => Some(None),
        _ => r
            .positive_duration(&rec, SAMPLE_INTERVAL.name, Some(SAMPLE_INTERVAL_DEFAULT))
            .map(Some),
    };
    if counters && matches!(interval, Some(None)) {
        r.err(
            "records.counters",
            "`true`".to_string(),
            "needs records.sample_interval (the counters are kept per sample period), not `off`"
                .to_string(),
        );
        return None;
    }
    Some((interval?, probes, counters))
}

/// `records.qlen_monitor`: the window ns-3's QLEN_MON samples in.
pub(crate) fn read_qlen_monitor(r: &mut Reader, o: &Obj) -> Option<Option<(Duration, Duration)>> {
    let Some(v) = o.get("records").and_then(|v| v.get(QLEN_MONITOR.name)) else {
        return Some(None);
    };
    let m = r.obj(v, "records.qlen_monitor", &["start", "end"])?;
    let start = r.duration(&m, "start", None);
    let end = r.duration(&m, "end", None);
    match (start, end) {
        (Some(a), Some(b)) if b >= a => Some(Some((a, b))),
        (Some(a), Some(b)) => {
            r.err(
                "records.qlen_monitor.end",
                format!("`{b}`"),
                format!("must not be before start ({a})"),
            );
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_sample_interval_is_the_one_read() {
        assert_eq!(SAMPLE_INTERVAL.default_duration(), SAMPLE_INTERVAL_DEFAULT);
        assert_eq!(PROBES.default, "true");
        assert_eq!(COUNTERS.default, "false");
    }
}
