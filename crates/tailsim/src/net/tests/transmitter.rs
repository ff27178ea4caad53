//! The transmitter's two paths (net/egress.rs `start_queued`): the fast one puts a packet onto the wire when
//! its serialization starts and gives the end of serialization an event only when something waits for it; the
//! slow one (a port with a `TRANSMIT` hook, or a link that is down) holds the packet until its `TxDone`. Both
//! must give the same times, losses and busy time.

use super::*;

/// The leaf's port towards host 0 (10 Gbps, no delay: a 1500 B packet takes 1.2 µs), on the fast path or,
/// with `slow`, on the slow one (a `TRANSMIT` flag that no mechanism answers).
fn port(slow: bool) -> (Network, PortId, EventQueue, Packets) {
    let (mut n, port) = net(BufferPolicy::Unlimited, u64::MAX);
    if slow {
        n.ports[port.idx()].hooks = n.ports[port.idx()].hooks | HookSet::TRANSMIT;
    }
    (n, port, EventQueue::new(), Packets::default())
}

#[test]
fn an_idle_port_sends_with_one_event_and_a_waiting_packet_gets_the_end_of_serialization() {
    let (mut n, port, mut ev, mut pk) = port(false);
    let a = pkt(&mut pk, 1500, 0);
    n.enqueue(Time::ZERO, &mut ev, &mut pk, port, a);
    // On the wire already: its arrival is the only event; the transmitter is busy until 1.2 µs.
    assert_eq!(ev.len(), 1);
    let pt = &n.ports[port.idx()];
    assert_eq!(pt.busy_until, Time::ns(1200));
    assert!(pt.transmitting(Time::ns(1199)) && !pt.transmitting(Time::ns(1200)));
    assert_eq!(pt.busy_through(Time::ns(600)), Time::ns(600), "busy time counts only what has passed");
    assert_eq!(pt.busy_through(Time::ns(5000)), Time::ns(1200));
    // A second packet waits for the transmitter: now the end of serialization has an event.
    let b = pkt(&mut pk, 1500, 0);
    n.enqueue(Time::ns(100), &mut ev, &mut pk, port, b);
    assert_eq!(ev.len(), 2);
    let got = run_net_timed(&mut n, &mut ev, &mut pk, Time::ms(1));
    assert_eq!(got, vec![(Time::ns(1200), a), (Time::ns(2400), b)]);
    assert_eq!(n.ports[port.idx()].busy_through(Time::ms(1)), Time::ns(2400));
    assert_eq!(n.ports[port.idx()].stats.tx_packets, 2);
    assert_eq!(n.packet_hops, 2);
    assert!(ev.is_empty());
}

/// Send one 1500 B packet at 0 and another queued behind it over a link of `delay`, take the link down at
/// `down` and up at `up` (if given) on the fast or slow path; returns what arrived (when, less the delay) and
/// the packets lost to the link.
fn down_during(slow: bool, delay: Time, down: Time, up: Option<Time>) -> (Vec<Time>, u64) {
    let (mut n, port, mut ev, mut pk) = port(slow);
    n.ports[port.idx()].delay = delay;
    for at in [Time::ZERO, Time::ns(10)] {
        let id = pkt(&mut pk, 1500, 0);
        n.enqueue(at, &mut ev, &mut pk, port, id);
    }
    let (leaf, h0) = (NodeId(4), NodeId(0));
    let mut got = run_net_timed(&mut n, &mut ev, &mut pk, down);
    assert!(n.set_link(leaf, h0, Some(false), None, None, true));
    n.mark_tails(down, &mut ev);
    if let Some(up) = up {
        got.extend(run_net_timed(&mut n, &mut ev, &mut pk, up));
        assert!(n.set_link(leaf, h0, Some(true), None, None, true));
    }
    got.extend(run_net_timed(&mut n, &mut ev, &mut pk, Time::ms(1)));
    ledger::check(&pk, &n).unwrap();
    (got.into_iter().map(|g| g.0 - delay).collect(), n.ports[port.idx()].stats.drops(DropReason::LinkDown))
}

#[test]
fn a_link_that_goes_down_loses_the_packet_being_serialized_on_either_path() {
    // Without delay a packet arrives as its serialization ends (before its end has an event); with one, after.
    for (slow, delay) in [(false, Time::ZERO), (true, Time::ZERO), (false, Time::ns(500)), (true, Time::ns(500))] {
        let case = format!("slow {slow}, delay {delay:?}");
        // Down mid-way through the first packet and for good: both are lost (the second is sent on a dead link).
        assert_eq!(down_during(slow, delay, Time::ns(600), None), (vec![], 2), "{case}");
        // Down and up again within the first packet: it is sent whole (the rule is the link's state at the
        // end of serialization), and so is the second.
        let both = (vec![Time::ns(1200), Time::ns(2400)], 0);
        assert_eq!(down_during(slow, delay, Time::ns(600), Some(Time::ns(900))), both, "{case}");
        // Down during the second packet, up after it: the first arrived, the second is lost.
        let first = (vec![Time::ns(1200)], 1);
        assert_eq!(down_during(slow, delay, Time::ns(1800), Some(Time::ns(3000))), first, "{case}");
        // Down after the second packet's serialization, while it propagates: it arrives (as on the slow path,
        // where a link's state matters only at the end of serialization).
        assert_eq!(down_during(slow, delay, Time::ns(2401), None).0.len(), 2, "{case}");
    }
}

#[test]
fn a_rate_changed_by_a_fault_times_the_packets_after_it_on_either_path() {
    // 10 Gbps, then 40 (a whole 200 ps a byte: a multiplication) and 7 (not whole: the division, rounded
    // up); the port's picoseconds a byte must follow its rate.
    for slow in [false, true] {
        let (mut n, port, mut ev, mut pk) = port(slow);
        let (leaf, h0) = (NodeId(4), NodeId(0));
        let mut at = Time::ZERO;
        for gbps in [10, 40, 7] {
            let rate = BitsPerSec::gbps(gbps);
            assert!(n.set_link(leaf, h0, None, None, Some(rate), true));
            let id = pkt(&mut pk, 1500, 0);
            n.enqueue(at, &mut ev, &mut pk, port, id);
            let got = run_net_timed(&mut n, &mut ev, &mut pk, at + Time::ms(1));
            let wire = 1500 + n.ports[port.idx()].wire_overhead as u64;
            assert_eq!(got, vec![(at + rate.tx_time(wire), id)], "{gbps} Gbps, slow {slow}");
            at += Time::ms(1);
        }
        assert_eq!(BitsPerSec::gbps(7).tx_time(1500), Time(1_714_286), "7 Gbps rounds up");
    }
}
