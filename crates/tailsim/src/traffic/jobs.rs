//! Request–response traffic (the DeTail thesis, §5.4): a *retrieval* is a small request from a client to a
//! server followed by the server's response, timed from the request's first byte to the response's last;
//! a *workflow* is a client's group of retrievals, issued one after another (sequential) or all at once
//! (partition-aggregate) and done when its last retrieval is. Arrivals are Poisson per client; the
//! aggregate over C clients is one Poisson process of C times the rate with a uniformly drawn client.
//!
//! *Background* flows are closed-loop: each source keeps `per_source` flows going, starting a new one (to
//! a fresh destination, with a fresh size, from its own random streams) when word that one finished reaches
//! it, for as long as the foreground traffic lasts (sim/chain.rs; the run ends when every other workload is
//! done).
//!
//! Generators only draw: who, to whom, how large. The world (sim.rs) starts the flows, chains a response
//! to its request and the next retrieval to the last, and keeps the records below.

use super::Sizes;
use crate::engine::Rng;
use crate::units::{NodeId, Time};

/// How a workflow's retrievals are issued.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// One retrieval.
    Single,
    /// `parts` retrievals, each issued when the previous one completes.
    Sequential { parts: u32 },
    /// One retrieval from each of a fan-out of distinct servers, all issued at once; the fan-out is drawn
    /// uniformly from the list for each workflow.
    PartitionAggregate { fanouts: Vec<u32> },
    /// FastLane's bursts (§6.6.1): a response size s and a total T are drawn, and T / s servers (rounded,
    /// at least 1) each send s, all at once.
    PartitionTotal { totals: Vec<u64> },
}

impl Shape {
    pub fn name(&self) -> &'static str {
        match self {
            Shape::Single => "retrieval",
            Shape::Sequential { .. } => "sequential",
            Shape::PartitionAggregate { .. } | Shape::PartitionTotal { .. } => "partition-aggregate",
        }
    }
}

/// A Poisson source of workflows (a lone retrieval is a workflow of one).
pub struct JobGen {
    pub clients: Vec<u32>,
    /// Candidate servers; a client never retrieves from itself. Reordered in place by the fan-out draws.
    pub servers: Vec<u32>,
    pub shape: Shape,
    /// Request size in bytes.
    pub request: u64,
    /// Response sizes.
    pub sizes: Sizes,
    /// Mean gap of the aggregate arrival process, in picoseconds.
    pub mean_gap_ps: f64,
    pub next_at: f64,
    pub remaining: Option<u64>,
    pub until: Option<Time>,
    pub gap_rng: Rng,
    pub pick_rng: Rng,
    pub size_rng: Rng,
}

/// One workflow as drawn: its client and its retrievals' (server, response size), in issue order.
pub struct NewJob {
    pub client: NodeId,
    pub parts: Vec<(NodeId, u64)>,
}

impl JobGen {
    pub fn next_time(&self) -> Option<Time> {
        let t = Time(self.next_at.round() as u64);
        (self.remaining != Some(0) && self.until.is_none_or(|u| t < u)).then_some(t)
    }

    /// Draw the workflow due now and advance to the next arrival.
    pub fn release(&mut self) -> NewJob {
        let client = self.clients[self.pick_rng.below(self.clients.len() as u32) as usize];
        let parts = match &self.shape {
            Shape::Single => vec![(self.server_for(client), self.sizes.draw(&mut self.size_rng))],
            Shape::Sequential { parts } => {
                (0..*parts).map(|_| (self.server_for(client), self.sizes.draw(&mut self.size_rng))).collect()
            }
            Shape::PartitionAggregate { fanouts } => {
                let f = fanouts[self.pick_rng.below(fanouts.len() as u32) as usize] as usize;
                self.fan_out(client, f, None)
            }
            Shape::PartitionTotal { totals } => {
                let total = totals[self.pick_rng.below(totals.len() as u32) as usize];
                let size = self.sizes.draw(&mut self.size_rng).max(1);
                let f = ((total as f64 / size as f64).round() as usize).max(1);
                self.fan_out(client, f, Some(size))
            }
        };
        if let Some(r) = &mut self.remaining {
            *r -= 1;
        }
        self.next_at += self.gap_rng.exp(self.mean_gap_ps);
        NewJob { client: NodeId(client), parts }
    }

    /// `f` distinct servers other than `client` (a partial Fisher–Yates shuffle), each with a response of
    /// `size` or a size drawn per server.
    fn fan_out(&mut self, client: u32, f: usize, size: Option<u64>) -> Vec<(NodeId, u64)> {
        let mut n = self.servers.len();
        if let Some(pos) = self.servers.iter().position(|&s| s == client) {
            self.servers.swap(pos, n - 1);
            n -= 1;
        }
        (0..f.min(n))
            .map(|i| {
                let j = i + self.pick_rng.below((n - i) as u32) as usize;
                self.servers.swap(i, j);
                (NodeId(self.servers[i]), size.unwrap_or_else(|| self.sizes.draw(&mut self.size_rng)))
            })
            .collect()
    }

    /// A uniformly random server other than `client`.
    fn server_for(&mut self, client: u32) -> NodeId {
        let own = self.servers.contains(&client);
        let n = self.servers.len() as u32 - own as u32;
        let mut k = self.pick_rng.below(n) as usize;
        if own {
            // Skip the client's own slot: index k of the list without it.
            let pos = self.servers.iter().position(|&s| s == client).expect("contained");
            if k >= pos {
                k += 1;
            }
        }
        NodeId(self.servers[k])
    }
}

/// Closed-loop background flows.
pub struct BackgroundGen {
    pub sources: Vec<u32>,
    pub dests: Vec<u32>,
    pub per_source: u32,
    pub sizes: Sizes,
    pub start: Time,
    /// Whether the initial flows are still to be released.
    pub pending: bool,
    /// Per source (in `sources` order): the streams of its flows' destinations and sizes. A source's own, so
    /// that its draws do not depend on when other sources' flows finish (the order of completions over the
    /// whole fabric, which no part of a parallel run sees).
    pub streams: Vec<(Rng, Rng)>,
}

impl BackgroundGen {
    /// The streams of source `k` of background workload `i`.
    pub fn streams_of(seed: u64, i: usize, k: usize) -> (Rng, Rng) {
        let index = ((i as u64) << 32) | k as u64;
        (Rng::new(seed, "background-dests", index), Rng::new(seed, "background-sizes", index))
    }

    /// The initial flows: `per_source` from every source.
    pub fn release(&mut self, out: &mut Vec<super::NewFlow>) {
        self.pending = false;
        for i in 0..self.sources.len() {
            for _ in 0..self.per_source {
                let src = NodeId(self.sources[i]);
                out.push(self.next_from(src));
            }
        }
    }

    /// The flow that replaces a finished one from `src`.
    pub fn next_from(&mut self, src: NodeId) -> super::NewFlow {
        let own = self.dests.contains(&src.0);
        let n = self.dests.len() as u32 - own as u32;
        let source = self.sources.iter().position(|&s| s == src.0).expect("a background source");
        let (dst_rng, size_rng) = &mut self.streams[source];
        let mut k = dst_rng.below(n) as usize;
        if own && k >= self.dests.iter().position(|&d| d == src.0).expect("contained") {
            k += 1;
        }
        super::NewFlow::new(src, NodeId(self.dests[k]), self.sizes.draw(size_rng))
    }
}

/// What a flow is part of (flows.parquet's `role` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An ordinary open-loop flow (Poisson, incast, trace).
    Flow,
    /// A closed-loop background flow of generator `g`.
    Background(u32),
    /// The request of retrieval `r`.
    Request(u32),
    /// The response of retrieval `r`.
    Response(u32),
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Flow => "flow",
            Role::Background(_) => "background",
            Role::Request(_) => "request",
            Role::Response(_) => "response",
        }
    }
    pub fn retrieval(self) -> Option<u32> {
        match self {
            Role::Request(r) | Role::Response(r) => Some(r),
            _ => None,
        }
    }
}

/// One retrieval, as written to retrievals.parquet.
#[derive(Clone, Debug)]
pub struct Retrieval {
    pub workflow: u32,
    pub client: NodeId,
    pub server: NodeId,
    /// Response size in bytes.
    pub size: u64,
    /// When the request was issued (None: not yet, for the later parts of a sequential workflow).
    pub start: Option<Time>,
    /// When the client held the response's last byte.
    pub end: Option<Time>,
    /// Request and response each alone on the empty fabric, back to back.
    pub ideal: Time,
    /// The ids of its request and its response, made with its workflow (a flow not started by the end of the
    /// run is in no table).
    pub request_flow: u64,
    pub response_flow: u64,
}

/// One workflow, as written to workflows.parquet.
#[derive(Clone, Debug)]
pub struct Workflow {
    /// The generator (workload index) it came from.
    pub workload: u32,
    pub shape: &'static str,
    pub client: NodeId,
    pub start: Time,
    pub end: Option<Time>,
    /// Its retrievals are `first .. first + parts` in `Jobs::retrievals`.
    pub first: u32,
    pub parts: u32,
    pub done: u32,
    /// Sequential workflows issue their parts one at a time.
    pub sequential: bool,
    /// Sum (sequential) or maximum (partition-aggregate) of the retrievals' ideal times.
    pub ideal: Time,
}

impl Workflow {
    pub fn time(&self) -> Option<Time> {
        self.end.map(|e| e - self.start)
    }
}

impl Retrieval {
    pub fn time(&self) -> Option<Time> {
        Some(self.end? - self.start?)
    }
}

/// Every retrieval and workflow of a run.
#[derive(Default)]
pub struct Jobs {
    pub retrievals: Vec<Retrieval>,
    pub workflows: Vec<Workflow>,
}
