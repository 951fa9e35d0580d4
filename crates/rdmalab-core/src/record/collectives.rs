//! The collectives' tables: one row per collective and iteration
//! (`collectives`), and one per rank of each (`collective_ranks`), from
//! when each flow of the dependency graph was posted and arrived.

use crate::time::Time;
use crate::workload::graph::NONE;
use crate::world::World;
use std::io::{self, Write};

/// A rank's part in one instance: first post (or compute start), last
/// arrival (or compute end), the arrivals and compute phases expected and
/// seen, and its compute time inside the instance (a pipeline's passes).
#[derive(Clone, Copy)]
struct RankSpan {
    launched: Time,
    done: Time,
    inbound: u32,
    arrived: u32,
    compute: u64,
}

impl World {
    /// Per rank of every instance, in (instance, rank) order.
    fn rank_spans(&self) -> Vec<Vec<RankSpan>> {
        let g = &self.workload.graph;
        let Some(run) = self.graph_run.as_deref() else {
            return Vec::new();
        };
        let blank = RankSpan {
            launched: Time::NEVER,
            done: Time::ZERO,
            inbound: 0,
            arrived: 0,
            compute: 0,
        };
        let mut spans: Vec<Vec<RankSpan>> = g
            .instances
            .iter()
            .map(|i| vec![blank; self.workload.collectives[i.collective as usize].ranks.len()])
            .collect();
        for (f, &inst) in g.flow_instance.iter().enumerate() {
            if inst == NONE {
                continue;
            }
            let (s, d) = g.flow_ranks[f];
            let row = &mut spans[inst as usize];
            row[s as usize].launched = row[s as usize].launched.min(run.posted[f]);
            let r = &mut row[d as usize];
            r.inbound += 1;
            if run.arrived[f] != Time::NEVER {
                r.arrived += 1;
                r.done = r.done.max(run.arrived[f]);
            }
        }
        for (n, &(inst, rank)) in g.node_owner.iter().enumerate() {
            if inst == NONE {
                continue;
            }
            let gap = g.nodes[n].gap;
            let r = &mut spans[inst as usize][rank as usize];
            r.inbound += 1;
            r.compute += gap.ps();
            let fired = run.fired[n];
            if fired != Time::NEVER {
                r.arrived += 1;
                r.launched = r.launched.min(Time(fired.ps() - gap.ps()));
                r.done = r.done.max(fired);
            }
        }
        spans
    }

    /// `collectives`: per collective and iteration, when its first flow was
    /// posted and its last arrived, and nccl-tests' algorithm and bus
    /// bandwidths over that time (empty until every flow has arrived).
    pub fn write_collectives_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "collective,op,iteration,ranks,bytes,flows,flows_arrived,launched_ps,done_ps,time_ps,algbw_bps,busbw_bps")?;
        let Some(run) = self.graph_run.as_deref() else {
            return Ok(());
        };
        for (i, inst) in self.workload.graph.instances.iter().enumerate() {
            let c = &self.workload.collectives[inst.collective as usize];
            let r = &run.instances[i];
            write!(
                w,
                "{},{},{},{},{},{},{},",
                c.name,
                c.op.name(),
                inst.iteration,
                c.ranks.len(),
                c.bytes,
                inst.flows,
                r.arrived
            )?;
            let done = r.arrived == inst.flows && r.fired == inst.gates;
            match (r.first_post, done, c.op.bus_factor(c.ranks.len())) {
                (Time::NEVER, _, _) => writeln!(w, ",,,,")?,
                (start, false, _) => writeln!(w, "{},,,,", start.ps())?,
                // A pipeline's time is mostly compute: no bandwidth to speak of.
                (start, true, None) => {
                    let t = r.last_arrival - start;
                    writeln!(w, "{},{},{},,", start.ps(), r.last_arrival.ps(), t.ps())?
                }
                (start, true, Some(factor)) => {
                    let t = r.last_arrival - start;
                    let algbw = c.bytes as f64 * 8.0 / (t.ps().max(1) as f64 / 1e12);
                    writeln!(
                        w,
                        "{},{},{},{:.0},{:.0}",
                        start.ps(),
                        r.last_arrival.ps(),
                        t.ps(),
                        algbw,
                        algbw * factor
                    )?;
                }
            }
        }
        Ok(())
    }

    /// `collective_ranks`: per collective, iteration and rank, its compute
    /// phase, when it posted its first step and when its last data arrived
    /// (a pipeline stage: its passes' sum, its first pass's start, and the
    /// end of its last pass or data).
    pub fn write_collective_ranks_csv(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(
            w,
            "collective,iteration,rank,host_name,compute_ps,launched_ps,done_ps,comm_ps"
        )?;
        let spans = self.rank_spans();
        let g = &self.workload.graph;
        for (i, row) in spans.iter().enumerate() {
            let inst = &g.instances[i];
            let c = &self.workload.collectives[inst.collective as usize];
            for (rank, s) in row.iter().enumerate() {
                write!(
                    w,
                    "{},{},{},{},",
                    c.name, inst.iteration, rank, self.topo.nodes[c.ranks[rank] as usize].name
                )?;
                if s.launched == Time::NEVER {
                    writeln!(w, ",,,")?;
                    continue;
                }
                let compute = if inst.gates > 0 {
                    // A pipeline's passes are inside it: their sum.
                    s.compute
                } else {
                    // The compute phase before it: its launch gate's length.
                    g.nodes[inst.launch[rank] as usize].gap.ps()
                };
                write!(w, "{},{},", compute, s.launched.ps())?;
                if s.arrived == s.inbound {
                    // An all-to-all rank's data can all be in before a late rank posts: 0.
                    let comm = s.done.ps().saturating_sub(s.launched.ps());
                    writeln!(w, "{},{}", s.done.ps(), comm)?;
                } else {
                    writeln!(w, ",")?;
                }
            }
        }
        Ok(())
    }
}
