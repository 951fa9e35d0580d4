//! The `nic.resources` section: the NIC's on-chip caches and processing
//! units, from a preset and the keys that override it.

use super::{CacheSpec, ResourceConfig};
use crate::config::{show, units, Obj, Reader};
use serde_json::Value;

impl ResourceConfig {
    /// `nic.resources`: `off`, a preset name, or `{preset: NAME, ...overrides}`.
    pub(crate) fn read(r: &mut Reader, n: &Obj) -> Option<Option<ResourceConfig>> {
        let presets = ResourceConfig::PRESETS.join(", ");
        let v = match n.get("resources") {
            None | Some(Value::Bool(false)) => return Some(None),
            Some(Value::String(s)) if s == "off" => return Some(None),
            Some(v) => v,
        };
        if let Value::String(name) = v {
            return match ResourceConfig::preset(name) {
                Some(c) => Some(Some(c)),
                None => {
                    r.err("nic.resources", show(v), format!("allowed: off, a preset ({presets}), or a mapping {{preset: NAME, ...}}"));
                    None
                }
            };
        }
        const KEYS: &[&str] = &[
            "preset",
            "wqe_interval",
            "qpc_cache",
            "qpc_entry",
            "qpc_ways",
            "mtt_cache",
            "mtt_ways",
            "page",
            "wqe_cache",
            "wqe_ways",
            "units",
            "tlp_overhead",
            "tlp_max_payload",
            "rx_buffer",
            "registered_memory",
        ];
        let o = r.obj(v, "nic.resources", KEYS)?;
        let before = r.errs.len();
        let name = r.choice(&o, "preset", ResourceConfig::PRESETS, None)?;
        let base = ResourceConfig::preset(&name).expect("chosen from the list");
        let qpc_entry = r.bytes(&o, "qpc_entry", Some(base.qpc.entry_bytes as u64));
        let qpc_cache = r.bytes(&o, "qpc_cache", Some(base.qpc.bytes));
        let qpc_ways = r.int(&o, "qpc_ways", Some(base.qpc.ways as u64), 1, 1 << 20);
        let mtt_cache = r.bytes(&o, "mtt_cache", Some(base.mtt.bytes));
        let mtt_ways = r.int(&o, "mtt_ways", Some(base.mtt.ways as u64), 1, 1 << 20);
        let page = r.bytes(&o, "page", Some(base.page_bytes));
        let wqe = match o.get("wqe_cache") {
            Some(Value::String(s)) if s == "none" => Some(None),
            None => Some(base.wqe.map(|w| w.bytes)),
            Some(Value::String(_) | Value::Number(_)) => r
                .unit_value(&o, "wqe_cache", None, units::parse_bytes, "64KiB")
                .map(Some),
            // YAML reads `wqe_cache: off` as false.
            Some(other) => {
                r.err(
                    "nic.resources.wqe_cache",
                    show(other),
                    "allowed: a size like `64KiB`, or `none` (no WQE cache)",
                );
                None
            }
        };
        let wqe_ways = r.int(
            &o,
            "wqe_ways",
            Some(base.wqe.map_or(8, |w| w.ways) as u64),
            1,
            1 << 20,
        );
        if let (Some(None), Some(v)) = (wqe, o.get("wqe_ways")) {
            r.err(
                "nic.resources.wqe_ways",
                show(v),
                "only applies with a WQE cache (wqe_cache is `none` here)",
            );
        }
        let units_n = r.int(&o, "units", Some(base.units as u64), 1, 1 << 16);
        let wqe_interval = r.duration(&o, "wqe_interval", Some(base.wqe_interval));
        let tlp_overhead = r.bytes(&o, "tlp_overhead", Some(base.tlp_overhead as u64));
        let tlp_max = r.bytes(&o, "tlp_max_payload", Some(base.tlp_max_payload as u64));
        let rx_buffer = r.bytes(&o, "rx_buffer", Some(base.rx_buffer_bytes));
        let registered = r.bytes(&o, "registered_memory", Some(base.registered_bytes));
        if r.errs.len() != before {
            return None;
        }
        let (qpc_entry, qpc_cache, mtt_cache, page) = (qpc_entry?, qpc_cache?, mtt_cache?, page?);
        let (tlp_overhead, tlp_max) = (tlp_overhead?, tlp_max?);
        if !(1..=1 << 20).contains(&qpc_entry) {
            r.err(
                "nic.resources.qpc_entry",
                format!("`{qpc_entry}B`"),
                "allowed: 1B to 1MiB per QP context",
            );
        }
        let mtt_entry = crate::nic::resources::MTT_ENTRY_BYTES as u64;
        let wqe_entry = crate::nic::WQE_BYTES;
        for (key, size, entry) in [
            ("qpc_cache", qpc_cache, qpc_entry),
            ("mtt_cache", mtt_cache, mtt_entry),
        ]
        .into_iter()
        .chain(wqe.flatten().map(|w| ("wqe_cache", w, wqe_entry)))
        {
            if size < entry.max(1) {
                r.err(
                    format!("nic.resources.{key}"),
                    format!("`{size}B`"),
                    format!("must hold at least one entry of {entry}B"),
                );
            } else if size / entry.max(1) > u32::MAX as u64 {
                r.err(
                    format!("nic.resources.{key}"),
                    format!("`{size}B`"),
                    format!("allowed: at most {} entries of {entry}B", u32::MAX),
                );
            }
        }
        if page == 0 {
            r.err(
                "nic.resources.page",
                "`0B`",
                "must be at least 1 byte (4KiB: a base page; 2MiB: a huge page)",
            );
        }
        if tlp_max == 0 || tlp_max > 4096 {
            r.err(
                "nic.resources.tlp_max_payload",
                format!("`{tlp_max}B`"),
                "allowed: 1B to 4096B (PCIe's largest max payload size)",
            );
        }
        if tlp_overhead > 64 {
            r.err(
                "nic.resources.tlp_overhead",
                format!("`{tlp_overhead}B`"),
                "allowed: 0B to 64B per TLP",
            );
        }
        if r.errs.len() != before {
            return None;
        }
        Some(Some(ResourceConfig {
            // A key set to null is absent: it overrides nothing.
            preset: if o.map.values().filter(|v| !v.is_null()).count() == 1 {
                name
            } else {
                format!("{name}+custom")
            },
            qpc: CacheSpec {
                bytes: qpc_cache,
                entry_bytes: qpc_entry as u32,
                ways: qpc_ways? as u32,
            },
            mtt: CacheSpec {
                bytes: mtt_cache,
                entry_bytes: mtt_entry as u32,
                ways: mtt_ways? as u32,
            },
            page_bytes: page,
            wqe: wqe?.map(|b| CacheSpec {
                bytes: b,
                entry_bytes: wqe_entry as u32,
                ways: wqe_ways.unwrap_or(8) as u32,
            }),
            units: units_n? as u32,
            wqe_interval: wqe_interval?,
            tlp_overhead: tlp_overhead as u32,
            tlp_max_payload: tlp_max as u32,
            rx_buffer_bytes: rx_buffer?,
            registered_bytes: registered?,
        }))
    }
}
