//! Switches the synchronisation primitives between `std` and `loom`, as tokio's `loom` module does.
//!
//! Production code imports `Mutex`, `Condvar` and the atomics only through this module, so that
//! `RUSTFLAGS="--cfg loom"` lets loom explore every interleaving of the critical sections.
//! `Arc` stays `std::sync::Arc` in both builds: it carries ownership only (no protocol state
//! hides in a reference count), and `std`'s `Arc` supports `Arc<dyn Trait>` coercion, which
//! loom's does not. Java monitors never poison, so a poisoned `std` lock is entered anyway: the
//! panic that poisoned it is already reported on its own thread.

pub(crate) use std::sync::Arc;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::{Condvar as CondvarImpl, Mutex as MutexImpl, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
use loom::sync::{Condvar as CondvarImpl, Mutex as MutexImpl, MutexGuard};

/// A mutual-exclusion lock: Java's `synchronized (monitor)`, without poisoning.
#[derive(Debug)]
pub(crate) struct Mutex<T>(MutexImpl<T>);

/// The guard of a [`Mutex`].
pub(crate) type Guard<'a, T> = MutexGuard<'a, T>;

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(MutexImpl::new(value))
    }

    pub(crate) fn lock(&self) -> Guard<'_, T> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// [`lock`](Self::lock), telling the calling thread's wait hook first, with `site` (the
    /// lock's own, so that a driver can tell it from other waits), when another thread holds
    /// the lock: a driver that stopped that thread at a pause point inside its critical section
    /// learns that this call blocked. Unlike a condition wait, the report runs without the lock;
    /// the holder may release it meanwhile.
    pub(crate) fn lock_reporting(&self, site: &'static std::panic::Location<'static>) -> Guard<'_, T> {
        #[cfg(not(loom))]
        match self.0.try_lock() {
            Ok(guard) => return guard,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                crate::pause_point::waiting(site);
            }
        }
        #[cfg(loom)]
        let _ = site;
        self.lock()
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

/// A condition variable: Java's `monitor.wait()` / `monitor.notifyAll()`.
#[derive(Debug)]
pub(crate) struct Condvar(CondvarImpl);

impl Condvar {
    pub(crate) fn new() -> Self {
        Self(CondvarImpl::new())
    }

    /// Parks until notified. The calling thread's wait hook is told first, with the caller's
    /// location, so that a driver knows the call blocked there.
    #[track_caller]
    pub(crate) fn wait<'a, T>(&self, guard: Guard<'a, T>) -> Guard<'a, T> {
        crate::pause_point::waiting(std::panic::Location::caller());
        self.0.wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}

/// Java's `CountDownLatch(1)`: opened once, awaited by any number of threads.
#[derive(Debug)]
pub(crate) struct Latch {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Latch {
    pub(crate) fn new() -> Self {
        Self {
            open: Mutex::new(false),
            opened: Condvar::new(),
        }
    }

    /// `countDown()`: opens the latch; idempotent.
    pub(crate) fn count_down(&self) {
        *self.open.lock() = true;
        self.opened.notify_all();
    }

    /// `getCount() == 0`.
    pub(crate) fn is_open(&self) -> bool {
        *self.open.lock()
    }

    /// `await()`: blocks the calling thread until the latch is open. Callers hold no lock. A
    /// wait is reported at the caller's location.
    #[track_caller]
    pub(crate) fn wait(&self) {
        let site = std::panic::Location::caller();
        let mut open = self.open.lock();
        while !*open {
            crate::pause_point::waiting(site);
            open = self
                .opened
                .0
                .wait(open)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::pause_point::set_thread_wait_hook;

    #[test]
    fn a_thread_that_parks_on_a_latch_says_so_with_the_callers_location() {
        let latch = Arc::new(Latch::new());
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let latch = latch.clone();
            std::thread::spawn(move || {
                set_thread_wait_hook(Some(Box::new(move |site| {
                    let _ = tx.send((site.file(), site.line()));
                })));
                latch.wait();
            })
        };
        // The report arrives before the thread parks, however slow it is: no clock involved.
        let (file, line) = rx.recv().expect("the waiter reports that it parks");
        assert!(file.ends_with("sync.rs"), "{file}");
        assert!(line > 100, "the test's own call site, not Latch::wait: line {line}");
        assert!(!waiter.is_finished());
        latch.count_down();
        waiter.join().unwrap();
    }

    #[test]
    fn an_open_latch_does_not_report_a_wait() {
        let latch = Latch::new();
        latch.count_down();
        let (tx, rx) = std::sync::mpsc::channel();
        set_thread_wait_hook(Some(Box::new(move |site| {
            let _ = tx.send(site.line());
        })));
        latch.wait();
        set_thread_wait_hook(None);
        assert!(rx.try_recv().is_err());
    }
}
