//! Software prefetch: a hint to start loading a cache line now that the simulation will read a few events
//! later. It never changes a result (nothing is read or written), only when memory arrives.
//!
//! Why: at 1,024 hosts and more the packets in flight, the ports and the wires no longer fit in the caches,
//! and a packet-hop waits on a chain of dependent misses (the port, then its wire's head, then the packet).
//! The event queue knows the next events of the current bucket, so the run loop walks that chain for them a
//! stage per event ahead (`World::prefetch_ahead`), and each load is in flight while earlier events run.

/// Start loading the cache line that holds `p`.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it does not dereference `p` and cannot fault, whatever `p` is.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
