//! A barrier that spins before it sleeps: a window of a parallel run is a
//! few hundred microseconds of work, too short to pay for a futex wake-up.

use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) struct SpinBarrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinBarrier {
    pub fn new(n: usize) -> SpinBarrier {
        SpinBarrier {
            n,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    /// Wait until all `n` threads have called `wait`.
    pub fn wait(&self) {
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == gen {
            if spins < 1 << 14 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                // More threads than cores: let the one we wait for run.
                std::thread::yield_now();
            }
        }
    }
}
