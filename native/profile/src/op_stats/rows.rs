//! The op table's rows and their exact sums, and the scratch that turns one line's op events into self times
//! (start order, nesting stack).

use super::OpKey;
use crate::hlo_categories::FastMap;

/// Numbers per row in OpPartial::acc: the count, then four exact sums (total ps, self ps, flops, bytes) as hi/lo
/// pairs (add_exact).
pub const ACC_STRIDE: usize = 9;

/// Where add_exact splits a number: hi counts units of 2^26, lo holds the rest.
const SPLIT: f64 = 67108864.0;

/// Adds x to the exact sum kept as the pair acc[at] (units of 2^26) and acc[at + 1] (the rest): both stay exact
/// integers for whole x below 2^53 and up to 2^26 additions, so exact_total is the true sum, rounded once, in any
/// order of additions. A capture's op time in picoseconds passes 2^53 (2.5 hours of op time on many chips), where
/// a running sum of doubles would round at each step and depend on how the planes were split between threads.
#[inline]
pub fn add_exact(acc: &mut [f64], at: usize, x: f64) {
    let hi = (x * (1.0 / SPLIT)).floor();
    acc[at] += hi;
    acc[at + 1] += x - hi * SPLIT;
}

/// The value of an exact sum kept by add_exact.
pub fn exact_total(acc: &[f64], at: usize) -> f64 {
    acc[at] * SPLIT + acc[at + 1]
}

/// Scratch reused across lines: the collected op events (start, duration, row, FLOPs, bytes), their start
/// order, and the nesting stack.
#[derive(Default)]
pub(super) struct Scratch {
    pub(super) off: Vec<f64>,
    pub(super) dur: Vec<f64>,
    pub(super) row: Vec<u32>,
    pub(super) fl: Vec<f64>,
    pub(super) by: Vec<f64>,
    pub(super) ord: Vec<u32>,
    pub(super) stack_i: Vec<u32>,
    pub(super) stack_end: Vec<f64>,
    pub(super) stack_child: Vec<f64>,
}

/// Rows and their sums, by (host, program, name).
#[derive(Default)]
pub(super) struct Rows {
    pub(super) rows: Vec<OpKey>,
    pub(super) acc: Vec<f64>,
    index: FastMap<String, u32>,
    key: String,
}

impl Rows {
    pub(super) fn row_for(
        &mut self,
        program: &str,
        name: &str,
        module: &str,
        category: &str,
        host: bool,
        kernel: bool,
    ) -> u32 {
        // The key `{h|d}{program}\0{name}`, built in one reused buffer.
        self.key.clear();
        self.key.push(if host { 'h' } else { 'd' });
        self.key.push_str(program);
        self.key.push('\0');
        self.key.push_str(name);
        if let Some(&r) = self.index.get(self.key.as_str()) {
            let row = &mut self.rows[r as usize];
            if row.category.is_empty() && !category.is_empty() {
                row.category = category.to_string();
            }
            return r;
        }
        let r = self.rows.len() as u32;
        self.rows.push(OpKey {
            program: program.to_string(),
            name: name.to_string(),
            module: module.to_string(),
            category: category.to_string(),
            host,
            kernel,
        });
        self.acc.extend_from_slice(&[0.0; ACC_STRIDE]);
        self.index.insert(self.key.clone(), r);
        r
    }
}

/// Pops the top of the nesting stack into its row.
pub(super) fn pop(s: &mut Scratch, acc: &mut [f64]) {
    let q = s.stack_i.pop().unwrap() as usize;
    s.stack_end.pop();
    let child = s.stack_child.pop().unwrap();
    let d = s.dur[q];
    let self_ps = if d > child { d - child } else { 0.0 };
    if let Some(parent) = s.stack_child.last_mut() {
        *parent += d;
    }
    let a = ACC_STRIDE * s.row[q] as usize;
    acc[a] += 1.0;
    add_exact(acc, a + 1, d);
    add_exact(acc, a + 3, self_ps);
    add_exact(acc, a + 5, s.fl[q]);
    add_exact(acc, a + 7, s.by[q]);
}

/// The collected events in start order, longer first on equal starts, into s.ord. Lines are nearly sorted
/// (the device clock reorders a few neighbours): insertion sort, linear then; a line far from sorted (over 8
/// moves per event) falls back to a comparison sort.
pub(super) fn sorted_order(s: &mut Scratch) {
    let k = s.off.len();
    let (off, dur) = (&s.off, &s.dur);
    let o = &mut s.ord;
    o.clear();
    o.extend(0..k as u32);
    let before = |a: u32, b: u32| {
        let (a, b) = (a as usize, b as usize);
        off[a] < off[b] || (off[a] == off[b] && dur[a] > dur[b])
    };
    let mut moves = 0usize;
    for j in 1..k {
        let x = o[j];
        let mut m = j;
        while m > 0 && before(x, o[m - 1]) {
            o[m] = o[m - 1];
            m -= 1;
            moves += 1;
        }
        o[m] = x;
        if moves > 8 * k {
            o.clear();
            o.extend(0..k as u32);
            o.sort_by(|&a, &b| {
                let (a, b) = (a as usize, b as usize);
                off[a].total_cmp(&off[b]).then(dur[b].total_cmp(&dur[a]))
            });
            return;
        }
    }
}
