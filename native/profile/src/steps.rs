//! Where a host step's time went, from the host plane's intervals and the busy intervals: compile, XLA program
//! execution, transfers, torch_xla's own host work (lazy tracing, graph building), the rest. The steps themselves
//! are xprof's (step_groups::host_steps); this only breaks each window down.

use crate::output::types::StepBreakdown;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    None = 0,
    Compile,
    Execute,
    Transfer,
    Host,
}

/// The kind an event name may have; depth limits (compile ≤ 8, execute = 0) are the caller's.
pub fn kind_of(name: &str) -> Kind {
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
    pub s: [Vec<f64>; 5],
    pub e: [Vec<f64>; 5],
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

/// Each window's breakdown (flat [start0, end0, …], µs) from the host intervals; `busy` = merged intervals in
/// which any HLO op ran, anywhere in the capture.
#[inline(never)] // kept small: lib.rs, "Function size"
pub fn window_breakdown(windows: &[f64], iv: &StepIntervals, busy: &[f64]) -> Vec<StepBreakdown> {
    let compile = sorted_kind(iv, Kind::Compile);
    let execute = sorted_kind(iv, Kind::Execute);
    let transfer = sorted_kind(iv, Kind::Transfer);
    let host = sorted_kind(iv, Kind::Host);
    let mut steps = Vec::with_capacity(windows.len() / 2);
    for w in windows.chunks_exact(2) {
        let (ws, we) = (w[0], w[1]);
        // The device's time is the union of HLO op intervals in the window (dispatch is asynchronous).
        let execute_us = f64::min(we - ws, f64::max(overlap(busy, ws, we), sum(&execute, ws, we)));
        let compile_us = sum(&compile, ws, we);
        let transfer_us = sum(&transfer, ws, we);
        let total_us = we - ws;
        // Compile runs inside SyncTensorsGraphInternal: counted once, as compile.
        let host_us = f64::max(0.0, sum(&host, ws, we) - compile_us);
        steps.push(StepBreakdown {
            index: steps.len() + 1,
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
    fn breakdown_inside_each_window() {
        let mut iv = StepIntervals::default();
        iv.add(Kind::Compile, 1.0, 4.0);
        iv.add(Kind::Host, 0.5, 6.0);
        iv.add(Kind::Execute, 10.0, 11.0);
        iv.add(Kind::Transfer, 21.0, 23.0);
        let steps = window_breakdown(&[0.0, 10.0, 10.0, 30.0], &iv, &[12.0, 15.0, 22.0, 40.0]);
        assert_eq!(steps.len(), 2);
        let s = &steps[0];
        // Compile inside the host interval is counted once, as compile.
        assert_eq!(
            (s.index, s.total_us, s.compile_us, s.host_us, s.execute_us, s.other_us),
            (1, 10.0, 3.0, 2.5, 0.0, 4.5)
        );
        let s = &steps[1];
        // Busy [12, 15] and [22, 30] of the window: 11 µs.
        assert_eq!(
            (s.index, s.start_us, s.total_us, s.execute_us, s.transfer_us, s.other_us),
            (2, 10.0, 20.0, 11.0, 2.0, 7.0)
        );
    }
}
