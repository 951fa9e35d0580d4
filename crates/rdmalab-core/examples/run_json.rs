//! Run a scenario given as a JSON file (no outputs); prints counters.
//! Used for profiling the core without Python: `cargo run --release --example run_json -- FILE`.
//! `RDMALAB_THREADS=N` runs it split over N threads (`--threads N`).
use rdmalab_core::parallel::{ParallelRun, Step};
use rdmalab_core::scenario::Scenario;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: run_json SCENARIO.json");
    let text = std::fs::read_to_string(&path).expect("read scenario");
    let s = Scenario::from_json_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let threads: usize =
        std::env::var("RDMALAB_THREADS").map_or(1, |t| t.parse().expect("threads"));
    let mut w = s.build().expect("build");
    let t0 = std::time::Instant::now();
    if threads > 1 {
        let mut worlds = vec![w];
        for _ in 1..threads {
            worlds.push(s.build().expect("build"));
        }
        let mut par = ParallelRun::new(worlds).unwrap_or_else(|e| panic!("{e}"));
        let stop = par.with_world(|w| w.run.stop_at);
        // `RDMALAB_STEPS=K`: advance in K calls, as the command line's progress does.
        let steps: u64 = std::env::var("RDMALAB_STEPS").map_or(1, |t| t.parse().expect("steps"));
        let mut step = Step::Progress(rdmalab_core::world::Progress::Running);
        for k in 1..=steps {
            step = par
                .run_until(rdmalab_core::time::Time(stop.ps() / steps * k))
                .unwrap_or_else(|e| panic!("{e}"));
            if step != Step::Progress(rdmalab_core::world::Progress::Running) {
                break;
            }
        }
        w = par.fold();
        if step == Step::FoldToSerial {
            w.run_to_end().unwrap_or_else(|e| panic!("{e}"));
        }
    }
    if std::env::var("RDMALAB_HIST").is_ok() {
        for i in 1..=6u64 {
            let _ = w.run_until(rdmalab_core::time::Time(w.run.stop_at.ps() * i / 6));
            histogram(&w);
        }
    }
    let p = w.run_to_end().unwrap_or_else(|e| panic!("{e}"));
    let dt = t0.elapsed().as_secs_f64();
    println!(
        "{:?} in {:.2}s: {} events ({:.2} M/s), {} switch hops ({:.2} M/s), {} of {} flows",
        p,
        dt,
        w.q.processed(),
        w.q.processed() as f64 / dt / 1e6,
        w.stats.switch_tx_packets,
        w.stats.switch_tx_packets as f64 / dt / 1e6,
        w.rec.flows.len(),
        w.workload.flows.len()
    );
}

#[allow(dead_code)]
fn histogram(w: &rdmalab_core::world::World) {
    use rdmalab_core::world::Event;
    let mut h = std::collections::BTreeMap::new();
    for e in w.q.iter_pending() {
        let k = match e {
            Event::TxDone { .. } => "TxDone",
            Event::Arrive { .. } => "Arrive",
            Event::NicWake { .. } => "NicWake",
            Event::FlowStart { .. } => "FlowStart",
            Event::AppStart { .. } => "AppStart",
            Event::QpTimer { .. } => "QpTimer",
            Event::Sample => "Sample",
            Event::LinkState { .. } => "LinkState",
            _ => "Other",
        };
        *h.entry(k).or_insert(0u64) += 1;
    }
    println!("pending {} {:?}", w.q.pending(), h);
}
