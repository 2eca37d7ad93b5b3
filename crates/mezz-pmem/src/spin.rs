//! The clock of the emulated cost's spin-waits: monotonic nanoseconds since the first use,
//! read from the time-stamp counter where it is invariant (x86-64: about 9 ns a read on
//! this project's test host, against 22 ns for `Instant::now`), else from `Instant`.
//!
//! Owns: the process-wide calibration of the counter against `Instant` (4 ms of spinning at
//! the first use) and of what a wait costs beyond its length (its first read of the
//! counter, the last read's overshoot, the closing `lfence`), which every wait takes off.
//! Invariant: [`Clock::now_ns`] never goes backwards within a thread.
//!
//! Thread-safety: [`Clock`] is plain `Copy` data (the calibration is a `OnceLock`); any
//! thread.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How the counter maps to nanoseconds.
#[derive(Clone, Copy, Debug)]
struct Tsc {
    /// Counter value at the epoch.
    epoch: u64,
    /// Ticks a wait costs beyond its length (its first read of the counter, the last
    /// read's overshoot, the closing `lfence`): a spin ends this much early.
    read_ticks: u64,
    /// Nanoseconds per tick, fixed point with 32 fraction bits.
    ns_per_tick: u64,
    /// Ticks per nanosecond, fixed point with 32 fraction bits.
    ticks_per_ns: u64,
}

/// The clock: its epoch and, where usable, the counter's calibration. `Copy`, so that each
/// region keeps its own copy beside its counters (one memory page fewer for a charge to
/// touch: under random accesses every page touched is a TLB miss, tens of ns in a VM).
/// Public so that a measurement can spin exactly as a charge does (the calibration's
/// spaced pointer chase).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    epoch: Instant,
    tsc: Option<Tsc>,
}

impl Clock {
    /// The process's clock (calibrated at the first call).
    #[must_use]
    pub fn get() -> Clock {
        static CLOCK: OnceLock<Clock> = OnceLock::new();
        *CLOCK.get_or_init(|| {
            let epoch = Instant::now();
            Clock {
                epoch,
                tsc: calibrate_tsc(),
            }
        })
    }

    /// A clock on `Instant` alone, without the calibration's 4 ms (for regions that never
    /// wait on it).
    pub(crate) fn uncalibrated() -> Clock {
        Clock {
            epoch: Instant::now(),
            tsc: None,
        }
    }
}

/// The time-stamp counter, read after every earlier instruction completed (`lfence`
/// first): a read charge's wait starts once the access it charges for has its bytes, so
/// the emulated latency adds to the host's own instead of overlapping a load still in
/// flight (a plain `rdtsc` lets the spin run beside it).
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn rdtsc() -> u64 {
    // SAFETY: `lfence` and `rdtsc` have no preconditions and touch no memory (one orders
    // execution, the other reads the time-stamp counter); both exist on every x86-64 CPU
    // (SSE2 is part of the baseline).
    unsafe {
        std::arch::x86_64::_mm_lfence();
        std::arch::x86_64::_rdtsc()
    }
}

/// The time-stamp counter without waiting for earlier instructions: a write charge starts
/// at once (its stores need not have left the core; an `lfence` would wait for their
/// address translation, which costs tens of ns after a TLB miss).
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn rdtsc_unordered() -> u64 {
    // SAFETY: `rdtsc` has no preconditions and touches no memory.
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// The counter's rate against `Instant`, when the CPU says it is invariant (constant rate,
/// running in every power state).
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn calibrate_tsc() -> Option<Tsc> {
    let max_ext = std::arch::x86_64::__cpuid(0x8000_0000).eax;
    if max_ext < 0x8000_0007 || std::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) == 0 {
        return None;
    }
    // An `Instant` and the counter read together: bracketed by two counter reads close to
    // each other (a pair split by a preemption would skew the rate).
    let pair = || {
        for _ in 0..1000 {
            let a = rdtsc();
            let i = Instant::now();
            let b = rdtsc();
            if b.wrapping_sub(a) < 2000 {
                return Some((i, a / 2 + b / 2));
            }
        }
        None
    };
    let (i0, t0) = pair()?;
    while i0.elapsed() < Duration::from_millis(4) {
        std::hint::spin_loop();
    }
    let (i1, t1) = pair()?;
    let ns = u64::try_from((i1 - i0).as_nanos()).ok()?;
    let ticks = t1.checked_sub(t0)?;
    if ns == 0 || ticks == 0 {
        return None;
    }
    // What a wait costs beyond its length: its first read of the counter, the last read's
    // overshoot and the closing `lfence` (the least of a few batches of 100 ns waits).
    let wait = u64::try_from(u128::from(ticks) * 100 / u128::from(ns)).ok()?;
    let read_ticks = (0..8)
        .map(|_| {
            let a = rdtsc();
            for _ in 0..64 {
                let until = rdtsc() + wait;
                while rdtsc() < until {}
                // SAFETY: `lfence` has no preconditions and touches no memory.
                unsafe { std::arch::x86_64::_mm_lfence() };
            }
            (rdtsc().saturating_sub(a) / 64).saturating_sub(wait)
        })
        .min()
        .unwrap_or(0);
    Some(Tsc {
        epoch: t0,
        read_ticks,
        ns_per_tick: u64::try_from((u128::from(ns) << 32) / u128::from(ticks)).ok()?,
        ticks_per_ns: u64::try_from((u128::from(ticks) << 32) / u128::from(ns)).ok()?,
    })
}

#[cfg(not(all(target_arch = "x86_64", not(miri))))]
fn calibrate_tsc() -> Option<Tsc> {
    None
}

impl Clock {
    /// Nanoseconds since the clock's epoch. `ordered`: read only once every earlier
    /// instruction (a load being charged) has completed.
    #[must_use]
    pub fn now_ns(&self, ordered: bool) -> u64 {
        let c = self;
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if let Some(t) = &c.tsc {
            let now = if ordered { rdtsc() } else { rdtsc_unordered() };
            let ticks = now.saturating_sub(t.epoch);
            return ((u128::from(ticks) * u128::from(t.ns_per_tick)) >> 32) as u64;
        }
        let _ = ordered;
        u64::try_from(c.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Spins until [`Clock::now_ns`] reaches `deadline`.
    pub fn spin_until_ns(&self, deadline: u64) {
        let c = self;
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if let Some(t) = &c.tsc {
            let ticks = (u128::from(deadline) * u128::from(t.ticks_per_ns)) >> 32;
            let until = t
                .epoch
                .saturating_add(u64::try_from(ticks).unwrap_or(u64::MAX))
                .saturating_sub(t.read_ticks);
            // No `pause` in this loop: it can take longer than the wait's resolution; the
            // `lfence` of each read already keeps the loop from flooding the pipeline.
            while rdtsc() < until {}
            // Nothing after the wait starts before it is over: without this, a predicted
            // exit of the loop lets the caller's next loads run (and fetch their lines)
            // while it still spins, hiding part of the host's own latency behind the
            // emulated one.
            // SAFETY: `lfence` has no preconditions and touches no memory.
            unsafe { std::arch::x86_64::_mm_lfence() };
            return;
        }
        let until = c.epoch + Duration::from_nanos(deadline);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_moves_forward_and_spins_past_deadlines() {
        let c = Clock::get();
        let a = c.now_ns(true);
        c.spin_until_ns(a + 10_000);
        let b = c.now_ns(false);
        // The spin ends early by what its own reads of the counter cost (`read_ticks`, so
        // that a caller's whole wait is the deadline), and within the rounding of the
        // counter's conversion. (A fixed 2 ns failed when calibration under load measured
        // a read at 6 ns: 4072175 -> 4082169.)
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        let early = c.tsc.as_ref().map_or(0, |t| {
            ((u128::from(t.read_ticks) * u128::from(t.ns_per_tick)) >> 32) as u64
        });
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        let early = 0;
        assert!(b + early + 2 >= a + 10_000, "{a} {b} (early {early})");
        // A deadline in the past returns at once.
        c.spin_until_ns(0);
    }
}
