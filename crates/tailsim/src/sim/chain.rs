//! Flows that start other flows: a retrieval's request starts its response, a workflow's finished
//! retrieval completes it or issues the next one, and a finished background flow is replaced
//! (traffic/jobs.rs describes the workloads).

use super::World;
use crate::engine::{Event, Word};
use crate::metrics::{ideal_fct, FlowRecord};
use crate::traffic::jobs::{Retrieval, Role, Shape, Workflow};
use crate::traffic::{Generator, NewFlow};
use crate::units::{NodeId, PathId, Time};

impl World {
    /// Generator `i` releases a workflow: record it and its retrievals, make every retrieval's flows (the
    /// request and the response, in that order, retrieval by retrieval), and issue the first retrieval
    /// (sequential) or all of them (a lone retrieval, partition-aggregate). A flow issued later (a response,
    /// a later request) is made now, dormant, and started by what its sender's host sees: the server when
    /// the request has arrived, the client when the previous retrieval's response has (`flow_done`). So
    /// every flow takes its id and its transport slot at this arrival, an event every part of a parallel
    /// run handles, in the same order in every part (docs/parallel.md, "Flows that start flows").
    pub(super) fn on_workflow_arrival(&mut self, i: usize) {
        let Generator::Jobs(g) = &mut self.generators[i] else { unreachable!("a workflow generator") };
        let job = g.release();
        let (request, sequential, shape) = (g.request, matches!(g.shape, Shape::Sequential { .. }), g.shape.name());
        self.advance(i);
        let first = self.jobs.retrievals.len() as u32;
        let wf = self.jobs.workflows.len() as u32;
        let mut ideals = Time::ZERO;
        for &(server, size) in &job.parts {
            let fr = self.framing;
            let ideal = ideal_fct(&self.net, job.client, server, request, fr)
                + ideal_fct(&self.net, server, job.client, size, fr);
            ideals = if sequential { ideals + ideal } else { ideals.max(ideal) };
            self.jobs.retrievals.push(Retrieval {
                workflow: wf,
                client: job.client,
                server,
                size,
                start: None,
                end: None,
                ideal,
                request_flow: 0,
                response_flow: 0,
            });
        }
        let parts = job.parts.len() as u32;
        self.jobs.workflows.push(Workflow {
            workload: i as u32,
            shape,
            client: job.client,
            start: self.now,
            end: None,
            first,
            parts,
            done: 0,
            sequential,
            ideal: ideals,
        });
        if self.counts_foreground_at(job.client) {
            self.foreground_open += 1;
        }
        let issue_now = if sequential { 1 } else { parts };
        let class = self.class_of(i);
        for q in first..first + parts {
            let r = &self.jobs.retrievals[q as usize];
            let (ask, answer) = (NewFlow::new(r.client, r.server, request), NewFlow::new(r.server, r.client, r.size));
            let request_flow = if q - first < issue_now {
                self.jobs.retrievals[q as usize].start = Some(self.now);
                let k = self.record(&ask, Role::Request(q));
                self.start(k, class);
                k
            } else {
                self.record_dormant(&ask, Role::Request(q), class)
            };
            let response_flow = self.record_dormant(&answer, Role::Response(q), class);
            let r = &mut self.jobs.retrievals[q as usize];
            (r.request_flow, r.response_flow) = (request_flow as u64, response_flow as u64);
        }
    }

    /// Send retrieval `q`'s request now (its client's part).
    fn issue(&mut self, q: u32) {
        let r = &mut self.jobs.retrievals[q as usize];
        r.start = Some(self.now);
        let k = r.request_flow as usize;
        self.begin(k);
    }

    /// Word that a background flow of generator `g` from `src` finished has reached `src` (an event every
    /// part handles): the source starts its next flow, drawn from its own random streams, unless the
    /// foreground is done.
    pub(super) fn on_successor(&mut self, g: u32, src: NodeId) {
        if self.foreground_done {
            return;
        }
        let Generator::Background(b) = &mut self.generators[g as usize] else {
            unreachable!("a background flow's generator")
        };
        let nf = b.next_from(src);
        let k = self.record(&nf, Role::Background(g));
        let class = self.class_of(g as usize);
        self.start(k, class);
    }

    /// Flow `r` has just finished: start what follows it.
    pub(super) fn flow_done(&mut self, r: &FlowRecord) {
        match r.role {
            Role::Flow => self.foreground_work_done(r.id),
            Role::Background(g) => {
                // Word of it reaches the source after the path's propagation delay (as a message between hosts
                // takes), but no sooner than `word_floor`: every part of a parallel run makes the next flow
                // (its id, its transport slot) at that event, which no cut can bring inside the window of the
                // completion.
                let at = self.now + self.net.propagation(r.dst, r.src, PathId::NONE).max(self.word_floor);
                self.ev.schedule_broadcast(at, Event::Successor(g, r.src), r.id, Word::Successor);
            }
            // The request has reached the server, which answers at once.
            Role::Request(q) => self.begin(self.jobs.retrievals[q as usize].response_flow as usize),
            Role::Response(q) => {
                let (now, flow) = (self.now, r.id);
                let r = &mut self.jobs.retrievals[q as usize];
                r.end = Some(now);
                let w = &mut self.jobs.workflows[r.workflow as usize];
                w.done += 1;
                if w.done == w.parts {
                    w.end = Some(now);
                    self.foreground_work_done(flow);
                } else if w.sequential {
                    let next = w.first + w.done;
                    self.issue(next);
                }
            }
        }
    }
}
