//! The hot path does not allocate: once queues and pipes have grown to their working size, moving packets
//! costs no heap allocation. Measured with a counting global allocator over a steady-state window.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static A: Counting = Counting;

#[test]
fn steady_state_moves_packets_without_allocating() {
    // One test, run in sequence (the allocation counter is global to the process): plain; with QJUMP
    // policing just below line rate (a shaper's held queues grow with TCP's window, amortized); and with
    // switch mechanisms on the hooks (PFC frames, pauses and timers, adaptive load balancing, bounce drops).
    steady_state("ecmp", "");
    steady_state("ecmp", "[qjump]\nf = [140]\n");
    steady_state("adaptive", "[pfc]\npause = \"3KB\"\nunpause = \"1500B\"\n");
    // FastLane: drops at 60 KB ports become notices through the notification queues, and TCP senders
    // resend from their notice lists (Algorithm 1), under CoDel marking.
    steady_state("ecmp", "[fastlane]\n[codel]\n");
    // RDMA at line rate: ECMP collisions overflow ports and go-back-N resends from every hole.
    steady_state("ecmp", "[transport]\nkind = \"rdma\"\n");
    // NICs that serve flows in turn: per-flow queues emptied, freed and taken again as windows open.
    steady_state("ecmp", "[host]\nnic_scheduler = \"per-flow-round-robin\"\n");
    burstradar_steady_state();
    sqr_steady_state();
    linkguardian_steady_state();
}

/// LinkGuardian in ordered mode over a 100G link corrupting 0.1 % of its frames, under a 90G raw stream: every
/// frame numbered and copied into the sender's loop, holes noticed, resends, packets held in the receiver's
/// loop, pauses and resumes.
fn linkguardian_steady_state() {
    let toml = "[topology]\nkind = \"inline\"\nhosts = 2\nswitch = [{ name = \"sw2\" }, { name = \"sw6\" }]\n\
                link = [{ a = \"h0\", b = \"sw2\", rate = \"100Gbps\" }, { a = \"sw2\", b = \"sw6\", rate = \"100Gbps\", \
                delay = \"100ns\" }, { a = \"sw6\", b = \"h1\", rate = \"100Gbps\" }]\n[switch]\nbuffer = \"4MB\"\n\
                [[fault]]\nat = \"0us\"\nlink = [\"sw2\", \"sw6\"]\ncorrupt = 0.001\none_way = true\n\
                [linkguardian]\nlinks = [[\"sw2\", \"sw6\"]]\ncopies = 2\n\
                [[workload]]\nkind = \"cbr\"\nsrc = 0\ndst = 1\nline_rate = \"90Gbps\"\nsize = 1500\nuntil = \"20ms\"\n";
    let mut e = tailsim::load_str(toml, "t.toml", &std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")), &[]).unwrap();
    use tailsim::sim::StopAt;
    use tailsim::units::Time;
    e.world.run(StopAt { time: Some(Time::ms(2)), max_events: None }, &mut |_| true);
    let copies0 = e.world.pk.made[2];
    let before = ALLOCS.load(Ordering::Relaxed);
    e.world.run(StopAt { time: Some(Time::ms(6)), max_events: None }, &mut |_| true);
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    let copies = e.world.pk.made[2] - copies0;
    let st = &e.world.net.mechanism_summaries()[0].1["links"][0];
    assert!(copies > 15_000 && st["held"].as_u64().unwrap() > 500, "LG must be at work: {copies}, {st}");
    eprintln!("linkguardian: {allocs} allocations, {copies} copies, {st}");
    // The loops' queues grow geometrically when the held backlog reaches a new high (a few times a window);
    // an allocation per copy would cost thousands.
    assert!(allocs * 1000 <= copies, "{allocs} allocations for {copies} copies");
    e.world.check_conservation().unwrap();
}

/// SQR's ring on its testbed: a long CUBIC flow h2 → h4 with sw6–sw10 failing for 760 us every 5 ms, so the
/// window has copies made, passed round the ring, retired, and resent in order after each failure.
fn sqr_steady_state() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tailsim-noalloc-sqr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.csv"), "src,dst,size_bytes,start_us\n2,4,1000000000,0\n").unwrap();
    let toml = "[topology]\npreset = \"sqr-testbed\"\n[sqr]\n[[workload]]\nkind = \"trace\"\npath = \"t.csv\"\n\
                [[fault]]\nat = \"2ms\"\nlink = [\"sw6\", \"sw10\"]\nstate = \"down\"\nduration = \"760us\"\n\
                every = \"5ms\"\ncount = 20\n";
    let mut e = tailsim::load_str(toml, "t.toml", &dir, &[]).unwrap();
    // The trace is read while loading.
    std::fs::remove_dir_all(&dir).unwrap();
    use tailsim::sim::StopAt;
    use tailsim::units::Time;
    e.world.run(StopAt { time: Some(Time::ms(15)), max_events: None }, &mut |_| true);
    let copies0 = e.world.pk.made[2];
    let before = ALLOCS.load(Ordering::Relaxed);
    e.world.run(StopAt { time: Some(Time::ms(35)), max_events: None }, &mut |_| true);
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    let copies = e.world.pk.made[2] - copies0;
    let q = &e.world.net.mechanism_summaries()[0].1;
    assert!(copies > 5_000 && q["resent"].as_u64().unwrap() > 0, "SQR must be copying and resending: {copies}, {q}");
    eprintln!("sqr: {allocs} allocations, {copies} copies, {q}");
    assert!(allocs * 1000 <= copies, "{allocs} allocations for {copies} copies");
    e.world.check_conservation().unwrap();
}

/// BurstRadar on its testbed under raw bursts: marks, ring writes, couriers cloned through the mirror port.
/// The exported-records table grows geometrically (a few reallocations per window); a per-mark allocation
/// would cost one per courier.
fn burstradar_steady_state() {
    let sizes = "packet_sizes = [[200, 0.3], [576, 0.6], [1000, 0.8], [1500, 1.0]]";
    let bursts = "on = [[4, 0.0], [40, 1.0]]\noff = [[200, 0.0], [1000, 1.0]]";
    let toml = common::burstradar_testbed(sizes, bursts, "", 40);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let mut e = tailsim::load_str(&toml, "t.toml", &dir, &[]).unwrap();
    use tailsim::sim::StopAt;
    use tailsim::units::Time;
    e.world.run(StopAt { time: Some(Time::ms(10)), max_events: None }, &mut |_| true);
    let copies0 = e.world.pk.made[2];
    let before = ALLOCS.load(Ordering::Relaxed);
    e.world.run(StopAt { time: Some(Time::ms(30)), max_events: None }, &mut |_| true);
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    let couriers = e.world.pk.made[2] - copies0;
    assert!(couriers > 2_000, "BurstRadar must be marking in the window: {couriers}");
    assert!(allocs * 500 <= couriers, "{allocs} allocations for {couriers} couriers");
    e.world.check_conservation().unwrap();
}

fn steady_state(lb: &str, extra: &str) {
    let fastlane = extra.contains("[fastlane]");
    let rdma = extra.contains("rdma");
    // 16 long DCTCP flows across a leaf-spine fabric with ECMP and switch delays: every datapath element is
    // exercised (host delay lines, NIC and switch queues, wires, forwarding pipelines, timers).
    let mut trace = String::from("src,dst,size_bytes,start_us\n");
    for s in 0..16 {
        trace.push_str(&format!("{s},{},100000000,0\n", 16 + (s * 7) % 16));
    }
    // One directory a configuration: the tests run in parallel threads.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "tailsim-noalloc-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.csv"), trace).unwrap();
    let toml = format!(
        r#"
[topology]
preset = "homa-144"
[switch]
{switch}
[routing]
load_balance = "{lb}"
{transport}
{extra}
[[workload]]
kind = "trace"
path = "{}"
"#,
        dir.join("t.csv").display(),
        switch = if fastlane { "buffer = \"60KB\"" } else { "buffer = \"225KB\"\necn_threshold = \"30KB\"" },
        transport = match (fastlane, rdma) {
            (_, true) => "",
            (true, _) => "[transport]\nkind = \"tcp\"\necn = true",
            _ => "[transport]\nkind = \"dctcp\"",
        },
    );
    let mut e = tailsim::load_str(&toml, "t.toml", &dir, &[]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    use tailsim::sim::StopAt;
    use tailsim::units::Time;
    let warm = if fastlane { 20 } else { 5 };
    e.world.run(StopAt { time: Some(Time::ms(warm)), max_events: None }, &mut |_| true);
    let hops0 = e.world.net.packet_hops;
    let made0 = e.world.pk.made[1];
    let rtx = |e: &tailsim::Experiment| match &e.world.transport {
        tailsim::transport::Transport::Rdma(t) => t.stats.retransmits,
        _ => 0,
    };
    let rtx0 = rtx(&e);
    let before = ALLOCS.load(Ordering::Relaxed);
    e.world.run(StopAt { time: Some(Time::ms(warm + 10)), max_events: None }, &mut |_| true);
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    let hops = e.world.net.packet_hops - hops0;
    assert!(hops > 100_000, "only {hops} packet-hops in the window");
    assert_eq!(e.world.flows_finished, 0, "flows must still be running in the window");
    if fastlane {
        // Per-flow notice lists and the hosts' transmit delay lines grow (geometrically) whenever a flow's
        // window reaches a new high, which a run of long flows keeps doing slowly: a handful per window. A
        // per-notice allocation would cost one per notice, hundreds here.
        let notices = e.world.pk.made[1] - made0;
        assert!(allocs * 100 <= notices, "{allocs} allocations for {notices} notices, {hops} packet-hops");
    } else {
        assert!(allocs == 0, "{allocs} allocations during {hops} packet-hops");
    }
    e.world.check_conservation().unwrap();
    if lb == "adaptive" {
        let frames = e.world.pk.made[1] - made0;
        assert!(frames > 100, "PFC must be sending frames in the window: {frames}");
    }
    if fastlane {
        let notices = e.world.pk.made[1] - made0;
        assert!(notices > 100, "FastLane must be making notices in the window: {notices}");
    }
    if rdma {
        let resent = rtx(&e) - rtx0;
        assert!(resent > 1000, "go-back-N must be resending in the window: {resent}");
    }
    if let Some(q) = &e.world.net.qjump {
        assert!(
            q.stats[0].policed > 100 && q.stats[0].admitted > 10_000,
            "the regulator must be working: {:?}",
            (q.stats[0].policed, q.stats[0].admitted)
        );
    }
}
