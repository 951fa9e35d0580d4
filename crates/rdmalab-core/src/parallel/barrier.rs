//! A barrier that spins before it sleeps: a window of a parallel run is a
//! few hundred microseconds of work, too short to pay for a sleep and a
//! wake-up each time; but a thread whose partner was descheduled (a shared
//! machine) must not burn the core the partner needs. A thread that
//! panics poisons the barrier, so its partners stop waiting for it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Spins before sleeping: about 20-50 µs.
const SPINS: u32 = 1 << 14;

pub(crate) struct SpinBarrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
    poisoned: AtomicBool,
}

/// The payload of a panic raised in a thread because a partner panicked:
/// the partner's own panic is the one to report.
pub(crate) struct PartnerPanicked;

/// Poisons the barrier if its thread unwinds while holding it.
pub(crate) struct PoisonOnPanic<'a>(pub &'a SpinBarrier);

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poison();
        }
    }
}

impl SpinBarrier {
    pub fn new(n: usize) -> SpinBarrier {
        SpinBarrier {
            n,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            poisoned: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        // The mutex guards nothing but the wake-up: a poisoned one is fine.
        self.sleep.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A thread panicked: wake everyone waiting, and make them panic too.
    pub fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
        let _g = self.lock();
        self.wake.notify_all();
    }

    fn check(&self) {
        if self.poisoned.load(Ordering::Acquire) {
            std::panic::panic_any(PartnerPanicked);
        }
    }

    /// Wait until all `n` threads have called `wait`; panics with
    /// [`PartnerPanicked`] if one of them panicked instead.
    pub fn wait(&self) {
        self.check();
        let gen = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            // Under the lock, so a sleeper cannot miss the change.
            let _g = self.lock();
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
        let mut g = self.lock();
        while self.generation.load(Ordering::Acquire) == gen {
            if self.poisoned.load(Ordering::Acquire) {
                drop(g);
                std::panic::panic_any(PartnerPanicked);
            }
            g = self.wake.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_panicking_thread_releases_its_waiting_partners() {
        let barrier = SpinBarrier::new(3);
        let (done, report) = mpsc::channel();
        std::thread::scope(|s| {
            for i in 0..3 {
                let (barrier, done) = (&barrier, done.clone());
                s.spawn(move || {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let _guard = PoisonOnPanic(barrier);
                        barrier.wait();
                        if i == 2 {
                            // Long enough for the others to go to sleep.
                            std::thread::sleep(Duration::from_millis(50));
                            panic!("partition {i} failed");
                        }
                        barrier.wait();
                    }));
                    let partner = r
                        .as_ref()
                        .err()
                        .is_some_and(|p| p.downcast_ref::<PartnerPanicked>().is_some());
                    done.send((i, r.is_err(), partner)).expect("test alive");
                });
            }
            let mut got: Vec<_> = (0..3)
                .map(|_| {
                    report
                        .recv_timeout(Duration::from_secs(20))
                        .expect("every thread returns; none waits forever")
                })
                .collect();
            got.sort();
            assert_eq!(
                got,
                vec![(0, true, true), (1, true, true), (2, true, false)]
            );
        });
    }
}
