//! Steps of a capture with no device (XLA on CPU: JAX, TensorFlow, torch_xla), from its host's step annotations,
//! by the rules of xprof's xplane_to_step_events.cc and step_events_to_steps_db.cc after XLA's step grouping.
//!
//! A group (one per top step root, as `node_groups` numbers them) is a step where it has a step marker on the
//! host: an event named as an explicit one (`train…`, `test…`, `TraceContext…`, no `/`), or the root that made
//! the group (unless an implicit root: FunctionRun, SessionRun, RunGraph, ExecutorState::Process). Its time is
//! its longest marker. It counts only if well formed: some of its host time, with overlaps given to the event type
//! of highest priority, is host compute. Steps are in group order.

use super::collect::GroupPartial;
use super::node_groups_and_roots;

/// An event's class (low bits) for host steps, and whether its name is an implicit root's (IMPLICIT_ROOT).
pub const IGNORED: u8 = 0;
pub const MARKER: u8 = 1;
/// xprof's host event types, in its priority order (EventType: HOST_COMPUTE 10, HOST_TO_HOST 20,
/// HOST_TO_DEVICE 30, HOST_WAIT_INPUT 50).
pub const COMPUTE: u8 = 2;
pub const HOST_TO_HOST: u8 = 3;
pub const HOST_TO_DEVICE: u8 = 4;
pub const WAIT_INPUT: u8 = 5;
pub const IMPLICIT_ROOT: u8 = 8;

/// xprof's IsExplicitHostStepMarker.
fn explicit_marker(name: &str) -> bool {
    ["train", "test", "TraceContext"].iter().any(|p| name.starts_with(p)) && !name.contains('/')
}

/// `name:Type` a TensorFlow op whose type starts with InfeedEnqueue (xprof's IsInfeedEnqueueOp).
fn infeed_enqueue(name: &str) -> bool {
    let Some((op, ty)) = name.split_once(':') else { return false };
    let op_ok = op.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'.')
        && op.bytes().all(|b| b.is_ascii_alphanumeric() || b"_./>-".contains(&b));
    let ty_ok = ty.bytes().next().is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && ty.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    op_ok && ty_ok && ty.starts_with("InfeedEnqueue")
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// A host event's class by its name (xprof's IsRealCpuCompute and ClassifyCpuEvent on a host with no device).
pub fn host_class(name: &str) -> u8 {
    let implicit = matches!(name, "FunctionRun" | "SessionRun" | "RunGraph" | "ExecutorState::Process");
    let class = if explicit_marker(name) {
        MARKER
    } else if ["EagerExecute", "EagerLocalExecute", "EagerKernelExecute", "FunctionRun"]
        .iter()
        .any(|p| name.starts_with(p))
    {
        IGNORED
    } else if infeed_enqueue(name) || (!name.contains(':') && starts_with_ignore_case(name, "MemcpyHToD")) {
        HOST_TO_DEVICE
    } else if !name.contains(':') && starts_with_ignore_case(name, "MemcpyHToH") {
        HOST_TO_HOST
    } else if starts_with_ignore_case(name, "IteratorGetNext") {
        WAIT_INPUT
    } else {
        COMPUTE
    };
    class | if implicit { IMPLICIT_ROOT } else { 0 }
}

/// Each step's window (flat [start0, end0, …], µs) in group order, or None where the host gives none.
#[inline(never)] // kept small: lib.rs, "Function size"
pub fn host_steps(parts: &[&GroupPartial]) -> Option<Vec<f64>> {
    if parts.iter().any(|p| p.grouped) {
        return None;
    }
    let (group, roots) = node_groups_and_roots(parts);
    if roots.is_empty() {
        return None;
    }
    let mut marker: Vec<Option<(f64, f64)>> = vec![None; roots.len()];
    // Typed spans of each group: (group, class, start, end).
    let mut typed: Vec<(u32, u8, f64, f64)> = Vec::new();
    let mut base = 0usize;
    for p in parts {
        for k in 0..p.ev_node.len() {
            let node = base + p.ev_node[k] as usize;
            let g = group[node];
            if g < 0 {
                continue;
            }
            let class = p.ev_class[k] & !IMPLICIT_ROOT;
            // The root that made a group is its step's marker unless an implicit root (grouping names it then).
            let named_root = p.ev_is_node[k] && roots[g as usize] == node && p.ev_class[k] & IMPLICIT_ROOT == 0;
            let (s, e) = (p.ev_start[k], p.ev_end[k]);
            if class == MARKER || named_root {
                let m = &mut marker[g as usize];
                if m.is_none_or(|(ms, me)| e - s > me - ms) {
                    *m = Some((s, e));
                }
            } else if class != IGNORED {
                typed.push((g as u32, class, s, e));
            }
        }
        base += p.node_start.len();
    }
    typed.sort_by_key(|t| t.0);
    let mut windows = Vec::new();
    let mut at = 0;
    for (g, m) in marker.iter().enumerate() {
        let from = at;
        while at < typed.len() && typed[at].0 as usize == g {
            at += 1;
        }
        let Some((s, e)) = *m else { continue };
        if e > s && host_compute_shows(&typed[from..at]) {
            windows.push(s);
            windows.push(e);
        }
    }
    Some(windows)
}

/// Whether, with overlapping spans given to the type of highest priority (xprof's ToNonOverlappedEvents), some
/// piece is host compute: xprof's test of a well-formed step on a host with no device.
fn host_compute_shows(spans: &[(u32, u8, f64, f64)]) -> bool {
    // Boundaries: time, type, start; at one time ends come first, then higher types first.
    let mut b: Vec<(f64, u8, bool)> = spans.iter().flat_map(|&(_, c, s, e)| [(s, c, true), (e, c, false)]).collect();
    b.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.2.cmp(&y.2)).then(y.1.cmp(&x.1)));
    let mut count = [0usize; 8];
    for x in b.iter().take(b.len().saturating_sub(1)) {
        if x.2 {
            count[x.1 as usize] += 1;
        } else {
            count[x.1 as usize] -= 1;
        }
        if (0..8).rev().find(|&t| count[t] > 0) == Some(COMPUTE as usize) {
            return true;
        }
    }
    false
}
