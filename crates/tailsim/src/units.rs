//! Unit newtypes. A rate never gets added to a size: every quantity that crosses a module boundary is typed.
//!
//! Time is integer picoseconds: 1 B at 100 Gbps is 80 ps exactly, and integer time keeps event order and
//! results bit-identical across machines.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// Simulated time or duration, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);
    pub const fn ps(v: u64) -> Time {
        Time(v)
    }
    pub const fn ns(v: u64) -> Time {
        Time(v * 1_000)
    }
    pub const fn us(v: u64) -> Time {
        Time(v * 1_000_000)
    }
    pub const fn ms(v: u64) -> Time {
        Time(v * 1_000_000_000)
    }
    pub fn from_secs_f64(s: f64) -> Time {
        Time((s * 1e12).round() as u64)
    }
    pub fn secs(self) -> f64 {
        self.0 as f64 * 1e-12
    }
    pub fn micros(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    pub fn saturating_sub(self, o: Time) -> Time {
        Time(self.0.saturating_sub(o.0))
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, o: Time) -> Time {
        Time(self.0 + o.0)
    }
}
impl AddAssign for Time {
    fn add_assign(&mut self, o: Time) {
        self.0 += o.0
    }
}
impl Sub for Time {
    type Output = Time;
    fn sub(self, o: Time) -> Time {
        Time(self.0 - o.0)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps >= 1_000_000_000_000 {
            write!(f, "{:.6}s", self.secs())
        } else if ps >= 1_000_000_000 {
            write!(f, "{:.3}ms", ps as f64 * 1e-9)
        } else if ps >= 1_000_000 {
            write!(f, "{:.3}us", ps as f64 * 1e-6)
        } else {
            write!(f, "{:.3}ns", ps as f64 * 1e-3)
        }
    }
}

/// A link rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BitsPerSec(pub u64);

/// Bits in a byte times picoseconds in a second: a serialization time is bytes × this / (bits per second).
const PS_BITS: u64 = 8 * 1_000_000_000_000;

impl BitsPerSec {
    pub const fn gbps(g: u64) -> BitsPerSec {
        BitsPerSec(g * 1_000_000_000)
    }
    /// Serialization time of `bytes` at this rate, rounded up to the next picosecond so that a link is never
    /// faster than its rate.
    // Always inlined, the 128-bit case out of line: with it in line the compiler kept the whole function out
    // of line, a call per packet-hop.
    #[inline(always)]
    pub fn tx_time(self, bytes: u64) -> Time {
        // In 64 bits when the product fits (packets, up to 2.3 MB): the same exact result, without the
        // 128-bit division's library call (1.3 % of all time per packet-hop, perf).
        if bytes <= u64::MAX / PS_BITS {
            return Time((bytes * PS_BITS).div_ceil(self.0));
        }
        self.tx_time_wide(bytes)
    }
    #[cold]
    #[inline(never)]
    fn tx_time_wide(self, bytes: u64) -> Time {
        let num = bytes as u128 * PS_BITS as u128;
        Time(num.div_ceil(self.0 as u128) as u64)
    }
    /// `tx_time`, by a multiplication where the rate takes a whole number of picoseconds a byte (`per_byte`,
    /// which must be `PsPerByte::of(self)`): the same result.
    #[inline(always)]
    pub fn tx_time_at(self, per_byte: PsPerByte, bytes: u64) -> Time {
        debug_assert_eq!(per_byte, PsPerByte::of(self));
        if per_byte.0 != 0 && bytes <= u64::MAX / PS_BITS {
            return Time(bytes * per_byte.0);
        }
        self.tx_time(bytes)
    }
    /// Whole bytes this rate carries in `t`.
    #[inline]
    pub fn bytes_in(self, t: Time) -> u64 {
        (t.0 as u128 * self.0 as u128 / 8 / 1_000_000_000_000) as u64
    }
}

impl fmt::Display for BitsPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}Gbps", self.0 as f64 / 1e9)
    }
}

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);
        impl $name {
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// A node: hosts are numbered first (host i is node i), then switches.
    NodeId
);
id_type!(
    /// An egress port together with the directed link it drives.
    PortId
);
impl PortId {
    /// No port (a packet at its source has no ingress port).
    pub const NONE: PortId = PortId(u32::MAX);
}
id_type!(
    /// A packet's slot in the packet arena.
    PktId
);
impl PktId {
    /// No packet (the place of a packet taken off a wire, `Pipe::cancel_tail`).
    pub const NONE: PktId = PktId(u32::MAX);
}
id_type!(
    /// A flow's slot in the flow table (slots are reused; packets also carry a generation).
    FlowSlot
);
id_type!(
    /// A pinned path one way (`net/pinned.rs`): 0 = none (the switches choose); a pinned flow's forward and
    /// reverse directions are neighbours, 2k + 1 and 2k + 2.
    PathId
);
impl PathId {
    pub const NONE: PathId = PathId(0);
    /// The same path the other way (the way its acknowledgements and grants go back).
    #[inline]
    pub fn reverse(self) -> PathId {
        if self == PathId::NONE {
            self
        } else {
            PathId(((self.0 - 1) ^ 1) + 1)
        }
    }
}

/// The picoseconds a byte takes at a rate, where that is a whole number (the rate divides 8·10^12 bits per
/// second: 1, 10, 25, 40, 100, 400 Gbps and most others in use), else 0. A packet's serialization time is
/// then a multiplication; in general it is a 64-bit division of 35–90 cycles (perf put 2–3 % of `htsim-p2`'s
/// samples on the instruction after it; the clock did not resolve a gain: docs/performance-log.md, change 38).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PsPerByte(u64);

impl PsPerByte {
    pub fn of(rate: BitsPerSec) -> PsPerByte {
        // (`is_multiple_of(0)` is false here: no division by zero.)
        if PS_BITS.is_multiple_of(rate.0) {
            PsPerByte(PS_BITS / rate.0)
        } else {
            PsPerByte(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_whole_number_of_picoseconds_a_byte_gives_the_same_times() {
        let rates = [1, 10, 25, 40, 100, 400].map(BitsPerSec::gbps);
        let odd = [BitsPerSec(3), BitsPerSec(999_999_937), BitsPerSec(7_000_000_000)];
        for rate in rates {
            assert_eq!(PsPerByte::of(rate), PsPerByte(8000 / (rate.0 / 1_000_000_000)), "{rate}");
        }
        for rate in odd {
            assert_eq!(PsPerByte::of(rate), PsPerByte(0), "{rate}");
        }
        assert_eq!(PsPerByte::of(BitsPerSec(1)), PsPerByte(PS_BITS));
        let limit = u64::MAX / PS_BITS;
        for rate in rates.into_iter().chain(odd).chain([BitsPerSec(1)]) {
            for bytes in [0, 1, 64, 1499, 1500, 9000, 2_000_000, limit, limit + 1, u64::MAX / 1024] {
                assert_eq!(rate.tx_time_at(PsPerByte::of(rate), bytes), rate.tx_time(bytes), "{bytes} B at {rate}");
            }
        }
    }
    #[test]
    fn serialization_is_exact_or_rounded_up() {
        assert_eq!(BitsPerSec::gbps(10).tx_time(1500), Time::ns(1200));
        assert_eq!(BitsPerSec::gbps(40).tx_time(1500), Time::ns(300));
        assert_eq!(BitsPerSec::gbps(100).tx_time(1), Time::ps(80));
        // 1 B at 3 bps = 2.666..s -> rounded up
        assert_eq!(BitsPerSec(3).tx_time(1), Time(2_666_666_666_667));
        // Both sides of the 64-bit fast path agree with 128-bit arithmetic.
        let limit = u64::MAX / 8_000_000_000_000;
        for bytes in [limit - 1, limit, limit + 1, 10 * limit] {
            for rate in [BitsPerSec::gbps(100), BitsPerSec(3), BitsPerSec(999_999_937)] {
                let want = (bytes as u128 * 8_000_000_000_000).div_ceil(rate.0 as u128) as u64;
                assert_eq!(rate.tx_time(bytes), Time(want), "{bytes} B at {rate}");
            }
        }
    }
}
