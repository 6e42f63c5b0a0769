//! Time covered by sets of intervals (flat [s0, e0, s1, e1, ...], sorted, disjoint), and torch.profiler's steps
//! broken down by what covered them.

use crate::intervals::IntervalUnion;
use crate::output::types::StepBreakdown;

/// Appends the union of intervals that come sorted by start (nested or overlapping) to `u` as one run.
pub fn push_sorted(u: &mut IntervalUnion, spans: impl Iterator<Item = (f64, f64)>) {
    let (mut s0, mut e0) = (f64::NAN, f64::NAN);
    for (s, e) in spans {
        if s <= e0 {
            e0 = e0.max(e);
            continue;
        }
        if !e0.is_nan() {
            u.push(s0, e0);
        }
        (s0, e0) = (s, e);
    }
    if !e0.is_nan() {
        u.push(s0, e0);
    }
    u.end_run();
}

/// The intervals of `a` within [s, e).
fn clip(a: &[f64], s: f64, e: f64) -> Vec<f64> {
    let mut out = vec![];
    for k in (0..a.len()).step_by(2) {
        let (x, y) = (a[k].max(s), a[k + 1].min(e));
        if y > x {
            out.push(x);
            out.push(y);
        }
    }
    out
}

pub fn measure(a: &[f64]) -> f64 {
    // A fold from +0 (a float sum starts at -0, which JSON would show as "-0" for nothing).
    (0..a.len()).step_by(2).fold(0.0, |t, k| t + a[k + 1] - a[k])
}

/// The union of two sets.
fn union(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut u = IntervalUnion::new();
    u.push_run(a);
    u.push_run(b);
    u.result()
}

/// Time in `a` that is not in `b`.
fn minus(a: &[f64], b: &[f64]) -> f64 {
    let (mut i, mut j, mut both) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i].max(b[j]), a[i + 1].min(b[j + 1]));
        if y > x {
            both += y - x;
        }
        if a[i + 1] < b[j + 1] {
            i += 2;
        } else {
            j += 2;
        }
    }
    measure(a) - both
}

/// What ran when, over the whole capture.
pub struct Cover<'a> {
    /// torch.compile compiling (Dynamo, AOTAutograd, Inductor): the ops it runs on fake tensors meanwhile are
    /// compiling too, so it comes first.
    pub compile: &'a [f64],
    /// What executes the model's ops: the devices' kernels, or on a capture with no device, the host's ops.
    pub execute: &'a [f64],
    /// Device copies and memsets.
    pub transfer: &'a [f64],
    /// The host's ops and runtime calls (a capture with devices).
    pub host: &'a [f64],
}

/// Each step [start, end) (µs) broken down by what covered its time, each moment counted once, in the order of
/// `Cover`'s fields (compile first, then execute, transfer, host); the rest is other.
pub fn breakdown(windows: &[(f64, f64)], cover: &Cover) -> Vec<StepBreakdown> {
    let mut out = vec![];
    for (k, &(s, e)) in windows.iter().enumerate() {
        let execute = clip(cover.execute, s, e);
        let transfer = clip(cover.transfer, s, e);
        let compile = clip(cover.compile, s, e);
        let host = clip(cover.host, s, e);
        let compile_us = measure(&compile);
        let execute_us = minus(&execute, &compile);
        let done = union(&compile, &execute);
        let transfer_us = minus(&transfer, &done);
        let done = union(&done, &transfer);
        let host_us = minus(&host, &done);
        let total_us = e - s;
        out.push(StepBreakdown {
            index: k + 1,
            start_us: s,
            total_us,
            compile_us,
            execute_us,
            transfer_us,
            host_us,
            other_us: (total_us - execute_us - transfer_us - compile_us - host_us).max(0.0),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_moment_counted_once_in_order() {
        let cover =
            Cover { compile: &[2.5, 4.5], execute: &[0.0, 3.0, 5.0, 6.0], transfer: &[1.0, 4.0], host: &[0.0, 7.0] };
        let s = &breakdown(&[(0.0, 8.0)], &cover)[0];
        // compile 2.5–4.5; execute 0–2.5 and 5–6; transfer: none left; host 4.5–5 and 6–7; other 7–8.
        assert_eq!((s.compile_us, s.execute_us, s.transfer_us, s.host_us, s.other_us), (2.0, 3.5, 0.0, 1.5, 1.0));
        let mut u = IntervalUnion::new();
        push_sorted(&mut u, [(0.0, 5.0), (1.0, 2.0), (4.0, 7.0), (9.0, 10.0)].into_iter());
        assert_eq!(u.result(), vec![0.0, 7.0, 9.0, 10.0]);
    }
}
