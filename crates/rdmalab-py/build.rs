//! Fingerprint the sources this extension is built from, so that a sweep
//! can tell runs of another build of the simulator from its own
//! (`rdmalab.build.build_id`): a run's id hashes its scenario, not the
//! model that ran it, and a changed model must not reuse old results
//! unannounced.
//!
//! The fingerprint is FNV-1a (64 bits) over every file of the core's
//! sources and data, this crate's sources, both manifests and the
//! workspace's Cargo.lock, in path order, each as its path, its length and
//! its bytes. A change detector, not a signature: any edit changes it,
//! even one that changes no result.

use std::fs;
use std::path::{Path, PathBuf};

fn files(under: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(under) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let core = here.join("../rdmalab-core");
    let inputs = [
        core.join("src"),
        core.join("data"),
        core.join("Cargo.toml"),
        here.join("src"),
        here.join("Cargo.toml"),
        here.join("../../Cargo.lock"),
    ];
    let mut all = Vec::new();
    for i in &inputs {
        println!("cargo:rerun-if-changed={}", i.display());
        if i.is_dir() {
            files(i, &mut all);
        } else if i.is_file() {
            all.push(i.clone());
        }
    }
    // Paths relative to this crate, so the fingerprint is the same wherever
    // the sources lie.
    let mut named: Vec<(String, PathBuf)> = all
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&here)
                .map_or_else(|_| p.display().to_string(), |r| r.display().to_string());
            (rel.replace('\\', "/"), p)
        })
        .collect();
    named.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (rel, p) in &named {
        let body = fs::read(p).unwrap_or_default();
        eat(rel.as_bytes());
        eat(&(body.len() as u64).to_le_bytes());
        eat(&body);
    }
    println!("cargo:rustc-env=RDMALAB_SOURCE_HASH={h:016x}");
}
