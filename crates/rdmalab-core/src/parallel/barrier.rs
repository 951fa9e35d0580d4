//! A barrier that spins before it sleeps: a window of a parallel run is a
//! few hundred microseconds of work, too short to pay for a sleep and a
//! wake-up each time; but a thread whose partner was descheduled (a shared
//! machine) must not burn the core the partner needs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// Spins before sleeping: about 20-50 µs.
const SPINS: u32 = 1 << 14;

pub(crate) struct SpinBarrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
}

impl SpinBarrier {
    pub fn new(n: usize) -> SpinBarrier {
        SpinBarrier {
            n,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Wait until all `n` threads have called `wait`.
    pub fn wait(&self) {
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            // Under the lock, so a sleeper cannot miss the change.
            let _g = self.sleep.lock().expect("barrier lock");
            self.generation.fetch_add(1, Ordering::Release);
            self.wake.notify_all();
            return;
        }
        for _ in 0..SPINS {
            if self.generation.load(Ordering::Acquire) != gen {
                return;
            }
            std::hint::spin_loop();
        }
        let mut g = self.sleep.lock().expect("barrier lock");
        while self.generation.load(Ordering::Acquire) == gen {
            g = self.wake.wait(g).expect("barrier lock");
        }
    }
}
