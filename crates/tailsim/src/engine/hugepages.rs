//! The allocator of the `tailsim` binary and the Python extension: the system allocator, with every block
//! of 4 MiB or more marked for transparent huge pages (`madvise(MADV_HUGEPAGE)`), and so is the heap's
//! main arena as it grows, where the small blocks are.
//!
//! Why: a large fabric's packets, ports and event blocks are tens of megabytes read at random, and with 4 KB
//! pages nearly every read past the caches also misses the TLB (whose 2,048 entries cover 8 MB), a page walk
//! that in a virtual machine costs several memory reads of its own. Linux distributions commonly ship THP
//! in `madvise` mode (this machine's, Debian's), where only memory marked so gets 2 MB pages. Measured
//! (docs/performance-log.md, change 13): +2–7 % packet-hops per CPU second at 1,024 hosts, up to +5 % at
//! 5,488, nothing at 128 (everything is in the caches).
//!
//! Two more (docs/performance-log.md, change 40; +9–11 % at 1,024 hosts, +5–9 % at 5,488, the same memory
//! and speed at 128):
//! - A block aligned beyond malloc's 16 bytes (the packets' arena) that grows is moved to a new block by
//!   `System`, which copied it there before `advise` could mark the new one: its old part stayed on small
//!   pages. `realloc` now marks the new block before the copy.
//! - The heap's small blocks (the wires' and queues' rings, NIC queues, flows' records) come from glibc's
//!   main arena, which grows by `brk`; glibc marks it only when the process starts with
//!   `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, which a program cannot set for itself. So each allocation
//!   looks at the heap's end (`sbrk(0)`, a read of a variable); once the heap has grown by 16 MiB (a large
//!   fabric), the part already touched is copied onto huge pages (`MADV_COLLAPSE`), the arena grows 16 MiB
//!   at a time, and each growth's whole huge pages are marked before most of them are touched (46 of 53 MB
//!   at 5,488 hosts; the tunable, whose arena grows in aligned steps marked before glibc writes in them,
//!   all 53, for a speed within a few percent of this).
//!
//! Nothing else changes: hints the kernel may ignore (THP `never`, other systems), which can never alter a
//! result.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// `#[global_allocator] static A: tailsim::engine::HugePageAlloc = tailsim::engine::HugePageAlloc;`
pub struct HugePageAlloc;

const HUGE_PAGE: usize = 2 << 20;
/// The size from which a block is marked (`advise`): large enough to hold two huge pages.
const MARKED_FROM: usize = 2 * HUGE_PAGE;
/// The alignment glibc's `malloc` gives every block on 64-bit Linux (`System` calls it for no more).
const MALLOC_ALIGN: usize = 16;

// SAFETY: every call is forwarded to `System` with the same arguments, but for the growth of a block aligned
// beyond malloc's own, which does what `System` does (a new block, the copy, the old one freed); `advise`
// and `advise_heap` only pass ranges inside blocks or the heap to the kernel as hints.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        advise_heap();
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        advise_heap();
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) }
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() > MALLOC_ALIGN && new_size >= MARKED_FROM {
            // `System` moves a block aligned beyond malloc's own (the packets' arena: 64 bytes) to a new one
            // and copies it there before returning it, so the copy would land on small pages before `advise`
            // could mark them. The same steps, with the new block marked before the copy.
            // SAFETY: the caller's contract: `p` is a live block of `layout`, `new_size` is non-zero and
            // valid for its alignment.
            unsafe {
                let new = Layout::from_size_align_unchecked(new_size, layout.align());
                let q = self.alloc(new);
                if !q.is_null() {
                    std::ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                    self.dealloc(p, layout);
                }
                return q;
            }
        }
        let q = unsafe { System.realloc(p, layout, new_size) };
        advise(q, new_size);
        advise_heap();
        q
    }
}

/// Mark the whole huge pages inside [p, p + size) for THP, if the block is at least `MARKED_FROM`.
#[inline]
fn advise(p: *mut u8, size: usize) {
    if p.is_null() || size < MARKED_FROM {
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

/// The heap's growth past which `advise_heap` starts marking it: below, it holds a small run's few
/// megabytes, which the caches and the TLB (8 MB of small pages) cover, and huge pages would only add memory.
const LARGE_HEAP: usize = 16 << 20;
/// How far past a request glibc's main arena grows once it is large (`M_TOP_PAD`; 128 KiB by default):
/// growths of several whole huge pages, most of which `advise_heap` marks before anything touches them
/// (glibc writes the new top's header first, near the growth's start).
const TOP_PAD: usize = 16 << 20;

/// The heap's end (a huge page's start) at `advise_heap`'s first look; 0 before it.
static HEAP_FROM: AtomicUsize = AtomicUsize::new(0);
/// The heap's end (a huge page's start) up to which `advise_heap` has marked it; 0 before it is large.
static HEAP_MARKED: AtomicUsize = AtomicUsize::new(0);

/// Once the main arena has grown by `LARGE_HEAP`, mark for THP the whole huge pages it has grown by since
/// the last look. What lies below the first mark was touched already (a fabric's records, built first): the
/// kernel copies it onto huge pages then, once. A heap that shrank is marked again from its new end as it
/// regrows (the kernel's region for the new part does not inherit the mark).
#[inline]
fn advise_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `sbrk(0)` moves nothing: it returns the heap's current end (glibc keeps it in a variable).
        // It is read without the arena's lock: while another thread grows the heap it may be the end before
        // that growth, which only delays the growth's mark to the next look.
        let end = unsafe { libc::sbrk(0) } as usize;
        if end == usize::MAX {
            return;
        }
        let top = end & !(HUGE_PAGE - 1);
        let marked = HEAP_MARKED.load(Ordering::Relaxed);
        if top == marked {
            return;
        }
        // Another thread that looks at the same moment marks the same pages or sets the same pad: harmless.
        if marked == 0 {
            let from = HEAP_FROM.load(Ordering::Relaxed);
            if from == 0 {
                HEAP_FROM.store(top, Ordering::Relaxed);
            } else if top >= from + LARGE_HEAP {
                // SAFETY: a setting of glibc's allocator, read at its next growth; and the heap from the first
                // whole huge page above the first look's end to `top`, inside the heap, put on huge pages
                // now (copied: `MADV_COLLAPSE`, Linux 6.1 and later; elsewhere a refusal, ignored).
                unsafe {
                    libc::mallopt(libc::M_TOP_PAD, TOP_PAD as libc::c_int);
                    let start = from + HUGE_PAGE;
                    libc::madvise(start as *mut libc::c_void, top - start, libc::MADV_COLLAPSE);
                }
                HEAP_MARKED.store(top, Ordering::Relaxed);
            }
            return;
        }
        HEAP_MARKED.store(top, Ordering::Relaxed);
        if top > marked {
            // SAFETY: [marked, top) lies inside the heap (below its end); MADV_HUGEPAGE changes no contents
            // and fails harmlessly where THP is not available. The result is deliberately ignored.
            unsafe {
                libc::madvise(marked as *mut libc::c_void, top - marked, libc::MADV_HUGEPAGE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// KiB of huge pages in the mappings that overlap [p, p + len) (/proc/self/smaps: marking part of a
    /// mapping splits it); None where THP is off or unknown.
    #[cfg(target_os = "linux")]
    fn huge_kib_in(p: *const u8, len: usize) -> Option<u64> {
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
        if thp.contains("[never]") {
            return None;
        }
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let (start, end) = (p as usize, p as usize + len);
        let (mut inside, mut kib) = (false, 0);
        for line in smaps.lines() {
            let range = line.split_once(' ').and_then(|(r, _)| r.split_once('-'));
            if let Some((lo, hi)) = range {
                if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                    inside = lo < end && start < hi;
                    continue;
                }
            }
            if let Some(kb) = line.strip_prefix("AnonHugePages:").filter(|_| inside) {
                kib += kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
            }
        }
        Some(kib)
    }

    /// A block aligned beyond malloc's own (the packets' arena) that grows is moved and copied by the
    /// allocator: the copy must land on huge pages. `System` copied it before `advise` marked the new
    /// block, so the copied half stayed on small pages (`htsim-p2-1024` 9 % slower; docs/performance-log.md,
    /// change 40).
    #[cfg(target_os = "linux")]
    #[test]
    fn an_aligned_block_that_grows_is_copied_onto_huge_pages() {
        let a = HugePageAlloc;
        let (old, new) = (16 << 20, 32 << 20);
        unsafe {
            let p = a.alloc(Layout::from_size_align(old, 64).unwrap());
            p.write_bytes(0x5A, old);
            let q = a.realloc(p, Layout::from_size_align(old, 64).unwrap(), new);
            assert!(std::slice::from_raw_parts(q, old).iter().all(|&b| b == 0x5A));
            if let Some(kib) = huge_kib_in(q, old) {
                // The copied 16 MB (less the partial huge pages at the block's two ends).
                assert!(kib >= 12 << 10, "{kib} KiB of the copied 16 MiB on huge pages");
            }
            a.dealloc(q, Layout::from_size_align(new, 64).unwrap());
        }
    }

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
