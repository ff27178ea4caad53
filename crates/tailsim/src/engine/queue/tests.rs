//! The event queue's order against sorted references, and its ties.

use super::*;
#[test]
fn wire_arrivals_come_first_at_an_instant_whenever_scheduled() {
    // The same events scheduled in two orders, as two parts of a parallel run might hand them over (or
    // a port that leaves its end of serialization unscheduled, net/lazy.rs): the arrivals come first, in
    // one order, then the ends of serialization, in one order, then the rest.
    let run = |arrivals_late: bool| {
        let mut q = EventQueue::new();
        let arrivals = |q: &mut EventQueue| {
            q.schedule(Time(5), Event::WireArrival(PortId(9)));
            q.schedule(Time(5), Event::WireArrival(PortId(2)));
        };
        q.schedule(Time(5), Event::Arrival(7));
        if !arrivals_late {
            arrivals(&mut q);
            q.schedule(Time(5), Event::TxDone(PortId(4)));
            q.schedule(Time(5), Event::TxDone(PortId(1)));
        } else {
            q.schedule(Time(5), Event::TxDone(PortId(1)));
            q.schedule(Time(5), Event::TxDone(PortId(4)));
        }
        q.schedule(Time(4), Event::HostTx(NodeId(0)));
        if arrivals_late {
            assert_eq!(q.pop(), Some((Time(4), Event::HostTx(NodeId(0)))));
            arrivals(&mut q);
        }
        std::iter::from_fn(|| q.pop().map(|(_, e)| e)).filter(|e| *e != Event::HostTx(NodeId(0))).collect::<Vec<_>>()
    };
    let (early, late) = (run(false), run(true));
    assert_eq!(early, late);
    assert!(matches!(early[..2], [Event::WireArrival(_), Event::WireArrival(_)]), "{early:?}");
    assert!(matches!(early[2..4], [Event::TxDone(_), Event::TxDone(_)]), "{early:?}");
    assert_eq!(early[4..], [Event::Arrival(7)], "scheduled first, after every arrival and end of serialization");
}
#[test]
fn simultaneous_arrivals_change_order_from_instant_to_instant() {
    // No port always first: two ports arriving together at 1,000 instants each go first about half the
    // time (a fixed order starved the later port's flow of buffer space: tests/congestion.rs).
    let mut first = [0u32; 2];
    for t in 0..1000u64 {
        let mut q = EventQueue::new();
        q.schedule(Time(t * 1_000_003), Event::WireArrival(PortId(6)));
        q.schedule(Time(t * 1_000_003), Event::WireArrival(PortId(7)));
        let Some((_, Event::WireArrival(p))) = q.pop() else { panic!("an arrival") };
        first[(p.0 - 6) as usize] += 1;
    }
    assert!(first.iter().all(|&n| (400..=600).contains(&n)), "{first:?}");
}
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
fn matches_a_sorted_reference_on_random_interleavings() {
    // Random pushes and pops against a reference that sorts by (time, insertion order).
    let mut q = EventQueue::new();
    let mut reference: Vec<(u64, u64, u32)> = vec![];
    let mut x: u64 = 12345;
    let mut seq = 0u64;
    for step in 0..20_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if !x.is_multiple_of(3) || reference.is_empty() {
            let t = x % 50; // many ties
            q.schedule(Time(t), Event::Arrival(step));
            reference.push((t, seq, step));
            seq += 1;
        } else {
            reference.sort();
            let (t, _, s) = reference.remove(0);
            assert_eq!(q.pop(), Some((Time(t), Event::Arrival(s))));
        }
    }
    reference.sort();
    for (t, _, s) in reference {
        assert_eq!(q.pop(), Some((Time(t), Event::Arrival(s))));
    }
    assert!(q.pop().is_none());
}
#[test]
fn matches_a_sorted_reference_across_buckets_horizon_and_heap() {
    // As the simulator uses it: events at or after the last one popped, at distances from zero (the
    // same bucket, ties) to well beyond the wheel's horizon (the heap), jumps over empty stretches, and
    // now and then one before the current time (a caller that moved time back).
    let mut q = EventQueue::new();
    let mut reference = std::collections::BTreeMap::new();
    let (mut x, mut seq, mut now) = (88172645463325252u64, 0u64, 0u64);
    let horizon = (BUCKETS as u64) << WIDTH_BITS;
    for step in 0..200_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 7 < 4 || reference.is_empty() {
            let d = match x % 97 {
                0..=9 => 0,
                10..=49 => (x >> 20) % 2048,
                50..=84 => (x >> 20) % horizon,
                85..=94 => (x >> 20) % (50 * horizon),
                _ => (x >> 20) % 1_000_000_000,
            };
            let t = if x % 1009 == 0 { now.saturating_sub(d % 1000) } else { now + d };
            q.schedule(Time(t), Event::Arrival(step));
            reference.insert((t, seq), step);
            seq += 1;
        } else {
            let ((t, _), s) = reference.pop_first().unwrap();
            assert_eq!(q.peek_time(), Some(Time(t)));
            assert_eq!(q.pop(), Some((Time(t), Event::Arrival(s))), "step {step}");
            now = now.max(t);
        }
        assert_eq!(q.len(), reference.len());
    }
    for ((t, _), s) in reference {
        assert_eq!(q.pop(), Some((Time(t), Event::Arrival(s))));
    }
    assert!(q.pop().is_none() && q.is_empty() && q.peek_time().is_none());
}
#[test]
fn buckets_taken_ahead_keep_the_order() {
    // Traffic as at 128 hosts: most events a few buckets ahead, some into the buckets already taken
    // (`look_ahead`), some at the current time (into the bucket served while later ones are taken), a few
    // before it and a few beyond the horizon; checked against a reference, with queues of a few events
    // (buckets of about one: sparse, seldom looked past), of tens and of hundreds. The look-ahead must
    // have happened where buckets are dense, and `now` must empty with no bucket taken ahead (`cur`
    // moved to the last).
    let configs = [
        (12, 40, 0x2545_F491_4F6C_DD1Du64, false),
        (60, 2, 0x1234_5678_9ABC_DEF1, true),
        (400, 5, 0x9E37_79B9_7F4A_7C15, true),
    ];
    for (short, spread, seed, dense) in configs {
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeMap::new();
        let (mut x, mut seq, mut now) = (seed, 0u64, 0u64);
        let width = 1u64 << WIDTH_BITS;
        let (mut spans, mut taken_into) = (0, 0);
        for step in 0..300_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (x % 2 == 0 && reference.len() < short) || reference.len() < short / 3 {
                let d = match x % 101 {
                    0..=14 => 0,
                    15..=79 => (x >> 20) % (spread * width),
                    80..=92 => (x >> 20) % (40 * width),
                    93..=94 => (x >> 20) % (3 * (BUCKETS as u64) * width),
                    _ => u64::MAX, // before the current time (a caller that moved time back)
                };
                let t = if d == u64::MAX { now.saturating_sub((x >> 30) % (3 * width)) } else { now + d };
                if q.serving() && t >> WIDTH_BITS > q.cur && t >> WIDTH_BITS <= q.cur + q.span {
                    taken_into += 1;
                }
                q.schedule(Time(t), Event::Arrival(step));
                reference.insert((t, seq), step);
                seq += 1;
            } else {
                let ((t, _), s) = reference.pop_first().unwrap();
                assert_eq!(q.pop(), Some((Time(t), Event::Arrival(s))), "step {step}");
                now = now.max(t);
                spans += (q.span > 0) as u32;
                assert!(q.serving() || q.span == 0, "step {step}: empty with buckets taken ahead");
            }
            assert_eq!(q.len(), reference.len());
        }
        for ((t, _), s) in reference {
            assert_eq!(q.pop(), Some((Time(t), Event::Arrival(s))));
        }
        assert!(q.pop().is_none() && q.is_empty());
        if dense {
            assert!(spans > 10_000 && taken_into > 1_000, "look-ahead spans {spans}, events into them {taken_into}");
        } else {
            assert!(spans < 1_000, "sparse buckets are seldom looked past: {spans}");
        }
    }
}
#[test]
fn an_event_earlier_than_the_current_bucket_comes_first() {
    let mut q = EventQueue::new();
    q.schedule(Time(5_000_000), Event::Arrival(0));
    q.schedule(Time(5_000_001), Event::Arrival(1));
    assert_eq!(q.pop(), Some((Time(5_000_000), Event::Arrival(0))));
    q.schedule(Time(10), Event::Arrival(2));
    q.schedule(Time(5_000_001), Event::Arrival(3));
    let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
    assert_eq!(
        order,
        vec![(Time(10), Event::Arrival(2)), (Time(5_000_001), Event::Arrival(1)), (Time(5_000_001), Event::Arrival(3))]
    );
}
#[test]
fn pop_by_takes_only_events_due_by_the_limit() {
    // The run loop's call: the bucket being served, an event moved back before it, the heap beyond.
    let w = 1u64 << WIDTH_BITS;
    let mut q = EventQueue::new();
    assert_eq!(q.pop_by(Time::MAX), Next::Empty);
    q.schedule(Time(10 * w + 5), Event::Arrival(0));
    q.schedule(Time(10 * w + 5), Event::Arrival(1));
    q.schedule(Time(1 << 40), Event::Arrival(2));
    assert_eq!(q.pop_by(Time(10 * w + 4)), Next::Later);
    assert_eq!(q.pop_by(Time(10 * w + 5)), Next::Due(Time(10 * w + 5), Event::Arrival(0)));
    q.schedule(Time(3), Event::Arrival(3));
    assert_eq!(q.pop_by(Time(2)), Next::Later);
    assert_eq!(q.pop_by(Time(3)), Next::Due(Time(3), Event::Arrival(3)));
    assert_eq!(q.pop_by(Time(10 * w + 5)), Next::Due(Time(10 * w + 5), Event::Arrival(1)));
    assert_eq!(q.pop_by(Time((1 << 40) - 1)), Next::Later);
    assert_eq!(q.len(), 1);
    assert_eq!(q.pop_by(Time::MAX), Next::Due(Time(1 << 40), Event::Arrival(2)));
    assert_eq!(q.pop_by(Time::MAX), Next::Empty);
    assert_eq!(q.processed(), 4);
}
#[test]
fn the_next_bucket_is_found_round_the_wheel() {
    // The current bucket is 100; the next event is 4,095 buckets on, in the same word of the bitmap as
    // bucket 100 but below it (found on the last pass round the wheel), and one in the heap beyond.
    let w = 1u64 << WIDTH_BITS;
    let mut q = EventQueue::new();
    q.schedule(Time(100 * w), Event::Arrival(0));
    assert_eq!(q.pop(), Some((Time(100 * w), Event::Arrival(0))));
    q.schedule(Time(4195 * w + 7), Event::Arrival(1));
    q.schedule(Time(4196 * w), Event::Arrival(2));
    q.schedule(Time(99 * w + 3), Event::Arrival(3));
    let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(t, _)| t.0).collect();
    assert_eq!(order, vec![99 * w + 3, 4195 * w + 7, 4196 * w]);
}
#[test]
fn event_is_small() {
    assert!(std::mem::size_of::<Event>() <= 16);
}
