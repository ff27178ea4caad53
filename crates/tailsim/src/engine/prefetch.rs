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

/// Start loading the `lines` consecutive cache lines from `p` (a record that spans several).
#[inline(always)]
pub fn prefetch_lines(p: *const u8, lines: usize) {
    for line in 0..lines {
        prefetch(p.wrapping_add(64 * line));
    }
}

/// The size of the last-level cache in bytes, as Linux reports it (the largest `cache/index*/size` of CPU 0);
/// 32 MiB where it cannot be read. Read once.
pub fn last_level_cache_bytes() -> usize {
    static LLC: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LLC.get_or_init(|| {
        let sizes = (0..8).filter_map(|i| {
            let path = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
            parse_cache_size(std::fs::read_to_string(path).ok()?.trim())
        });
        sizes.max().unwrap_or(32 << 20)
    })
}

/// The largest last-level cache the deep prefetch stages trust (`deep_prefetch_from`).
const DEEP_PREFETCH_CAP: usize = 32 << 20;

/// The working set beyond which the run loop prefetches a packet-hop's whole chain (sim/ahead.rs,
/// `prefetch_ahead`): the last-level cache as Linux reports it, but never more than 32 MiB.
///
/// Why the cap: what counts is how much of that cache one simulating thread gets at a cache's latency, and a
/// virtual machine may report its host's whole cache. Measured on two 2-core VMs (docs/performance-log.md,
/// change 27): an AMD EPYC reporting 32 MiB gains from the deep stages at 184 MB of packets and ports
/// (+40 %) and loses below 32 MB (−3 to −10 % at 20 MB); an Intel Xeon reporting 480 MiB never turned them
/// on, and forced on they gained +9 to +19 % at 184 MB, +3 % at 20 MB and lost 8 % at 128 hosts (2.5 MB).
/// Capped at 32 MiB both get the gain at scale and neither loses at 128 hosts.
pub fn deep_prefetch_from() -> usize {
    deep_threshold(last_level_cache_bytes())
}

fn deep_threshold(last_level_cache: usize) -> usize {
    last_level_cache.min(DEEP_PREFETCH_CAP)
}

/// "32768K", "1M", "512" (bytes) as sysfs writes a cache's size.
fn parse_cache_size(s: &str) -> Option<usize> {
    let (digits, unit) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<usize>().ok().map(|n| n * unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse_as_sysfs_writes_them() {
        assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
        assert_eq!(parse_cache_size("1M"), Some(1 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("x"), None);
        assert_eq!(parse_cache_size(""), None);
        assert!(last_level_cache_bytes() >= 1 << 10);
        assert!(deep_prefetch_from() <= last_level_cache_bytes());
    }

    #[test]
    fn the_deep_stages_start_at_the_cache_size_but_never_past_32_mib() {
        assert_eq!(deep_threshold(2 << 20), 2 << 20);
        assert_eq!(deep_threshold(32 << 20), 32 << 20);
        // What an Intel VM reported: its host's whole cache.
        assert_eq!(deep_threshold(480 << 20), 32 << 20);
    }
}
