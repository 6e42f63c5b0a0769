//! GPU steps as xprof finds them in a capture that has no Steps line: by grouping events under step annotations,
//! by the rules of XLA's group_events.cc and xprof's derived_timeline.cc / xplane_to_step_events.cc.
//!
//! In short: a host event with an `_r` stat is a root; roots, by level (higher first) then start, each take the
//! next group id unless a root of their own level reaches them, and spread it to what they reach: events nested in
//! them on their thread (not async `_a` ones), consumers of a producer of the same `_pt`/`_p` context, and device
//! events whose correlation_id is a launch's. On each device, events in start order take their group (or the last
//! one seen); runs of one group make a span, and each group's step is its longest span over the devices.
//!
//! Kept compactly: host nodes (events with a root or context stat), each launch as its
//! correlation id and nearest node above it, and device events as spans (one per run of one correlation id).

mod collect;
mod host;
#[cfg(test)]
mod tests;

pub use collect::{GroupCollector, GroupPartial};
pub use host::host_steps;

use crate::output::types::StepBreakdown;
use crate::windows::{drop_incomplete, window_steps};
use std::cmp::Ordering;
use std::collections::HashMap;

/// The steps the partials' step annotations make (partials in plane order), or None where there are none: no
/// root, or a capture grouped when written. `busy` (merged device-busy intervals, µs) gives each step's execute
/// time.
#[inline(never)] // kept small: lib.rs, "Function size"
pub fn group_steps(parts: &[&GroupPartial], busy: &[f64]) -> Option<Vec<StepBreakdown>> {
    if parts.iter().any(|p| p.grouped) || !parts.iter().any(|p| p.root_level.iter().any(|&r| r > 0.0)) {
        return None;
    }
    let group = node_groups(parts);
    // Each launch's group is its node's; the last launch of a correlation id is the one its device events hang
    // from.
    let launches: usize = parts.iter().map(|p| p.launch_corr.len()).sum();
    let mut corr = Vec::with_capacity(launches);
    let mut lgroup = Vec::with_capacity(launches);
    let mut base = 0usize;
    for p in parts {
        for (&c, &node) in p.launch_corr.iter().zip(&p.launch_node) {
            corr.push(c);
            lgroup.push(if node < 0 { -1 } else { group[base + node as usize] });
        }
        base += p.node_start.len();
    }
    let group_of_corr = CorrGroups::new(corr, lgroup);
    // One partial's spans are used as they are; several are joined.
    let joined;
    let (plane, s, e): (&[i32], &[f64], &[f64]) = if let [one] = parts {
        (&one.dev_plane, &one.dev_start, &one.dev_end)
    } else {
        joined = (
            parts.iter().flat_map(|p| p.dev_plane.iter().copied()).collect::<Vec<_>>(),
            parts.iter().flat_map(|p| p.dev_start.iter().copied()).collect::<Vec<_>>(),
            parts.iter().flat_map(|p| p.dev_end.iter().copied()).collect::<Vec<_>>(),
        );
        (&joined.0, &joined.1, &joined.2)
    };
    let g: Vec<i32> = parts.iter().flat_map(|p| p.dev_corr.iter().map(|&c| group_of_corr.get(c))).collect();
    steps_of_device_groups(plane, s, e, &g, busy)
}

/// The group of the last launch with each correlation id (the one its device events hang from), by id.
struct CorrGroups(crate::intern::FastMap<u64, i32>);

impl CorrGroups {
    fn new(corr: Vec<f64>, lgroup: Vec<i32>) -> Self {
        let mut m = crate::intern::FastMap::default();
        m.reserve(corr.len());
        for (c, g) in corr.into_iter().zip(lgroup) {
            m.insert(key_bits(c), g);
        }
        CorrGroups(m)
    }

    /// -1: no launch has this id.
    fn get(&self, c: f64) -> i32 {
        self.0.get(&key_bits(c)).copied().unwrap_or(-1)
    }
}

/// A producer/consumer meeting point: the nodes of one context type and id.
#[derive(Default)]
struct Context {
    producers: Vec<usize>,
    consumers: Vec<usize>,
}

/// A context's key half: the bits of its type or id, -0 taken as 0 (NaN never gets here).
fn key_bits(x: f64) -> u64 {
    if x == 0.0 {
        0
    } else {
        x.to_bits()
    }
}

/// The context of type `ty` and id `id`, made (last in order) when new.
fn context_of(by_key: &mut HashMap<(u64, u64), usize>, contexts: &mut Vec<Context>, ty: f64, id: f64) -> usize {
    *by_key.entry((key_bits(ty), key_bits(id))).or_insert_with(|| {
        contexts.push(Context::default());
        contexts.len() - 1
    })
}

/// The group of each host node (numbered across the partials in order), -1 for none.
fn node_groups(parts: &[&GroupPartial]) -> Vec<i32> {
    node_groups_and_roots(parts).0
}

/// The group of each host node (numbered across the partials in order, -1 for none), and the root node that made
/// each group.
fn node_groups_and_roots(parts: &[&GroupPartial]) -> (Vec<i32>, Vec<usize>) {
    let n: usize = parts.iter().map(|p| p.node_start.len()).sum();
    let mut level = Vec::with_capacity(n);
    let mut start = Vec::with_capacity(n);
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    // In first-seen order: it is the order children are added in.
    let mut contexts: Vec<Context> = Vec::new();
    let mut by_key: HashMap<(u64, u64), usize> = HashMap::new();
    for p in parts {
        let base = level.len();
        for k in 0..p.node_start.len() {
            let node = base + k;
            level.push(p.root_level[k]);
            start.push(p.node_start[k]);
            if p.parent[k] >= 0 {
                let up = base + p.parent[k] as usize;
                parents[node].push(up);
                children[up].push(node);
            }
            let (pt, pi, ct, ci) = (p.producer_type[k], p.producer_id[k], p.consumer_type[k], p.consumer_id[k]);
            if !pt.is_nan() && !pi.is_nan() {
                let c = context_of(&mut by_key, &mut contexts, pt, pi);
                contexts[c].producers.push(node);
            }
            if !ct.is_nan() && !ci.is_nan() {
                let c = context_of(&mut by_key, &mut contexts, ct, ci);
                contexts[c].consumers.push(node);
            }
        }
    }
    for c in &contexts {
        // As group_events.cc's ConnectContextGroups: a context this crowded on both sides is left unconnected.
        if c.producers.len() >= 64 && c.consumers.len() >= 64 {
            continue;
        }
        for &a in &c.producers {
            for &b in &c.consumers {
                children[a].push(b);
                parents[b].push(a);
            }
        }
    }
    let mut group = vec![-1i32; n];
    let mut roots: Vec<usize> = (0..n).filter(|&k| level[k] > 0.0).collect();
    roots.sort_by(|&a, &b| level[b].total_cmp(&level[a]).then(start[a].total_cmp(&start[b])));
    let mut made_by = Vec::new();
    // Sets as generation marks (one allocation, not one per root).
    let mut seen = Marks::new(n);
    let mut queue: Vec<usize> = Vec::new();
    for &r in &roots {
        if group[r] >= 0 || has_root_ancestor(r, &level, &parents, &mut seen, &mut queue) {
            continue;
        }
        let id = made_by.len() as i32;
        made_by.push(r);
        seen.clear();
        seen.insert(r);
        queue.clear();
        queue.push(r);
        let mut q = 0;
        while q < queue.len() {
            let node = queue[q];
            q += 1;
            if group[node] >= 0 {
                continue;
            }
            group[node] = id;
            for &c in &children[node] {
                if seen.insert(c) {
                    queue.push(c);
                }
            }
        }
    }
    (group, made_by)
}

/// A set of node numbers, emptied in O(1) by moving to the next generation.
struct Marks {
    mark: Vec<u32>,
    generation: u32,
}

impl Marks {
    fn new(n: usize) -> Self {
        Marks { mark: vec![0; n], generation: 1 }
    }
    fn clear(&mut self) {
        self.generation += 1;
    }
    /// Adds `k`; whether it was not in the set.
    fn insert(&mut self, k: usize) -> bool {
        let fresh = self.mark[k] != self.generation;
        self.mark[k] = self.generation;
        fresh
    }
}

/// Whether a root of the same level reaches `r` (nesting or producer): then that one groups it.
fn has_root_ancestor(
    r: usize,
    level: &[f64],
    parents: &[Vec<usize>],
    seen: &mut Marks,
    queue: &mut Vec<usize>,
) -> bool {
    seen.clear();
    seen.insert(r);
    queue.clear();
    for &p in &parents[r] {
        seen.insert(p);
        queue.push(p);
    }
    let mut q = 0;
    while q < queue.len() {
        let node = queue[q];
        q += 1;
        if level[node] == level[r] {
            return true;
        }
        for &p in &parents[node] {
            if seen.insert(p) {
                queue.push(p);
            }
        }
    }
    false
}

/// Step spans per device from its grouped spans (ungrouped ones take the group before them); longest span per
/// group, in group order.
fn steps_of_device_groups(plane: &[i32], s: &[f64], e: &[f64], g: &[i32], busy: &[f64]) -> Option<Vec<StepBreakdown>> {
    let order = sorted_order(s.len(), |a, b| {
        let (a, b) = (a as usize, b as usize);
        plane[a].cmp(&plane[b]).then(s[a].total_cmp(&s[b])).then(e[b].total_cmp(&e[a]))
    });
    // By group id (ids are small and dense).
    let groups = g.iter().map(|&x| x + 1).max().unwrap_or(0).max(0) as usize;
    let mut longest: Vec<Option<(f64, f64)>> = vec![None; groups];
    let mut at: Option<i32> = None;
    let mut last = -1i32;
    let mut span: Option<(f64, f64)> = None;
    let mut close = |span: &mut Option<(f64, f64)>, last: i32| {
        if let Some(sp) = span.take() {
            let have = &mut longest[last as usize];
            if have.is_none_or(|h| sp.1 - sp.0 > h.1 - h.0) {
                *have = Some(sp);
            }
        }
    };
    for &k in &order {
        let k = k as usize;
        if at != Some(plane[k]) {
            close(&mut span, last);
            at = Some(plane[k]);
            last = -1;
        }
        let id = if g[k] >= 0 { g[k] } else { last };
        if id < 0 {
            continue;
        }
        match &mut span {
            Some(sp) if id == last => sp.1 = sp.1.max(e[k]),
            _ => {
                close(&mut span, last);
                span = Some((s[k], e[k]));
            }
        }
        last = id;
    }
    close(&mut span, last);
    let mut windows = Vec::new();
    for &(ws, we) in longest.iter().flatten() {
        if we > ws {
            windows.push(ws);
            windows.push(we);
        }
    }
    drop_incomplete(&mut windows);
    if windows.is_empty() {
        None
    } else {
        Some(window_steps(&windows, busy))
    }
}

/// 0 … n−1 in the order `cmp` gives (stable); sorted only when not already so (ids and times mostly come in
/// order).
pub(crate) fn sorted_order(n: usize, mut cmp: impl FnMut(u32, u32) -> Ordering) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    if !(1..n as u32).all(|k| cmp(k - 1, k) != Ordering::Greater) {
        order.sort_by(|&a, &b| cmp(a, b));
    }
    order
}
