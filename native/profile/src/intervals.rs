//! The union of many intervals that arrive as sorted runs: the device-busy intervals of a capture, one run per
//! XLine. Runs are merged pairwise as they come, as a merge sort merges its runs (the run below is kept more than
//! twice as long as the one above it), so each interval takes part in O(log n) linear merges, and overlapping
//! lines (threads of one device, planes of a repeated capture) stay short.

#[derive(Default)]
pub struct IntervalUnion {
    s: Vec<f64>,
    e: Vec<f64>,
    /// Start index of each closed run; the open run starts at `open`.
    runs: Vec<usize>,
    open: usize,
    tmp_s: Vec<f64>,
    tmp_e: Vec<f64>,
}

impl IntervalUnion {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends [s, e) to the open run: it must start after the run's last interval ends.
    #[inline]
    pub fn push(&mut self, s: f64, e: f64) {
        self.s.push(s);
        self.e.push(e);
    }

    /// Closes the open run (an empty one is dropped) and merges runs while the one below is not more than twice as long.
    pub fn end_run(&mut self) {
        let n = self.s.len();
        if n > self.open {
            self.runs.push(self.open);
            while self.runs.len() >= 2 {
                let top = self.runs[self.runs.len() - 1];
                let below = self.runs[self.runs.len() - 2];
                if top - below > 2 * (self.s.len() - top) {
                    break;
                }
                self.merge_top();
            }
        }
        self.open = self.s.len();
    }

    /// Appends a whole run given flat [s0, e0, s1, e1, ...], sorted and disjoint.
    pub fn push_run(&mut self, flat: &[f64]) {
        let mut k = 0;
        while k + 1 < flat.len() {
            self.push(flat[k], flat[k + 1]);
            k += 2;
        }
        self.end_run();
    }

    /// The union, flat [s0, e0, s1, e1, ...], sorted; touching intervals merged.
    pub fn result(&mut self) -> Vec<f64> {
        self.end_run();
        while self.runs.len() >= 2 {
            self.merge_top();
        }
        let mut out = Vec::with_capacity(2 * self.s.len());
        for k in 0..self.s.len() {
            out.push(self.s[k]);
            out.push(self.e[k]);
        }
        out
    }

    /// Merges the top two runs, [a, b) and [b, n), into one at a.
    fn merge_top(&mut self) {
        let b = self.runs.pop().unwrap_or(0);
        let a = *self.runs.last().unwrap_or(&0);
        let end = self.s.len();
        self.tmp_s.clear();
        self.tmp_e.clear();
        let (s, e) = (&self.s, &self.e);
        let (mut i, mut j) = (a, b);
        let (mut cs, mut ce) = (f64::NAN, f64::NAN);
        while i < b || j < end {
            let (xs, xe);
            if j >= end || (i < b && s[i] <= s[j]) {
                xs = s[i];
                xe = e[i];
                i += 1;
            } else {
                xs = s[j];
                xe = e[j];
                j += 1;
            }
            if xs <= ce {
                if xe > ce {
                    ce = xe;
                }
            } else {
                if !ce.is_nan() {
                    self.tmp_s.push(cs);
                    self.tmp_e.push(ce);
                }
                cs = xs;
                ce = xe;
            }
        }
        if !ce.is_nan() {
            self.tmp_s.push(cs);
            self.tmp_e.push(ce);
        }
        self.s.truncate(a);
        self.e.truncate(a);
        self.s.extend_from_slice(&self.tmp_s);
        self.e.extend_from_slice(&self.tmp_e);
        self.open = self.s.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The union of [s, e) pairs by one sort of them all: the reference. Touching intervals merge.
    fn union_by_sort(mut pairs: Vec<(f64, f64)>) -> Vec<f64> {
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out: Vec<f64> = vec![];
        for (s, e) in pairs {
            match out.last_mut() {
                Some(last) if s <= *last => *last = last.max(e),
                _ => out.extend([s, e]),
            }
        }
        out
    }

    #[test]
    fn the_union_of_runs_is_the_union_of_all() {
        let mut seed: u32 = 7;
        let mut rnd = |n: u32| {
            seed = seed.wrapping_mul(1103515245).wrapping_add(12345);
            seed % n
        };
        for trial in 0..300 {
            let mut u = IntervalUnion::new();
            let mut all = vec![];
            for _ in 0..rnd(40) {
                // A run as a line makes it: sorted, disjoint and not touching; some empty.
                let mut t = rnd(50) as f64;
                for _ in 0..rnd(if trial % 3 == 0 { 3 } else { 60 }) {
                    let s = t + 1.0 + rnd(20) as f64;
                    let e = s + rnd(15) as f64;
                    u.push(s, e);
                    all.push((s, e));
                    t = e;
                }
                u.end_run();
            }
            assert_eq!(u.result(), union_by_sort(all), "trial {trial}");
        }
        assert!(IntervalUnion::new().result().is_empty());
    }

    #[test]
    fn merges_runs_into_one_union() {
        let mut u = IntervalUnion::new();
        u.push_run(&[0.0, 2.0, 5.0, 6.0]);
        u.push_run(&[1.0, 3.0, 6.0, 7.0]);
        u.push_run(&[10.0, 11.0]);
        assert_eq!(u.result(), vec![0.0, 3.0, 5.0, 7.0, 10.0, 11.0]);
    }
}
