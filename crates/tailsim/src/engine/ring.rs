//! A FIFO of small `Copy` slots for the hot path: a wire's packets behind its head, a class queue's packets, a
//! NIC flow's packets.
//!
//! Why not `VecDeque`: its slot index wraps by a comparison and a subtraction, its `push_back` is a call
//! (out of line in the release build), and its header is 32 bytes. Here the capacity is a power of two, the
//! two ends are free-running `u32` counters whose low bits index the buffer (no wrap test), the growth is
//! the only thing out of line, and the header is 24 bytes, so a port's eight class queues fit in three lines
//! instead of four (docs/performance-log.md, change 33).

/// A first-in first-out queue of `T` in a ring of power-of-two capacity, grown by doubling (a run allocates
/// only while a queue's high-water mark grows).
pub struct Ring<T> {
    /// The slots; `buf.len()` is zero or a power of two.
    buf: Box<[T]>,
    /// Pops and pushes so far, modulo 2^32: the front is at `head & mask`, the next push at `tail & mask`.
    /// Their difference is the length (at most 2^31, far beyond any queue's memory).
    head: u32,
    tail: u32,
}

const _: () = assert!(std::mem::size_of::<Ring<(u64, u32)>>() == 24);

impl<T> Default for Ring<T> {
    fn default() -> Self {
        Ring { buf: Box::new([]), head: 0, tail: 0 }
    }
}

impl<T: Copy + Default> Ring<T> {
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.tail.wrapping_sub(self.head) as usize
    }
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.head == self.tail
    }
    #[inline(always)]
    fn slot(&self, n: u32) -> usize {
        n as usize & (self.buf.len().wrapping_sub(1))
    }
    /// Slot `n`'s element, in a ring that has slots (every caller has checked that it holds an element, or
    /// has grown it to make room for one): the one way the ring reads or writes a slot.
    ///
    /// Why unchecked: `buf.len()` is then a power of two, so `n & (len - 1) < len`; but the compiler cannot
    /// see that `len` is not zero, and tested the index against it at every push and pop, twice a packet-hop
    /// (the wire and the class queue; docs/performance-log.md, change 50).
    #[inline(always)]
    fn at(&self, n: u32) -> &T {
        debug_assert!(self.buf.len().is_power_of_two());
        // SAFETY: `buf` is empty or of a power-of-two length (`grow` is the only writer of `buf`, and
        // `Default` makes it empty), and not empty here (above), so the masked index is below its length.
        unsafe { self.buf.get_unchecked(self.slot(n)) }
    }
    #[inline(always)]
    fn at_mut(&mut self, n: u32) -> &mut T {
        debug_assert!(self.buf.len().is_power_of_two());
        let i = self.slot(n);
        // SAFETY: as in `at`.
        unsafe { self.buf.get_unchecked_mut(i) }
    }
    #[inline(always)]
    pub fn push_back(&mut self, x: T) {
        if self.len() == self.buf.len() {
            self.grow();
        }
        *self.at_mut(self.tail) = x;
        self.tail = self.tail.wrapping_add(1);
    }
    /// Give the ring its first slots if it has none: a queue that keeps its oldest element elsewhere
    /// (net/queue.rs) allocates when it first holds one, as a queue of this ring alone would, rather than at
    /// its first second element, perhaps long into a run (tests/no_alloc.rs).
    #[inline(always)]
    pub fn ensure_slots(&mut self) {
        if self.buf.is_empty() {
            self.grow();
        }
    }
    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let x = *self.at(self.head);
        self.head = self.head.wrapping_add(1);
        Some(x)
    }
    #[inline(always)]
    pub fn front(&self) -> Option<&T> {
        (!self.is_empty()).then(|| self.at(self.head))
    }
    pub fn back(&self) -> Option<&T> {
        (!self.is_empty()).then(|| self.at(self.tail.wrapping_sub(1)))
    }
    pub fn back_mut(&mut self) -> Option<&mut T> {
        if self.is_empty() {
            return None;
        }
        Some(self.at_mut(self.tail.wrapping_sub(1)))
    }
    /// Front to back.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len() as u32).map(move |k| self.at(self.head.wrapping_add(k)))
    }

    /// Double the capacity (at least 4 slots), the slots in order from the buffer's start.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let len = self.len();
        assert!(len < 1 << 31, "a queue of 2^31 packets");
        let mut buf = vec![T::default(); (2 * len).max(4)].into_boxed_slice();
        for (k, x) in self.iter().enumerate() {
            buf[k] = *x;
        }
        (self.buf, self.head, self.tail) = (buf, 0, len as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// The ring against `VecDeque` over a long mix of pushes and pops that wraps its counters past 2^32 and
    /// grows it while its contents wrap round the buffer's end.
    #[test]
    fn behaves_as_a_deque_through_growth_and_counter_wrap() {
        let mut r: Ring<(u64, u32)> = Ring::default();
        let mut d = VecDeque::new();
        // Start the counters near their wrap.
        (r.head, r.tail) = (u32::MAX - 5, u32::MAX - 5);
        let mut x = 1u64;
        for step in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Phases of growth and of draining, so the ring grows with its contents wrapped.
            let push = if (step / 1000) % 2 == 0 { x >> 62 != 0 } else { x >> 62 == 0 };
            if push {
                r.push_back((x, step as u32));
                d.push_back((x, step as u32));
            } else {
                assert_eq!(r.pop_front(), d.pop_front());
            }
            assert_eq!((r.len(), r.is_empty()), (d.len(), d.is_empty()));
            assert_eq!((r.front(), r.back()), (d.front(), d.back()));
            assert!(r.buf.len().is_power_of_two() || r.buf.is_empty());
        }
        assert!(r.iter().eq(d.iter()));
        if let (Some(a), Some(b)) = (r.back_mut(), d.back_mut()) {
            (a.1, b.1) = (7, 7);
        }
        assert!(r.iter().eq(d.iter()));
        while let Some(v) = d.pop_front() {
            assert_eq!(r.pop_front(), Some(v));
        }
        assert_eq!((r.pop_front(), r.front(), r.back(), r.len()), (None, None, None, 0));
    }
}
