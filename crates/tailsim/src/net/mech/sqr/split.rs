//! SQR in a parallel run (sim/parallel.rs, docs/parallel.md): its state is per port and per switch, its
//! copies never leave their switch, and each timer acts at one switch.

use super::{Counters, Sqr, CLONE, KIND_SHIFT};
use crate::net::port::Port;
use crate::units::{NodeId, PortId};

impl Counters {
    /// Another part's counts (each counted where it happened).
    pub(super) fn add(&mut self, o: &Counters) {
        let Counters {
            copies,
            passes,
            retired,
            resent,
            late,
            waited,
            out_of_order,
            redirected,
            taken_in,
            backstopped,
            no_backup,
            detected,
        } = *o;
        self.copies += copies;
        self.passes += passes;
        self.retired += retired;
        self.resent += resent;
        self.late += late;
        self.waited += waited;
        self.out_of_order += out_of_order;
        self.redirected += redirected;
        self.taken_in += taken_in;
        self.backstopped += backstopped;
        self.no_backup += no_backup;
        self.detected += detected;
    }
}

impl Sqr {
    /// The node at which timer `k` acts: a switch's clone pipe, or a port's pass, release or detection.
    pub(super) fn timer_at(&self, ports: &[Port], k: u32) -> Option<NodeId> {
        let i = k & ((1 << KIND_SHIFT) - 1);
        let port = if k >> KIND_SHIFT == CLONE { *self.sws[i as usize].ports.first()? } else { PortId(i) };
        Some(ports[port.idx()].node)
    }

    /// The merge: each port's and switch's state from its part, the counters added.
    pub(super) fn take_switches(&mut self, other: &mut Sqr, ports: &[Port], theirs: &dyn Fn(NodeId) -> bool) {
        crate::net::mech::take_ports(&mut self.ports, &mut other.ports, ports, theirs);
        for (a, b) in self.sws.iter_mut().zip(&mut other.sws) {
            if a.ports.first().is_some_and(|p| theirs(ports[p.idx()].node)) {
                std::mem::swap(a, b);
            }
        }
        self.n.add(&other.n);
    }
}
