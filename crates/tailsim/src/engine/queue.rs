use crate::units::{FlowSlot, NodeId, PortId, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Transport timers. A flow has at most one pending event per kind; see `transport::Timer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    Retransmit,
    DelayedAck,
}

/// Everything that can happen. Events name components by id and carry no heap data, so an event is 16 bytes
/// and the queue never allocates once its vector has grown to the working-set size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The packet at the head of a port's wire reaches the far end of the link.
    WireArrival(PortId),
    /// A port finished serializing its current packet.
    TxDone(PortId),
    /// The head of a switch's fixed-delay forwarding pipeline is ready for its output port.
    SwitchForward(NodeId),
    /// The head of a host's transmit-delay line enters the NIC queue.
    HostTx(NodeId),
    /// The head of a host's receive-delay line reaches the transport.
    HostRx(NodeId),
    /// A transport timer of a flow (slot, generation).
    Timer(FlowSlot, u32, TimerKind),
    /// Workload generator `i` releases its next flow.
    Arrival(u32),
    /// Scheduled fault/link-state change `i` of the experiment.
    Fault(u32),
    /// End of the warm-up: queue-occupancy statistics restart.
    WarmupEnd,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// (time << 64) | insertion sequence: one integer compare orders by time, then by insertion.
    key: u128,
    ev: Event,
}
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}

/// A binary-heap event queue. Ties in time are broken by insertion order, so a run is a pure function of
/// its configuration and seed.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    popped: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }
    #[inline]
    pub fn schedule(&mut self, at: Time, ev: Event) {
        let key = ((at.0 as u128) << 64) | self.seq as u128;
        self.seq += 1;
        self.heap.push(Reverse(Entry { key, ev }));
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.heap.pop().map(|Reverse(e)| {
            self.popped += 1;
            (Time((e.key >> 64) as u64), e.ev)
        })
    }
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse(e)| Time((e.key >> 64) as u64))
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.schedule(Time(5), Event::Arrival(0));
        q.schedule(Time(3), Event::Arrival(1));
        q.schedule(Time(5), Event::Arrival(2));
        q.schedule(Time(3), Event::Arrival(3));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (Time(3), Event::Arrival(1)),
                (Time(3), Event::Arrival(3)),
                (Time(5), Event::Arrival(0)),
                (Time(5), Event::Arrival(2))
            ]
        );
        assert_eq!(q.processed(), 4);
    }
    #[test]
    fn event_is_small() {
        assert!(std::mem::size_of::<Event>() <= 16);
    }
}
