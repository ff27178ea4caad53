//! LinkGuardian's sequence numbers (§5.3.6): 16 bits and an era bit, compared with the era correction; a bit
//! per number; and Eq. 5.1's copies.

/// The sequence space: 16 bits, with an era bit that flips on every wrap.
const N: u32 = 1 << 16;

/// Eq. 5.1: copies of each resend for an effective loss of `target` over a link that loses `p` of its frames
/// (at least one).
pub fn copies_for(p: f64, target: f64) -> u32 {
    ((target.log10() / p.log10()) - 1.0).ceil().max(1.0) as u32
}

/// A 16-bit LinkGuardian sequence number and its era (§5.3.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seq {
    pub n: u16,
    pub era: bool,
}

impl Seq {
    pub fn next(self) -> Seq {
        let (n, wrapped) = self.n.overflowing_add(1);
        Seq { n, era: self.era ^ wrapped }
    }
    pub fn prev(self) -> Seq {
        let (n, wrapped) = self.n.overflowing_sub(1);
        Seq { n, era: self.era ^ wrapped }
    }
    /// The value compared: numbers of different eras are both shifted by N/2 first, which orders them correctly
    /// while they are less than N/2 apart.
    fn key(self, other: Seq) -> (u32, u32) {
        if self.era == other.era {
            (self.n as u32, other.n as u32)
        } else {
            ((self.n as u32 + N / 2) % N, (other.n as u32 + N / 2) % N)
        }
    }
    /// `self` comes after `other`.
    pub fn after(self, other: Seq) -> bool {
        let (a, b) = self.key(other);
        a > b
    }
    /// How many numbers from `earlier` up to `self` (0 if equal).
    pub fn since(self, earlier: Seq) -> u32 {
        (self.n as u32 + N - earlier.n as u32) % N
    }
    fn idx(self) -> usize {
        self.n as usize
    }
}

/// A bit per 16-bit sequence number.
pub(super) struct SeqBits(Vec<u64>);

impl Default for SeqBits {
    fn default() -> SeqBits {
        SeqBits(vec![0; N as usize / 64])
    }
}

impl SeqBits {
    pub(super) fn get(&self, s: Seq) -> bool {
        self.0[s.idx() / 64] & (1 << (s.idx() % 64)) != 0
    }
    pub(super) fn set(&mut self, s: Seq, v: bool) {
        let w = &mut self.0[s.idx() / 64];
        if v {
            *w |= 1 << (s.idx() % 64);
        } else {
            *w &= !(1 << (s.idx() % 64));
        }
    }
    /// Set `n` consecutive numbers from `first`.
    pub(super) fn set_run(&mut self, first: Seq, n: u32, v: bool) {
        let mut s = first;
        for _ in 0..n {
            self.set(s, v);
            s = s.next();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_5_1_gives_one_one_and_two_copies() {
        assert_eq!([1e-5, 1e-4, 1e-3].map(|p| copies_for(p, 1e-8)), [1, 1, 2]);
        assert_eq!(copies_for(0.02, 1e-8), 4);
    }

    #[test]
    fn sequence_numbers_compare_across_the_wrap() {
        let mut s = Seq { n: 65_530, era: false };
        let start = s;
        for _ in 0..12 {
            s = s.next();
        }
        assert_eq!(s, Seq { n: 6, era: true });
        assert!(s.after(start) && !start.after(s));
        assert_eq!(s.since(start), 12);
        assert_eq!(s.prev().prev().prev().prev().prev().prev().prev(), Seq { n: 65_535, era: false });
        // Up to half the space apart, across eras, in both directions.
        let far = Seq { n: 32_000, era: true };
        assert!(far.after(start) && !start.after(far));
        let same_era_far = Seq { n: 60_000, era: false };
        assert!(start.after(same_era_far));
    }
}
