//! Request–response workloads (traffic/jobs.rs): retrievals, sequential and partition-aggregate workflows,
//! closed-loop background flows. Closed forms on an empty fabric, the DeTail thesis's load factor, and the
//! chaining rules, each checked against the records.

mod common;
use common::*;
use tailsim::traffic::jobs::Role;
use tailsim::units::Time;

fn detail(workloads: &str) -> String {
    format!(
        "[topology]\npreset = \"detail-128\"\n[transport]\nkind = \"tcp\"\ninit_cwnd = 10\nmin_rto = \"10ms\"\n{workloads}"
    )
}

/// A 40 B ACK with 30 B of framing at 1 Gbps: the host that receives a request (or a response) acknowledges
/// it before it sends anything else, so the next flow from that host leaves this much later.
const ACK_TIME: Time = Time::ps(560_000);

#[test]
fn a_lone_retrieval_takes_its_request_and_response_back_to_back() {
    // One 2 KiB retrieval: request (10 B) then response (2 packets), each alone on the fabric, so the
    // retrieval's time is exactly the sum of the two flows' ideal times.
    let (e, _) = run(&detail(
        "[[workload]]\nkind = \"retrieval\"\nrate = 100\ncount = 1\nsizes = [\"2KiB\"]\nclients = [0]\nservers = [127]\n",
    ));
    let j = &e.world.jobs;
    assert_eq!((j.retrievals.len(), j.workflows.len()), (1, 1));
    let r = &j.retrievals[0];
    let (req, resp) = (e.world.records.nth(0), e.world.records.nth(1));
    assert_eq!((req.role, resp.role), (Role::Request(0), Role::Response(0)));
    assert_eq!((req.src.0, req.dst.0, req.size), (0, 127, 10));
    assert_eq!((resp.src.0, resp.dst.0, resp.size), (127, 0, 2048));
    assert_eq!(resp.start, req.end.unwrap(), "the response starts when the request's last byte arrives");
    assert_eq!(req.fct(), Some(req.ideal));
    // The server's ACK of the request leaves first (separate flows: no piggybacking).
    assert_eq!(resp.fct(), Some(resp.ideal + ACK_TIME));
    assert_eq!(r.time(), Some(req.ideal + ACK_TIME + resp.ideal));
    assert_eq!(r.ideal, req.ideal + resp.ideal);
    assert_eq!((req.timeouts, resp.timeouts, req.retransmits, resp.retransmits), (0, 0, 0, 0));
    assert_eq!(j.workflows[0].time(), r.time());
}

#[test]
fn a_sequential_workflow_is_the_sum_of_its_retrievals() {
    let (e, s) = run(&detail(
        "[[workload]]\nkind = \"workflow\"\nshape = \"sequential\"\nparts = 10\nrate = 100\ncount = 1\n\
         sizes = [\"2KiB\", \"4KiB\", \"8KiB\", \"16KiB\", \"32KiB\"]\nclients = [5]\n",
    ));
    let j = &e.world.jobs;
    let w = &j.workflows[0];
    assert_eq!((w.parts, w.done, w.shape), (10, 10, "sequential"));
    let rs = &j.retrievals[..10];
    // Each retrieval is issued the instant the previous one completes, so the times add up exactly.
    for pair in rs.windows(2) {
        assert_eq!(pair[1].start, pair[0].end);
    }
    assert_eq!(rs[0].start, Some(w.start));
    let sum = rs.iter().map(|r| r.time().unwrap()).fold(Time::ZERO, |a, t| a + t);
    assert_eq!(w.time(), Some(sum));
    assert_eq!(w.ideal, rs.iter().map(|r| r.ideal).fold(Time::ZERO, |a, t| a + t));
    assert!(rs.iter().all(|r| r.client.0 == 5 && r.server.0 != 5));
    assert_eq!(s.jobs.as_ref().unwrap().workflows[0].time.count, 1);
    // Alone on the fabric, no retrieval waits: those within the initial window take their ideal time, plus
    // the server's ACK of the request and, from the second on, the client's ACK of the previous response.
    for (i, r) in rs.iter().enumerate().filter(|(_, r)| r.size <= 10 * 1460) {
        let acks = if i == 0 { ACK_TIME } else { ACK_TIME + ACK_TIME };
        assert_eq!(r.time(), Some(r.ideal + acks), "retrieval {i}: {r:?}");
    }
}

#[test]
fn a_workflows_flows_are_made_at_its_arrival_and_those_never_started_are_in_no_table() {
    // Every flow of a workflow takes its id at the workflow's arrival, request then response, retrieval by
    // retrieval (so in a parallel run every part numbers them alike: docs/parallel.md); each starts when its
    // sender's host learns it can. A run stopped just after retrieval 3 has started 9 of the 20 flows (the
    // fifth request at retrieval 3's end).
    let toml = detail(
        "[[workload]]\nkind = \"workflow\"\nshape = \"sequential\"\nparts = 10\nrate = 100\ncount = 1\n\
         sizes = [\"2KiB\", \"4KiB\"]\nclients = [5]\n",
    );
    let (e, s) = run(&toml);
    assert_eq!((s.flows_started, e.world.records.len()), (20, 20));
    for (q, r) in e.world.jobs.retrievals.iter().enumerate() {
        assert_eq!((r.request_flow, r.response_flow), (2 * q as u64, 2 * q as u64 + 1));
        let (req, resp) = (e.world.records.nth(2 * q), e.world.records.nth(2 * q + 1));
        assert_eq!((req.role, resp.role), (Role::Request(q as u32), Role::Response(q as u32)));
        assert_eq!((Some(req.start), resp.start), (r.start, req.end.unwrap()));
    }
    let cut = e.world.jobs.retrievals[3].end.unwrap();
    let (e, s) = run(&format!("{toml}[stop]\ntime = \"{}ps\"\n", cut.0 + 1));
    assert_eq!((s.flows_started, s.flows_finished, e.world.records.len()), (9, 8, 20));
    let started = e.world.records.all();
    assert_eq!(started.iter().map(|r| r.id).collect::<Vec<_>>(), (0..9).collect::<Vec<_>>());
    assert!(e.world.records.nth(9).start == tailsim::metrics::records::NOT_STARTED, "made, never started");
    let w = &e.world.jobs.workflows[0];
    assert_eq!((w.done, w.end, e.world.jobs.retrievals[4].start), (4, None, Some(cut)));
}

#[test]
fn a_partition_aggregate_workflow_ends_with_its_slowest_retrieval() {
    let (e, _) = run(&detail(
        "[[workload]]\nkind = \"workflow\"\nshape = \"partition-aggregate\"\nfanout = [40]\nrate = 100\n\
         count = 1\nsize = \"2KiB\"\nclients = [0]\n",
    ));
    let j = &e.world.jobs;
    let w = &j.workflows[0];
    let rs = &j.retrievals[..40];
    assert!(rs.iter().all(|r| r.start == Some(w.start)), "all issued at once");
    let mut servers: Vec<u32> = rs.iter().map(|r| r.server.0).collect();
    servers.sort_unstable();
    servers.dedup();
    assert_eq!(servers.len(), 40, "distinct servers");
    assert!(!servers.contains(&0), "never the client itself");
    let slowest = rs.iter().map(|r| r.time().unwrap()).max().unwrap();
    assert_eq!(w.time(), Some(slowest));
    assert_eq!(w.ideal, rs.iter().map(|r| r.ideal).max().unwrap());
    // 40 responses converge on the client's downlink: the last waits for the other 39.
    // 40 responses of 2 frames (1530 + 658 B, 17.504 us at 1 Gbps) converge on the client's downlink, after
    // the first request crossed the fabric.
    let request = e.world.records.nth(rs[0].request_flow as usize).ideal;
    assert!(slowest >= request + Time::ps(40 * 17_504_000), "{slowest}");
}

/// Mean utilization of the aggregation→core links (all traffic: the test runs retrievals only).
fn agg_core_utilization(rate: u32) -> f64 {
    let (e, _) = run(&detail(&format!(
        "[stop]\ntime = \"40ms\"\n[[workload]]\nkind = \"retrieval\"\nrate = {rate}\nuntil = \"40ms\"\n\
         sizes = [\"2KB\", \"8KB\", \"32KB\"]\n"
    )));
    let net = &e.world.net;
    let name = |n: tailsim::units::NodeId| {
        if net.is_host(n) {
            String::new()
        } else {
            net.switches[n.idx() - net.n_hosts()].name.clone()
        }
    };
    let up: Vec<_> =
        net.ports.iter().filter(|p| name(p.node).starts_with("agg") && name(p.peer).starts_with("core")).collect();
    assert_eq!(up.len(), 32);
    let bits: u64 = up.iter().map(|p| p.stats.tx_bytes * 8).sum();
    bits as f64 / (up.len() as f64 * 1e9 * 0.040)
}

#[test]
fn the_thesis_load_factor_at_500_and_2000_retrievals_per_second() {
    // §5.4: all-to-all retrievals of 2, 8 or 32 KB at 500–2000 per second per server are a load factor of
    // about 0.17–0.67 on the aggregation→core links. Closed form: a server's responses cross the core with
    // probability 96/127; a pod's 32 servers send r × E[bytes] each through 8 uplinks of 1 Gbps. The thesis's
    // figures are response payload in decimal kilobytes; on the wire (headers, framing, requests) the same
    // traffic is 4 % more, which is what the simulation must carry.
    let payload = (2_000 + 8_000 + 32_000) as f64 / 3.0;
    let wire = |s: u64| s + s.div_ceil(1460) * 70; // 40 B headers + 30 B framing per packet
    let on_wire = (wire(2_000) + wire(8_000) + wire(32_000)) as f64 / 3.0 + 80.0; // + the 10 B request
    let factor = |r: f64, bytes: f64| 32.0 * r * bytes * 8.0 * (96.0 / 127.0) / 8e9;
    for (rate, stated) in [(500, 0.17), (2000, 0.67)] {
        let thesis = factor(rate as f64, payload);
        assert!((thesis - stated).abs() <= 0.02, "closed form {thesis:.3} vs the thesis's {stated}");
        let measured = agg_core_utilization(rate);
        let predicted = factor(rate as f64, on_wire);
        assert!(
            (measured / predicted - 1.0).abs() <= 0.03,
            "measured {measured:.4} vs {predicted:.4} predicted on the wire at {rate}/s"
        );
    }
}

#[test]
fn background_flows_are_closed_loop_and_end_with_the_foreground() {
    // Two sources keep one flow each going, to random other hosts, while retrievals run.
    let (e, s) = run(&detail(
        "[[workload]]\nkind = \"retrieval\"\nrate = 500\nuntil = \"20ms\"\nsize = \"2KiB\"\nclients = \"0-7\"\n\
         servers = \"8-15\"\nclass = 0\n\
         [[workload]]\nkind = \"background\"\nsize = \"200KB\"\nsources = [16, 17]\nclass = 1\n",
    ));
    assert_eq!(s.stop_reason, tailsim::StopReason::Finished);
    let bg: Vec<_> = e.world.records.all().into_iter().filter(|r| matches!(r.role, Role::Background(1))).collect();
    // detail-128's links all have one delay: word of a finished flow takes the path's propagation delay,
    // which is at least the longest link's (the least delay of word, `word_floor`).
    let link = e.world.net.ports.iter().map(|p| p.delay).max().unwrap();
    assert!(e.world.net.ports.iter().all(|p| p.delay == link));
    for src in [16, 17] {
        let mine: Vec<_> = bg.iter().filter(|r| r.src.0 == src).collect();
        assert!(mine.len() >= 3, "{} flows from {src}", mine.len());
        // One at a time: each starts when word that the previous one from the same source finished reaches
        // the source: the path's propagation delay after its last byte reached the receiver.
        for pair in mine.windows(2) {
            let word = e.world.net.propagation(pair[0].dst, pair[0].src, tailsim::units::PathId::NONE);
            assert!(word >= link + link, "{word:?}");
            assert_eq!(Some(pair[1].start), pair[0].end.map(|t| t + word));
        }
        assert!(mine.iter().all(|r| r.dst.0 != src && r.size == 200_000));
        assert!(mine.last().unwrap().end.is_none(), "the last one is cut off when the foreground ends");
    }
    // The run ended the least delay of word after the last retrieval (word of it reaching every part of a
    // parallel run).
    let last = e.world.jobs.retrievals.iter().map(|r| r.end.unwrap()).max().unwrap();
    assert_eq!(e.world.now, last + link);
    assert!(e.world.jobs.retrievals.iter().all(|r| (0..8).contains(&r.client.0) && (8..16).contains(&r.server.0)));
}

#[test]
fn retrieval_workloads_are_deterministic() {
    let cfg = detail(
        "[[workload]]\nkind = \"workflow\"\nshape = \"partition-aggregate\"\nfanout = [10, 20]\nrate = 300\n\
         until = \"10ms\"\nsize = \"2KiB\"\nclients = \"random:64\"\n\
         [[workload]]\nkind = \"background\"\nsize = \"1MiB\"\nclass = 1\n",
    );
    let times = |e: &tailsim::Experiment| {
        e.world.jobs.retrievals.iter().map(|r| (r.client.0, r.server.0, r.start, r.end)).collect::<Vec<_>>()
    };
    let (a, _) = run(&cfg);
    let (b, _) = run(&cfg);
    assert!(!a.world.jobs.retrievals.is_empty());
    assert_eq!(times(&a), times(&b));
    let clients: std::collections::BTreeSet<u32> = a.world.jobs.workflows.iter().map(|w| w.client.0).collect();
    assert!(clients.len() <= 64);
    // The back-ends are the 64 other hosts: no retrieval goes to a front-end.
    assert!(a.world.jobs.retrievals.iter().all(|r| !clients.contains(&r.server.0)));
}

#[test]
fn bad_retrieval_workloads_are_refused_with_their_key() {
    let base = |w: &str| detail(&format!("[[workload]]\n{w}\n"));
    let cases = [
        ("kind = \"retrieval\"\nrate = 0\ncount = 1\nsize = 10", "workload[0].rate`: must be a positive number"),
        ("kind = \"retrieval\"\nrate = 10\nsize = 10", "give `count`"),
        ("kind = \"retrieval\"\nrate = 10\ncount = 1\nsize = 10\nclients = []", "an empty set of hosts"),
        (
            "kind = \"retrieval\"\nrate = 10\ncount = 1\nsize = 10\nclients = \"0-9\"\nservers = \"5-20\"",
            "host 5 is also in `clients`",
        ),
        ("kind = \"retrieval\"\nrate = 10\ncount = 1\nsize = 10\nclients = [128]", "host 128 does not exist"),
        ("kind = \"retrieval\"\nrate = 10\ncount = 1\nsize = 10\nclients = \"9-3\"", "not a range"),
        ("kind = \"retrieval\"\nrate = 10\ncount = 1\nsize = 10\nclients = \"all\"\nservers = [1]", "also in"),
        ("kind = \"retrieval\"\nrate = 10\ncount = 1\nsize = 10\nclients = \"all\"", "leaves none"),
        (
            "kind = \"workflow\"\nshape = \"partition-aggregate\"\nfanout = [40]\nrate = 10\ncount = 1\n\
             size = 10\nclients = \"0-95\"",
            "a fan-out of 40 exceeds the 32 servers",
        ),
        ("kind = \"workflow\"\nshape = \"sequential\"\nrate = 10\ncount = 1\nsize = 10", "workload[0].parts"),
        ("kind = \"workflow\"\nshape = \"loop\"\nparts = 2\nrate = 10\ncount = 1\nsize = 10", "found \"loop\""),
        ("kind = \"retrieval\"\nrate = 10\ncount = 1\nsizes = []", "an empty list"),
        ("kind = \"retrieval\"\nrate = 10\ncount = 1\nsize = 10\nfanout = [2]", "does not apply to kind"),
        ("kind = \"background\"\nsize = 10\nper_source = 0", "workload[0].per_source`: must be at least 1"),
    ];
    for (w, want) in cases {
        let msg = config_error(&base(w));
        assert!(msg.contains(want), "for:\n{w}\nexpected «{want}» in: {msg}");
        assert!(msg.starts_with("x.toml:"), "{msg}");
    }
}
