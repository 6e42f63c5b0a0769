//! Step-time breakdown from the host plane's intervals and the device-busy intervals.
//! Steps are the windows between consecutive XLA program dispatches (ExecuteComputation / ExecuteReplicated):
//! torch_xla's mark_step dispatches one program per step. StepMarker events are not boundaries, because
//! execution is asynchronous: a step's program often starts after its marker ended.

use crate::output::types::StepBreakdown;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    None = 0,
    Marker,
    Compile,
    Execute,
    Transfer,
    Host,
}

/// The kind an event name may have; depth limits (compile ≤ 8, execute = 0) are the caller's.
pub fn kind_of(name: &str) -> Kind {
    if name == "StepMarker" {
        return Kind::Marker;
    }
    if name.to_ascii_lowercase().contains("compile") {
        return Kind::Compile;
    }
    if name.contains("ExecuteComputation") || name.contains("ExecuteReplicated") {
        return Kind::Execute;
    }
    if ["TransferToDevice", "TransferFromDevice", "TransferToServer", "TransferFromServer"]
        .iter()
        .any(|t| name.contains(t))
    {
        return Kind::Transfer;
    }
    if matches!(
        name,
        "SyncTensorsGraphInternal" | "RunPostOrder" | "ExtractIRAndPrepareXlaData_" | "CollectSyncTensors"
    ) {
        return Kind::Host;
    }
    Kind::None
}

/// Interval starts and ends (µs) by Kind, appended in any order.
#[derive(Default, Clone)]
pub struct StepIntervals {
    pub s: [Vec<f64>; 6],
    pub e: [Vec<f64>; 6],
}

impl StepIntervals {
    pub fn add(&mut self, kind: Kind, s: f64, e: f64) {
        self.s[kind as usize].push(s);
        self.e[kind as usize].push(e);
    }
}

/// First index k with a[k * stride + at] >= x (a sorted).
fn lower_bound(a: &[f64], x: f64, stride: usize, at: usize) -> usize {
    let (mut lo, mut hi) = (0, a.len() / stride);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if a[mid * stride + at] < x {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Length of [s, e) covered by the merged intervals (flat, sorted).
fn overlap(merged: &[f64], s: f64, e: f64) -> f64 {
    let mut total = 0.0;
    let mut k = lower_bound(merged, s, 2, 1) * 2;
    while k < merged.len() && merged[k] < e {
        let a = f64::max(s, merged[k]);
        let b = f64::min(e, merged[k + 1]);
        if b > a {
            total += b - a;
        }
        k += 2;
    }
    total
}

struct Sorted {
    s: Vec<f64>,
    e: Vec<f64>,
}

fn sorted_kind(iv: &StepIntervals, kind: Kind) -> Sorted {
    let (s, e) = (&iv.s[kind as usize], &iv.e[kind as usize]);
    let mut order: Vec<usize> = (0..s.len()).collect();
    order.sort_by(|&a, &b| s[a].total_cmp(&s[b]));
    Sorted { s: order.iter().map(|&k| s[k]).collect(), e: order.iter().map(|&k| e[k]).collect() }
}

fn sum(k: &Sorted, ws: f64, we: f64) -> f64 {
    let mut total = 0.0;
    let mut j = lower_bound(&k.s, ws, 1, 0);
    while j < k.s.len() && k.s[j] < we {
        total += f64::min(k.e[j], we) - k.s[j];
        j += 1;
    }
    total
}

/// Steps from the host intervals; `busy` = merged intervals in which any HLO op ran, anywhere in the capture.
pub fn step_breakdown(iv: &StepIntervals, busy: &[f64]) -> Vec<StepBreakdown> {
    // An execution dispatched before the capture's first StepMarker belongs to a step that began before it.
    let mut first_marker = f64::INFINITY;
    for &s in &iv.s[Kind::Marker as usize] {
        first_marker = f64::min(first_marker, s);
    }
    let mut starts: Vec<f64> = iv.s[Kind::Execute as usize].iter().copied().filter(|&s| s >= first_marker).collect();
    starts.sort_by(f64::total_cmp);
    let mut last_end = if busy.is_empty() { 0.0 } else { busy[busy.len() - 1] };
    for &e in &iv.e[Kind::Execute as usize] {
        last_end = f64::max(last_end, e);
    }
    let compile = sorted_kind(iv, Kind::Compile);
    let execute = sorted_kind(iv, Kind::Execute);
    let transfer = sorted_kind(iv, Kind::Transfer);
    let host = sorted_kind(iv, Kind::Host);
    let mut steps = Vec::with_capacity(starts.len());
    for k in 0..starts.len() {
        let ws = starts[k];
        let we = if k + 1 < starts.len() { starts[k + 1] } else { last_end };
        // The device's time is the union of HLO op intervals in the window (dispatch is asynchronous).
        let execute_us = f64::max(overlap(busy, ws, we), sum(&execute, ws, we));
        let compile_us = sum(&compile, ws, we);
        let transfer_us = sum(&transfer, ws, we);
        let total_us = we - ws;
        // Compile runs inside SyncTensorsGraphInternal: counted once, as compile.
        let host_us = f64::max(0.0, sum(&host, ws, we) - compile_us);
        steps.push(StepBreakdown {
            index: k + 1,
            start_us: ws,
            total_us,
            compile_us,
            execute_us,
            transfer_us,
            host_us,
            other_us: f64::max(0.0, total_us - compile_us - execute_us - transfer_us - host_us),
        });
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(kind_of("XlaCompile"), Kind::Compile);
        assert_eq!(kind_of("PjRtComputationClient::ExecuteComputation"), Kind::Execute);
        assert_eq!(kind_of("RunPostOrder"), Kind::Host);
        assert_eq!(kind_of("RunPostOrderX"), Kind::None);
    }

    #[test]
    fn windows_between_dispatches() {
        let mut iv = StepIntervals::default();
        iv.add(Kind::Marker, 0.0, 1.0);
        iv.add(Kind::Execute, 10.0, 11.0);
        iv.add(Kind::Execute, 20.0, 21.0);
        let steps = step_breakdown(&iv, &[12.0, 15.0, 22.0, 30.0]);
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].total_us, 10.0);
        assert_eq!(steps[0].execute_us, 3.0);
        assert_eq!(steps[1].total_us, 10.0);
        assert_eq!(steps[1].execute_us, 8.0);
    }
}
