//! Packet capture: the packets a port sends, as a standard pcap file per port (`output.pcap`), so Wireshark,
//! tcpdump or tcptrace can look at a simulated link as at a real one.
//!
//! A `DEQUEUE` hook on the captured ports only (other ports pay nothing) records each packet as it starts
//! onto the wire: the time, and the header fields tailsim has. At the end the records become pcap files
//! (nanosecond timestamps, Ethernet link type) whose frames carry synthesized Ethernet, IPv4 and TCP (or UDP)
//! headers: MAC and IPv4 addresses from the node numbers (host h5 is 10.0.0.5, 02:00:00:00:00:05), the ECN
//! bits (ECT(0), CE), the class as DSCP, TCP sequence and acknowledgment numbers in bytes (segment × MSS), the
//! ECE flag; ports from the transport's flow slot (each connection its own 4-tuple). Payload bytes are not
//! stored: each frame is cut after its headers (`incl_len`) with its real length (`orig_len`), as a capture
//! with a short snap length would be. Control frames of link-local mechanisms (PFC pauses, LinkGuardian's
//! frames) bypass the queue and are not captured.

use super::Hooks;
use crate::net::hooks::{HookCtx, HookSet};
use crate::net::packet::PktKind;
use crate::net::port::Port;
use crate::units::{NodeId, PktId, PortId, Time};
use std::io::{self, Write};
use std::path::Path;

/// What is kept of a captured packet (40 B).
#[derive(Clone, Copy)]
struct Rec {
    t: Time,
    /// Index into `Capture::ports`.
    port: u16,
    kind: PktKind,
    ect: bool,
    ce: bool,
    ece: bool,
    class: u8,
    src: u32,
    dst: u32,
    slot: u32,
    seq: u32,
    size: u32,
}

pub struct Capture {
    /// The captured ports and their files' names (`pcap/<node>-<peer>.pcap`).
    ports: Vec<(PortId, String)>,
    /// By port id: its index in `ports` (`NOT_CAPTURED` for the others), looked up per packet.
    index: Vec<u16>,
    recs: Vec<Rec>,
    /// Packets recorded at most (the rest are counted, not kept).
    max: usize,
    missed: u64,
    /// The budget ran out at this instant: nothing from it on is kept (`on_dequeue`).
    full_at: Option<Time>,
    mss: u32,
}

const NOT_CAPTURED: u16 = u16::MAX;

impl Capture {
    /// `ports` (fewer than 65,535) of a network of `n_ports` ports.
    pub fn new(ports: Vec<(PortId, String)>, n_ports: usize, max: usize, mss: u32) -> Capture {
        let mut index = vec![NOT_CAPTURED; n_ports];
        for (i, (p, _)) in ports.iter().enumerate() {
            index[p.idx()] = i as u16;
        }
        Capture { ports, index, recs: Vec::new(), max, missed: 0, full_at: None, mss }
    }
}

impl Hooks for Capture {
    const NAME: &'static str = "pcap";
    const HOOKS: HookSet = HookSet::DEQUEUE;

    /// Splits by port: each part captures its own ports' packets (at most the budget, which the merge cuts
    /// to the whole run's: `take_part`).
    fn parallel_refusal(&self) -> Option<&'static str> {
        None
    }

    fn take_part(&mut self, other: &mut Capture, _ports: &[Port], _theirs: &dyn Fn(NodeId) -> bool) {
        let seen = (self.recs.len() + other.recs.len()) as u64 + self.missed + other.missed;
        // Each part's records are its ports' in the serial run's order; by time, stably, they interleave as
        // the serial run took them (a port's in its order; two ports' at one instant are cut or kept
        // together, below).
        let mut recs = std::mem::take(&mut self.recs);
        recs.append(&mut other.recs);
        recs.sort_by_key(|r| r.t);
        // The serial run stopped at the instant of the packet past the budget. A part that spent its budget
        // stopped at its own such instant, no earlier (it had seen only some of the run's packets); before
        // the earliest of those every part kept all it captured, so the union is whole there.
        let past_budget = recs.get(self.max).map(|r| r.t);
        let cut = [self.full_at, other.full_at, past_budget].into_iter().flatten().min();
        if let Some(at) = cut {
            recs.truncate(recs.partition_point(|r| r.t < at));
        }
        self.full_at = cut;
        self.missed = seen - recs.len() as u64;
        self.recs = recs;
    }

    fn on_dequeue(&mut self, c: &mut HookCtx, at: PortId, id: PktId) {
        if self.full_at.is_some() || self.recs.len() >= self.max {
            // The budget is spent: capture stops at this instant, so that what is kept does not depend on
            // the order of packets sent at the same instant by ports of different parts of a parallel run
            // (the ones already kept from this instant go too).
            if self.full_at.is_none() {
                let keep = self.recs.partition_point(|r| r.t < c.now);
                self.missed += (self.recs.len() - keep) as u64;
                self.recs.truncate(keep);
                self.full_at = Some(c.now);
            }
            self.missed += 1;
            return;
        }
        let port = self.index[at.idx()];
        if port == NOT_CAPTURED {
            return;
        }
        let p = c.packet(id);
        self.recs.push(Rec {
            t: c.now,
            port,
            kind: p.kind,
            ect: p.ect,
            ce: p.ce,
            ece: p.ece,
            class: p.class,
            src: p.src.0,
            dst: p.dst.0,
            slot: p.flow.0 ^ p.flow_gen.rotate_left(16),
            seq: p.seq,
            size: p.size,
        });
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::json!({ "captured": self.recs.len(), "not_captured": self.missed, "files": self.ports.len() })
    }

    fn files(&self, dir: &Path) -> io::Result<Vec<(String, u64)>> {
        std::fs::create_dir_all(dir.join("pcap"))?;
        // The records by port, each port's in time order (a stable sort): one pass for all the files.
        let mut order: Vec<u32> = (0..self.recs.len() as u32).collect();
        order.sort_by_key(|&k| self.recs[k as usize].port);
        let mut runs = order.chunk_by(|&a, &b| self.recs[a as usize].port == self.recs[b as usize].port).peekable();
        let mut out = Vec::new();
        for (i, (_, name)) in self.ports.iter().enumerate() {
            let mine = runs.next_if(|run| self.recs[run[0] as usize].port as usize == i).unwrap_or(&[]);
            let rel = format!("pcap/{name}.pcap");
            let path = dir.join(&rel);
            crate::metrics::output::write_atomic(&path, |f| {
                let mut w = io::BufWriter::new(f);
                write_header(&mut w)?;
                for &k in mine {
                    write_frame(&mut w, &self.recs[k as usize], self.mss)?;
                }
                w.flush()
            })?;
            out.push((rel, std::fs::metadata(&path)?.len()));
        }
        Ok(out)
    }
}

/// The pcap global header: nanosecond timestamps (magic a1b23c4d), version 2.4, Ethernet.
fn write_header(w: &mut impl Write) -> io::Result<()> {
    w.write_all(&0xa1b2_3c4du32.to_le_bytes())?;
    w.write_all(&2u16.to_le_bytes())?;
    w.write_all(&4u16.to_le_bytes())?;
    w.write_all(&0i32.to_le_bytes())?; // time zone
    w.write_all(&0u32.to_le_bytes())?; // accuracy
    w.write_all(&65_535u32.to_le_bytes())?; // snap length
    w.write_all(&1u32.to_le_bytes()) // LINKTYPE_ETHERNET
}

/// TCP carries the TCP family's packets; everything else (Homa, pHost, NDP, RDMA, raw, notices) is UDP.
fn is_tcp(k: PktKind) -> bool {
    matches!(k, PktKind::Data | PktKind::Ack | PktKind::Probe | PktKind::Syn | PktKind::SynAck)
}

/// The port a connection uses at its sender (each flow slot and generation its own).
fn flow_port(slot: u32) -> u16 {
    1024 + (slot % 64_000) as u16
}

const SERVICE_PORT: u16 = 5001;

fn write_frame(w: &mut impl Write, r: &Rec, mss: u32) -> io::Result<()> {
    let tcp = is_tcp(r.kind);
    let l4 = if tcp { 20 } else { 8 };
    let mut f = Vec::with_capacity(14 + 20 + l4);
    // Ethernet: locally administered MACs from the node numbers.
    let mac = |n: u32| [0x02, 0, (n >> 24) as u8, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    f.extend_from_slice(&mac(r.dst));
    f.extend_from_slice(&mac(r.src));
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    // IPv4: total length is the packet's size (its headers and payload), ECN and DSCP in the TOS byte.
    let ecn = if r.ce {
        3
    } else if r.ect {
        2
    } else {
        0
    };
    let ip_len = r.size.clamp(20 + l4 as u32, 65_535) as u16;
    let ip = |n: u32| [10, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[1] = (r.class.min(7) << 5) | ecn;
    h[2..4].copy_from_slice(&ip_len.to_be_bytes());
    h[6] = 0x40; // don't fragment
    h[8] = 64;
    h[9] = if tcp { 6 } else { 17 };
    h[12..16].copy_from_slice(&ip(r.src));
    h[16..20].copy_from_slice(&ip(r.dst));
    let sum = checksum(&h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&h);
    // Data flows sender → receiver from the connection's port to the service port; ACKs come back.
    let back = matches!(r.kind, PktKind::Ack | PktKind::SynAck);
    let (sport, dport) = if back { (SERVICE_PORT, flow_port(r.slot)) } else { (flow_port(r.slot), SERVICE_PORT) };
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    if tcp {
        let bytes = r.seq.wrapping_mul(mss);
        let (seq, ack) = if back { (0u32, bytes) } else { (bytes, 0u32) };
        f.extend_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(&ack.to_be_bytes());
        let mut flags: u8 = match r.kind {
            PktKind::Syn => 0x02,
            PktKind::SynAck => 0x12,
            PktKind::Ack => 0x10,
            _ => 0x18, // PSH, ACK
        };
        if r.ece {
            flags |= 0x40;
        }
        f.push(5 << 4); // data offset: 20 B
        f.push(flags);
        f.extend_from_slice(&65_535u16.to_be_bytes()); // window
        f.extend_from_slice(&[0, 0, 0, 0]); // checksum (not computed: no payload is kept), urgent pointer
    } else {
        f.extend_from_slice(&(ip_len - 20).to_be_bytes());
        f.extend_from_slice(&[0, 0]); // checksum: none
    }
    let ns = r.t.0 / 1000;
    w.write_all(&((ns / 1_000_000_000) as u32).to_le_bytes())?;
    w.write_all(&((ns % 1_000_000_000) as u32).to_le_bytes())?;
    w.write_all(&(f.len() as u32).to_le_bytes())?;
    w.write_all(&(14 + ip_len as u32).to_le_bytes())?;
    w.write_all(&f)
}

/// The Internet checksum of an IPv4 header.
fn checksum(h: &[u8]) -> u16 {
    let mut s: u32 = h.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}
