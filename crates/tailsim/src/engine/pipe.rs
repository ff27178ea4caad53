use crate::units::{PktId, Time};
use std::collections::VecDeque;

/// A constant-delay FIFO (a link's propagation, a switch's forwarding latency, a host's software delay).
///
/// Because the delay is the same for every packet, packets leave in the order they entered, so only the head
/// needs an event in the global queue (htsim's trick): the heap holds one entry per busy pipe instead of one per
/// packet in flight.
#[derive(Default)]
pub struct Pipe {
    q: VecDeque<(Time, PktId)>,
}

impl Pipe {
    /// Push a packet that leaves at `at`. Returns true when the pipe was empty, i.e. the caller must schedule
    /// the head event.
    #[inline]
    pub fn push(&mut self, at: Time, p: PktId) -> bool {
        debug_assert!(self.q.back().is_none_or(|b| b.0 <= at), "pipe order violated");
        self.q.push_back((at, p));
        self.q.len() == 1
    }
    /// Pop the head; returns it and the time of the next head, if any (to be scheduled).
    #[inline]
    pub fn pop(&mut self) -> (PktId, Option<Time>) {
        let (_, p) = self.q.pop_front().expect("pipe event without packet");
        (p, self.q.front().map(|h| h.0))
    }
    /// Take back the last packet pushed, leaving `PktId::NONE` in its place (its event, if it is the head, is
    /// scheduled already: the pop returns NONE). For a packet lost as its serialization ends.
    pub fn cancel_tail(&mut self) -> Option<PktId> {
        let b = self.q.back_mut()?;
        (b.1 != PktId::NONE).then(|| std::mem::replace(&mut b.1, PktId::NONE))
    }
    /// Where the head's entry is (for prefetching), if any.
    #[inline(always)]
    pub fn head(&self) -> Option<&(Time, PktId)> {
        self.q.front()
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// The packets in the pipe (not the places of cancelled ones).
    pub fn iter(&self) -> impl Iterator<Item = PktId> + '_ {
        self.q.iter().map(|x| x.1).filter(|&p| p != PktId::NONE)
    }
}
