//! Flows that start other flows: a retrieval's request starts its response, a workflow's finished
//! retrieval completes it or issues the next one, and a finished background flow is replaced
//! (traffic/jobs.rs describes the workloads).

use super::World;
use crate::metrics::{ideal_fct, FlowRecord};
use crate::traffic::jobs::{Retrieval, Role, Shape, Workflow};
use crate::traffic::{Generator, NewFlow};
use crate::units::Time;

impl World {
    /// Generator `i` releases a workflow: record it and its retrievals, and issue the first (sequential)
    /// or all of them (a lone retrieval, partition-aggregate).
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
                request_flow: None,
                response_flow: None,
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
        self.foreground_open += 1;
        let issue_now = if sequential { 1 } else { parts };
        for q in first..first + issue_now {
            self.issue(q, request);
        }
    }

    /// Send retrieval `q`'s request now.
    fn issue(&mut self, q: u32, request: u64) {
        let r = &mut self.jobs.retrievals[q as usize];
        r.start = Some(self.now);
        let nf = NewFlow::new(r.client, r.server, request);
        let k = self.record(&nf, Role::Request(q));
        self.jobs.retrievals[q as usize].request_flow = Some(k as u64);
        let class = self.retrieval_class(q);
        self.start(k, class);
    }

    fn retrieval_class(&self, q: u32) -> Option<u8> {
        let wf = &self.jobs.workflows[self.jobs.retrievals[q as usize].workflow as usize];
        self.class_of(wf.workload as usize)
    }

    /// Flow `r` has just finished: start what follows it.
    pub(super) fn flow_done(&mut self, r: &FlowRecord) {
        match r.role {
            Role::Flow => self.foreground_finished(),
            Role::Background(g) => {
                if self.foreground_done {
                    return;
                }
                let src = r.src;
                let Generator::Background(b) = &mut self.generators[g as usize] else {
                    unreachable!("a background flow's generator")
                };
                let nf = b.next_from(src);
                let k = self.record(&nf, Role::Background(g));
                let class = self.class_of(g as usize);
                self.start(k, class);
            }
            Role::Request(q) => {
                let r = &self.jobs.retrievals[q as usize];
                let nf = NewFlow::new(r.server, r.client, r.size);
                let k = self.record(&nf, Role::Response(q));
                self.jobs.retrievals[q as usize].response_flow = Some(k as u64);
                let class = self.retrieval_class(q);
                self.start(k, class);
            }
            Role::Response(q) => {
                let now = self.now;
                let r = &mut self.jobs.retrievals[q as usize];
                r.end = Some(now);
                let w = &mut self.jobs.workflows[r.workflow as usize];
                w.done += 1;
                if w.done == w.parts {
                    w.end = Some(now);
                    self.foreground_finished();
                } else if w.sequential {
                    let (next, workload) = (w.first + w.done, w.workload as usize);
                    let Generator::Jobs(g) = &self.generators[workload] else { unreachable!("a workflow generator") };
                    let request = g.request;
                    self.issue(next, request);
                }
            }
        }
    }
}
