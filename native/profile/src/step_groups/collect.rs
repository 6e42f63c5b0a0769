//! What step grouping keeps of a capture, plane by plane and line by line: host nodes (events with a root or context stat), each launch as
//! its correlation id and nearest node above it on its line (its group is that node's: nothing else reaches a
//! launch), and device events as spans, one per run of events of one correlation id on a line. Where steps come
//! from the host (a capture with no device), every host event under a node too, with its node and class.

use super::host::host_class;
use super::sorted_order;
use crate::view::{LineView, PlaneView, Tag};

/// What one analyzer kept for grouping, as plain data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupPartial {
    /// A `group_id` stat was seen: the capture was grouped when written.
    pub grouped: bool,
    /// Host nodes: start (absolute µs), root level (0: none), parent node (-1: none).
    pub node_start: Vec<f64>,
    pub root_level: Vec<f64>,
    pub parent: Vec<i32>,
    /// Their context stats (NaN: absent).
    pub producer_type: Vec<f64>,
    pub producer_id: Vec<f64>,
    pub consumer_type: Vec<f64>,
    pub consumer_id: Vec<f64>,
    /// Host launches: correlation id, and the node above it on its line (-1: none).
    pub launch_corr: Vec<f64>,
    pub launch_node: Vec<i32>,
    /// Device spans: device plane index, start and end (absolute µs), correlation id.
    pub dev_plane: Vec<i32>,
    pub dev_start: Vec<f64>,
    pub dev_end: Vec<f64>,
    pub dev_corr: Vec<f64>,
    /// Host events under a node (only where steps come from the host): the node (itself, where it is one), whether
    /// it is that node, its class (host::HostClass bits) and span (absolute µs).
    pub ev_node: Vec<i32>,
    pub ev_is_node: Vec<bool>,
    pub ev_class: Vec<u8>,
    pub ev_start: Vec<f64>,
    pub ev_end: Vec<f64>,
}

/// Host line scratch, one slot per tagged event: its index on the line and grouping stats (NaN: absent).
#[derive(Default)]
struct Scratch {
    ev: Vec<i32>,
    root: Vec<f64>,
    pt: Vec<f64>,
    p: Vec<f64>,
    ct: Vec<f64>,
    c: Vec<f64>,
    corr: Vec<f64>,
    is_async: Vec<bool>,
    order: Vec<u32>,
    /// Each event's slot (-1: untagged), where every event of the line is walked.
    slot_of: Vec<i32>,
    /// Open nodes above the current event: their line-relative ends and node numbers.
    ends: Vec<f64>,
    nodes: Vec<i32>,
}

impl Scratch {
    fn clear(&mut self) {
        self.ev.clear();
        self.root.clear();
        self.pt.clear();
        self.p.clear();
        self.ct.clear();
        self.c.clear();
        self.corr.clear();
        self.is_async.clear();
        self.order.clear();
        self.slot_of.clear();
        self.ends.clear();
        self.nodes.clear();
    }
}

/// Collects, plane by plane and line by line, what step grouping needs (see GroupPartial).
#[derive(Default)]
pub struct GroupCollector {
    out: GroupPartial,
    host: bool,
    device: bool,
    plane_index: i32,
    tpu: bool,
    /// Steps come from the host: every event under a node is kept (host::host_steps).
    host_steps: bool,
    /// Nodes and launches kept before the current plane.
    plane_nodes: usize,
    plane_launches: usize,
    t: Scratch,
}

impl GroupCollector {
    pub fn new() -> Self {
        GroupCollector { plane_index: -1, ..Default::default() }
    }

    /// A collector for planes that follow a TPU plane it does not see (another thread's share of a capture):
    /// as if it had seen that plane.
    pub fn after_tpu_plane() -> Self {
        GroupCollector { tpu: true, ..Self::new() }
    }

    /// A collector for a capture whose steps come from its host (no device plane): it keeps every host event
    /// under a node, and the nodes of a host that launched nothing.
    pub fn for_host_steps() -> Self {
        GroupCollector { host_steps: true, ..Self::new() }
    }

    #[inline(never)] // kept small: lib.rs, "Function size"
    pub fn plane(&mut self, p: &PlaneView) {
        self.end_plane();
        self.host = p.name == "/host:CPU";
        self.plane_nodes = self.out.node_start.len();
        self.plane_launches = self.out.launch_corr.len();
        self.device = p.name.starts_with("/device:GPU:");
        self.plane_index = p.index as i32;
        // A TPU capture is grouped otherwise (xprof's GroupTpuEventsOSS; its devices have Steps lines): its host's
        // many context events are not kept once a TPU plane was seen (they come first in TPU captures).
        self.tpu = self.tpu || p.name.starts_with("/device:TPU:");
    }

    #[inline(never)] // kept small: lib.rs, "Function size"
    pub fn line(&mut self, p: &PlaneView, l: &LineView) {
        let n = l.tag_count;
        if n == 0 || self.tpu {
            return;
        }
        let (mut root, mut launch, mut producer, mut consumer) = (false, false, false, false);
        for &x in &l.tag_kind[..n] {
            match x {
                Tag::Correlation => launch = true,
                Tag::Root => root = true,
                Tag::ProducerType => producer = true,
                Tag::ConsumerType => consumer = true,
                Tag::GroupId => self.out.grouped = true,
                _ => {}
            }
        }
        if self.device {
            if launch {
                self.device_line(l);
            }
        } else if self.host && (root || launch || (consumer && (producer || self.host_steps))) {
            // A host line with no root and no launch passes a group on only if it is reached (a consumer) and
            // passes it on (a producer); where steps come from the host, what a consumer reaches is a step's too.
            // Any other line is no use to grouping.
            self.host_line(p, l);
        }
    }

    /// What was kept; the collector is done (its data is moved out, not copied: a capture's worth of launches
    /// and kernels is not held twice).
    pub fn partial(&mut self) -> GroupPartial {
        self.end_plane();
        std::mem::take(&mut self.out)
    }

    /// A host plane that launched nothing can pass no group to a device: its nodes (a TPU host's) are dropped.
    fn end_plane(&mut self) {
        if self.host && !self.host_steps && self.out.launch_corr.len() == self.plane_launches {
            let (o, n) = (&mut self.out, self.plane_nodes);
            o.node_start.truncate(n);
            o.root_level.truncate(n);
            o.parent.truncate(n);
            o.producer_type.truncate(n);
            o.producer_id.truncate(n);
            o.consumer_type.truncate(n);
            o.consumer_id.truncate(n);
        }
        self.host = false;
    }

    fn device_line(&mut self, l: &LineView) {
        let o = &mut self.out;
        let mut open = false;
        for k in 0..l.tag_count {
            if l.tag_kind[k] != Tag::Correlation {
                continue;
            }
            let i = l.tag_event[k] as usize;
            let corr = l.tag_value[k];
            let s = (l.timestamp_ns + l.offset_ps[i] / 1000.0) / 1000.0;
            let e = s + l.duration_ps[i] / 1e6;
            // Events of one correlation id one after the other on a line (a graph's kernels): one span.
            if open {
                let last = o.dev_corr.len() - 1;
                if o.dev_corr[last] == corr && s >= o.dev_start[last] {
                    if e > o.dev_end[last] {
                        o.dev_end[last] = e;
                    }
                    continue;
                }
            }
            o.dev_plane.push(self.plane_index);
            o.dev_start.push(s);
            o.dev_end.push(e);
            o.dev_corr.push(corr);
            open = true;
        }
    }

    /// The line's tagged events: nodes with their nearest node above them, launches with theirs (line-relative
    /// ps, exact); where steps come from the host, every event with its nearest node.
    fn host_line(&mut self, p: &PlaneView, l: &LineView) {
        let t = &mut self.t;
        t.clear();
        // One slot per tagged event (tags come grouped by event, events in line order).
        for k in 0..l.tag_count {
            let i = l.tag_event[k];
            if t.ev.last() != Some(&i) {
                t.ev.push(i);
                t.root.push(0.0);
                t.pt.push(f64::NAN);
                t.p.push(f64::NAN);
                t.ct.push(f64::NAN);
                t.c.push(f64::NAN);
                t.corr.push(f64::NAN);
                t.is_async.push(false);
            }
            let j = t.ev.len() - 1;
            let v = l.tag_value[k];
            match l.tag_kind[k] {
                Tag::Root => t.root[j] = if v > 0.0 { v } else { 0.0 },
                Tag::ProducerType => t.pt[j] = v,
                Tag::ProducerId => t.p[j] = v,
                Tag::ConsumerType => t.ct[j] = v,
                Tag::ConsumerId => t.c[j] = v,
                Tag::Correlation => t.corr[j] = v,
                Tag::Async => t.is_async[j] = v != 0.0,
                Tag::GroupId => {}
            }
        }
        let (off, dur) = (&l.offset_ps, &l.duration_ps);
        // The walk: the tagged events, or (steps from the host) every event, in start order, longer first.
        let all = self.host_steps;
        let walked = if all { l.count } else { t.ev.len() };
        if all {
            t.slot_of.resize(l.count, -1);
            for (j, &i) in t.ev.iter().enumerate() {
                t.slot_of[i as usize] = j as i32;
            }
        }
        let ev = &t.ev;
        let event_of = |x: u32| if all { x as usize } else { ev[x as usize] as usize };
        t.order = sorted_order(walked, |a, b| {
            let (a, b) = (event_of(a), event_of(b));
            off[a].total_cmp(&off[b]).then(dur[b].total_cmp(&dur[a]))
        });
        let o = &mut self.out;
        for k in 0..walked {
            let x = t.order[k];
            let i = event_of(x);
            let slot = if all { t.slot_of[i] } else { x as i32 };
            let end = off[i] + dur[i];
            let is_async = slot >= 0 && t.is_async[slot as usize];
            if !is_async {
                while t.ends.last().is_some_and(|&x| x < end) {
                    t.ends.pop();
                    t.nodes.pop();
                }
            }
            let above = if is_async { -1 } else { t.nodes.last().copied().unwrap_or(-1) };
            let j = slot.max(0) as usize;
            let is_node = slot >= 0 && (t.root[j] > 0.0 || !t.pt[j].is_nan() || !t.ct[j].is_nan());
            if slot >= 0 && !t.corr[j].is_nan() {
                o.launch_corr.push(t.corr[j]);
                o.launch_node.push(if is_node { o.node_start.len() as i32 } else { above });
            }
            let node = if is_node { o.node_start.len() as i32 } else { above };
            if all && node >= 0 {
                let s = (l.timestamp_ns + off[i] / 1000.0) / 1000.0;
                o.ev_node.push(node);
                o.ev_is_node.push(is_node);
                o.ev_class.push(p.meta.get(&l.meta_id[i]).map_or(0, |m| host_class(&m.name)));
                o.ev_start.push(s);
                o.ev_end.push(s + dur[i] / 1e6);
            }
            if !is_node {
                continue;
            }
            o.node_start.push((l.timestamp_ns + off[i] / 1000.0) / 1000.0);
            o.root_level.push(t.root[j]);
            o.parent.push(above);
            o.producer_type.push(t.pt[j]);
            o.producer_id.push(t.p[j]);
            o.consumer_type.push(t.ct[j]);
            o.consumer_id.push(t.c[j]);
            if !is_async {
                t.ends.push(end);
                t.nodes.push(node);
            }
        }
    }
}
