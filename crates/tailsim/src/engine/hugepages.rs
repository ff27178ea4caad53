//! The allocator of the `tailsim` binary and the Python extension: the system allocator, with every block
//! of 4 MiB or more marked for transparent huge pages (`madvise(MADV_HUGEPAGE)`).
//!
//! Why: a large fabric's packets, ports and event blocks are tens of megabytes read at random, and with 4 KB
//! pages nearly every read past the caches also misses the TLB (whose 2,048 entries cover 8 MB), a page walk
//! that in a virtual machine costs several memory reads of its own. Linux distributions commonly ship THP
//! in `madvise` mode (this machine's, Debian's), where only memory marked so gets 2 MB pages. Measured
//! (docs/performance-log.md, change 13): +2–7 % packet-hops per CPU second at 1,024 hosts, up to +5 % at
//! 5,488, nothing at 128 (everything is in the caches). The heap's small blocks (wires, NIC queues) stay on 4 KB pages:
//! glibc marks those too only when the process starts with `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`
//! (another 5–10 % at scale; a user's choice). Nothing else changes: a hint the kernel may ignore (THP
//! `never`, other systems), which can never alter a result.

use std::alloc::{GlobalAlloc, Layout, System};

/// `#[global_allocator] static A: tailsim::engine::HugePageAlloc = tailsim::engine::HugePageAlloc;`
pub struct HugePageAlloc;

const HUGE_PAGE: usize = 2 << 20;

// SAFETY: every call is forwarded to `System` with the same arguments; `advise` only passes a range inside
// the block just returned to the kernel as a hint.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) }
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        advise(q, new_size);
        q
    }
}

/// Mark the whole huge pages inside [p, p + size) for THP, if the block is large enough to hold two.
#[inline]
fn advise(p: *mut u8, size: usize) {
    if p.is_null() || size < 2 * HUGE_PAGE {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let start = (p as usize).next_multiple_of(HUGE_PAGE);
        let end = (p as usize + size) & !(HUGE_PAGE - 1);
        if end > start {
            // SAFETY: [start, end) lies inside the block just allocated; MADV_HUGEPAGE changes no contents
            // and fails harmlessly (EINVAL) where THP is not available. The result is deliberately ignored.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_small_and_large_are_usable_and_keep_their_contents_through_realloc() {
        let a = HugePageAlloc;
        for size in [16usize, 4096, 5 << 20, 9 << 20] {
            let layout = Layout::from_size_align(size, 64).unwrap();
            unsafe {
                let p = a.alloc_zeroed(layout);
                assert!(!p.is_null());
                assert!(std::slice::from_raw_parts(p, size).iter().all(|&b| b == 0));
                p.write_bytes(0xA5, size);
                let q = a.realloc(p, layout, size * 2);
                assert!(std::slice::from_raw_parts(q, size).iter().all(|&b| b == 0xA5));
                a.dealloc(q, Layout::from_size_align(size * 2, 64).unwrap());
            }
        }
    }
}
