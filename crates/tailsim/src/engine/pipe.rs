use super::Ring;
use crate::units::{PktId, Time};

/// A constant-delay FIFO (a link's propagation, a switch's forwarding latency, a host's software delay).
///
/// Because the delay is the same for every packet, packets leave in the order they entered, so only the head
/// needs an event in the global queue (htsim's trick): the heap holds one entry per busy pipe instead of one per
/// packet in flight.
///
/// The head is kept out of the ring, in the record that holds the pipe (a port's first line for a wire):
/// the packet a wire's arrival takes is then found in the port's record, which the arrival reads anyway,
/// instead of behind it in the ring's buffer, a dependent miss per packet-hop at scale. The ring holds the
/// packets behind the head (docs/performance-log.md, change 30).
#[derive(Default)]
#[repr(C)]
pub struct Pipe {
    /// When the head leaves, and its packet (valid while `n` > 0).
    at: Time,
    id: PktId,
    /// Packets in the pipe, the head included.
    n: u32,
    /// The packets behind the head, in order.
    rest: Ring<(Time, PktId)>,
}

const _: () = assert!(std::mem::size_of::<Pipe>() == 40);

impl Pipe {
    /// Push a packet that leaves at `at`. Returns true when the pipe was empty, i.e. the caller must schedule
    /// the head event.
    #[inline]
    pub fn push(&mut self, at: Time, p: PktId) -> bool {
        debug_assert!(self.back().is_none_or(|b| b <= at), "pipe order violated");
        self.n += 1;
        if self.n == 1 {
            (self.at, self.id) = (at, p);
            return true;
        }
        self.rest.push_back((at, p));
        false
    }
    /// Pop the head; returns it and the time of the next head, if any (to be scheduled).
    #[inline]
    pub fn pop(&mut self) -> (PktId, Option<Time>) {
        assert!(self.n > 0, "pipe event without packet");
        self.n -= 1;
        let p = self.id;
        match self.rest.pop_front() {
            Some((at, id)) => {
                (self.at, self.id) = (at, id);
                (p, Some(at))
            }
            None => (p, None),
        }
    }
    /// Take back the last packet pushed, leaving `PktId::NONE` in its place (its event, if it is the head, is
    /// scheduled already: the pop returns NONE). For a packet lost as its serialization ends.
    pub fn cancel_tail(&mut self) -> Option<PktId> {
        let last = match self.n {
            0 => return None,
            1 => &mut self.id,
            _ => &mut self.rest.back_mut()?.1,
        };
        (*last != PktId::NONE).then(|| std::mem::replace(last, PktId::NONE))
    }
    /// When the head leaves and its packet, if any.
    #[inline(always)]
    pub fn head(&self) -> Option<(Time, PktId)> {
        (self.n > 0).then_some((self.at, self.id))
    }
    /// Where the entry that the next pop makes the head is (for prefetching), if any.
    #[inline(always)]
    pub fn second(&self) -> Option<&(Time, PktId)> {
        self.rest.front()
    }
    fn back(&self) -> Option<Time> {
        self.rest.back().map(|b| b.0).or(self.head().map(|h| h.0))
    }
    pub fn len(&self) -> usize {
        self.n as usize
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// The packets in the pipe (not the places of cancelled ones).
    pub fn iter(&self) -> impl Iterator<Item = PktId> + '_ {
        let head = self.head().map(|h| h.1);
        head.into_iter().chain(self.rest.iter().map(|x| x.1)).filter(|&p| p != PktId::NONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_leave_in_order_with_the_next_heads_time_and_the_tail_can_be_taken_back() {
        let mut w = Pipe::default();
        assert!(w.is_empty() && w.head().is_none() && w.cancel_tail().is_none());
        assert!(w.push(Time(10), PktId(1)));
        assert_eq!(w.cancel_tail(), Some(PktId(1)));
        assert_eq!(w.cancel_tail(), None);
        assert_eq!(w.head(), Some((Time(10), PktId::NONE)));
        assert!(!w.push(Time(20), PktId(2)));
        assert!(!w.push(Time(30), PktId(3)));
        assert_eq!(w.cancel_tail(), Some(PktId(3)));
        assert!(!w.push(Time(40), PktId(4)));
        assert_eq!((w.len(), w.iter().collect::<Vec<_>>()), (4, vec![PktId(2), PktId(4)]));
        assert_eq!(w.second(), Some(&(Time(20), PktId(2))));
        assert_eq!(w.pop(), (PktId::NONE, Some(Time(20))));
        assert_eq!(w.pop(), (PktId(2), Some(Time(30))));
        assert_eq!(w.pop(), (PktId::NONE, Some(Time(40))));
        assert_eq!(w.head(), Some((Time(40), PktId(4))));
        assert_eq!(w.pop(), (PktId(4), None));
        assert!(w.is_empty() && w.head().is_none());
        // Empty again: the next packet is the head.
        assert!(w.push(Time(50), PktId(5)));
        assert_eq!(w.pop(), (PktId(5), None));
    }
}
