//! The op table by xprof's rules, one line at a time:
//! - Only device planes count. Host-side events that name an HLO op (a GPU runtime's kernel launches) are
//!   launches, not executions. A capture with no device plane at all (XLA on CPU) falls back to the host's op
//!   events; merge_ops drops those otherwise.
//! - TPU: every event of a device plane's `XLA Ops` line is one execution of the op its metadata names (the
//!   short display name), of the program and category its metadata stats give, timed by the device's own
//!   clock (device_offset_ps / device_duration_ps). Ops nest on that line (a while or call around its body):
//!   self time is the duration less that of the direct children.
//! - GPU: every kernel (any other device line) with an `hlo_op` stat is one execution of that op of its
//!   program_id (the last name of a `::`-joined hlo_op), its whole duration self time; its category comes from
//!   the program's HLO (the /host:metadata plane). As xprof, a kernel whose op is not an instruction of its
//!   program's HLO counts for no op (XLA names the CUDA command buffer on the kernels it ran inside one);
//!   unlike xprof, a program whose HLO the capture lacks keeps its kernels' rows (uncategorized).
//!
//! Rows are per (program, op name); sums stay raw (picoseconds) until merge_ops.

use std::sync::Arc;

use crate::hlo_categories::{Categories, FastMap};
use crate::view::{EventInfo, LineView, PlaneView};

mod merge;
mod rows;
#[cfg(test)]
mod tests;

pub use merge::merge_ops;
pub use rows::{add_exact, exact_total, ACC_STRIDE};
use rows::{pop, sorted_order, Rows, Scratch};

/// Lines of a TPU device plane that are not op executions (XLA Ops is handled on its own).
const NOT_OP_LINES: &[&str] = &[
    "XLA Modules",
    "Async XLA Ops",
    "XLA TraceMe",
    "Steps",
    "Framework Ops",
    "Framework Name Scope",
    "Source code",
    "SparseCore",
];

/// The first index i such that `s[i..]` matches `(\.clone)?(\.\d+)*(\.clone)?$` (an op's version suffix).
fn version_suffix_start(s: &str) -> usize {
    /// `(\.\d+)*(\.clone)?` matches all of t. Greedy digits are exact here: what follows them must start
    /// with '.' or be the end.
    fn tail(mut t: &[u8]) -> bool {
        while t.len() >= 2 && t[0] == b'.' && t[1].is_ascii_digit() {
            let d = t[1..].iter().take_while(|b| b.is_ascii_digit()).count();
            t = &t[1 + d..];
        }
        t.is_empty() || t == b".clone"
    }
    let b = s.as_bytes();
    (0..b.len())
        .filter(|&i| b[i] == b'.')
        .find(|&i| tail(&b[i..]) || (b[i..].starts_with(b".clone") && tail(&b[i + 6..])))
        .unwrap_or(b.len())
}

/// XLA on CPU records no category; a coarse one from the op name, used only where nothing better is known.
pub fn category_from_name(op: &str) -> String {
    let base = &op[..version_suffix_start(op)];
    let c = if base.ends_with("fusion") {
        if base.contains("dot") || base.contains("convolution") {
            "convolution fusion"
        } else {
            "loop fusion"
        }
    } else if base == "dot" || base == "convolution" {
        "convolution"
    } else if [
        "copy",
        "transpose",
        "bitcast",
        "reshape",
        "broadcast",
        "concatenate",
        "slice",
        "pad",
        "gather",
        "scatter",
    ]
    .iter()
    .any(|p| base.starts_with(p))
        || base.starts_with("wrapped_scatter")
    {
        "data formatting"
    } else if ["all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all"]
        .iter()
        .any(|p| base.starts_with(p))
    {
        "collective"
    } else if base.starts_with("reduce") {
        "reduction"
    } else if base == "call" || base == "while" || base == "conditional" {
        "control flow"
    } else {
        "elementwise"
    };
    c.to_string()
}

fn finite_or_0(x: Option<f64>) -> f64 {
    match x {
        Some(v) if v.is_finite() => v,
        _ => 0.0,
    }
}

/// A row's identity; category "" until resolved (GPU: from the program's HLO, in merge_ops).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpKey {
    pub program: String,
    pub name: String,
    pub module: String,
    pub category: String,
    pub host: bool,
    pub kernel: bool,
}

/// What an OpStats saw, as plain data: rows and their sums (ACC_STRIDE per row).
#[derive(Clone, Debug, Default)]
pub struct OpPartial {
    pub rows: Vec<OpKey>,
    pub acc: Vec<f64>,
    /// Category by program id, then instruction name (from the programs' HLO).
    pub hlo: FastMap<String, Arc<Categories>>,
    /// Module name by program id (TPU's XLA Modules line names them `name(id)`).
    pub modules: FastMap<String, String>,
}

/// Metadata ids below this are cached in arrays.
const CACHED_IDS: i64 = 1 << 24;

/// Collects the op table of the planes it visits (one analysis, or one thread's share of it). Its caches by
/// string index assume every plane it sees indexes one string table (the decoder's, one per file).
#[derive(Default)]
pub struct OpStats {
    rows: Rows,
    hlo: FastMap<String, Arc<Categories>>,
    modules: FastMap<String, String>,
    is_device: bool,
    /// Row by metadata id on the current plane's XLA Ops line (TPU); -1: not resolved. With the metadata's
    /// FLOPs and bytes (finite, else 0).
    row_of_meta: Vec<i32>,
    flops_of_meta: Vec<f64>,
    bytes_of_meta: Vec<f64>,
    /// GPU kernels without their own flops / bytes stats: the metadata's (finite, else 0) by id, valid where
    /// fb_plane is the current plane's number.
    fb_of_meta: Vec<(f64, f64)>,
    fb_plane: Vec<u32>,
    plane_no: u32,
    /// Row by (hlo_op key, program key), for kernels (GPU). Kept across planes: one OpStats sees planes of
    /// one string table, whose indices stay valid.
    row_of_kernel: FastMap<i64, u32>,
    scratch: Scratch,
}

impl OpStats {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline(never)] // kept small: lib.rs, "Function size"
    pub fn plane(&mut self, p: &PlaneView) {
        self.is_device = p.name.starts_with("/device:");
        self.row_of_meta.fill(-1);
        self.plane_no = self.plane_no.wrapping_add(1);
        if self.plane_no == 0 {
            self.fb_plane.fill(0);
            self.plane_no = 1;
        }
        if p.name == "/host:metadata" {
            self.programs(p);
        }
    }

    /// The programs' HLO, from the metadata plane.
    fn programs(&mut self, p: &PlaneView) {
        for prog in &p.programs {
            if !prog.name.is_empty() {
                self.modules.entry(prog.key.clone()).or_insert_with(|| prog.name.clone());
            }
            self.hlo.insert(prog.key.clone(), prog.categories.clone());
        }
    }

    #[inline(never)] // kept small: lib.rs, "Function size"
    pub fn line(&mut self, p: &PlaneView, l: &LineView) {
        let n = l.count;
        if n == 0 {
            return;
        }
        if self.is_device && l.name == "XLA Modules" {
            return self.module_names(p, l);
        }
        if self.is_device && NOT_OP_LINES.contains(&l.name.as_str()) {
            return;
        }
        let tpu = self.is_device && l.name == "XLA Ops";
        let mut s = std::mem::take(&mut self.scratch);
        s.off.clear();
        s.dur.clear();
        s.row.clear();
        s.fl.clear();
        s.by.clear();
        // Collect the line's op executions with their times and rows.
        let mut sorted = true;
        for i in 0..n {
            let mut o = l.offset_ps[i];
            let mut d = l.duration_ps[i];
            let (r, f, b);
            if tpu {
                // The metadata's FLOPs and bytes, cached with the row by id.
                let Some(found) = self.tpu_row(p, l.meta_id[i]) else {
                    continue;
                };
                (r, f, b) = found;
                let (d_off, d_dur) = (l.dev_offset_ps[i], l.dev_duration_ps[i]);
                if !d_off.is_nan() && !d_dur.is_nan() {
                    o = d_off;
                    d = d_dur;
                }
            } else {
                if l.op[i] < 0 {
                    continue;
                }
                r = self.kernel_row(p, l, i);
                let (lf, lb) = (l.flops[i], l.bytes[i]);
                if lf.is_nan() || lb.is_nan() {
                    let (mf, mb) = self.meta_flops_bytes(p, l.meta_id[i]);
                    f = if lf.is_nan() { mf } else { finite_or_0(Some(lf)) };
                    b = if lb.is_nan() { mb } else { finite_or_0(Some(lb)) };
                } else {
                    (f, b) = (finite_or_0(Some(lf)), finite_or_0(Some(lb)));
                }
            }
            if let (Some(&po), Some(&pd)) = (s.off.last(), s.dur.last()) {
                if o < po || (o == po && d > pd) {
                    sorted = false;
                }
            }
            s.fl.push(f);
            s.by.push(b);
            s.off.push(o);
            s.dur.push(d);
            s.row.push(r);
        }
        let k = s.off.len();
        if k > 0 {
            if !sorted {
                sorted_order(&mut s);
            }
            // Self time: a parent's duration less its direct children's, by nesting on the line. GPU kernels do
            // not nest (a line may still show two streams' kernels overlapping): each is its own self time.
            let nest = tpu || !self.is_device;
            let acc = &mut self.rows.acc;
            s.stack_i.clear();
            s.stack_end.clear();
            s.stack_child.clear();
            for j in 0..k {
                let q = if sorted { j } else { s.ord[j] as usize };
                while s.stack_end.last().is_some_and(|&e| e <= s.off[q]) {
                    pop(&mut s, acc);
                }
                s.stack_i.push(q as u32);
                s.stack_end.push(s.off[q] + s.dur[q]);
                s.stack_child.push(0.0);
                if !nest {
                    pop(&mut s, acc);
                }
            }
            while !s.stack_i.is_empty() {
                pop(&mut s, acc);
            }
        }
        self.scratch = s;
    }

    /// What the rows and sums are now (copies; into_partial gives them up without copying).
    pub fn partial(&self) -> OpPartial {
        OpPartial {
            rows: self.rows.rows.clone(),
            acc: self.rows.acc[..ACC_STRIDE * self.rows.rows.len()].to_vec(),
            hlo: self.hlo.clone(),
            modules: self.modules.clone(),
        }
    }

    pub fn into_partial(self) -> OpPartial {
        OpPartial { rows: self.rows.rows, acc: self.rows.acc, hlo: self.hlo, modules: self.modules }
    }

    fn module_names(&mut self, p: &PlaneView, l: &LineView) {
        for i in 0..l.count {
            let Some(info) = p.meta.get(&l.meta_id[i]) else {
                continue;
            };
            if let Some((name, id)) = module_of(&info.name) {
                self.modules.entry(id.to_string()).or_insert_with(|| name.to_string());
            }
        }
    }

    /// The row of a TPU op by its metadata id, with the metadata's FLOPs and bytes; None: no such metadata.
    fn tpu_row(&mut self, p: &PlaneView, meta_id: i64) -> Option<(u32, f64, f64)> {
        let m = meta_id as usize;
        if (0..CACHED_IDS).contains(&meta_id) && m < self.row_of_meta.len() && self.row_of_meta[m] >= 0 {
            return Some((self.row_of_meta[m] as u32, self.flops_of_meta[m], self.bytes_of_meta[m]));
        }
        let info: &EventInfo = p.meta.get(&meta_id)?;
        let name = if info.display_name.is_empty() { &info.name } else { &info.display_name };
        let r = self.rows.row_for(
            info.program.as_deref().unwrap_or(""),
            name,
            "",
            info.category.as_deref().unwrap_or(""),
            false,
            false,
        );
        let (f, b) = (finite_or_0(info.flops), finite_or_0(info.bytes));
        if (0..CACHED_IDS).contains(&meta_id) {
            if self.row_of_meta.len() <= m {
                let len = (m + 1).max(2 * self.row_of_meta.len());
                self.row_of_meta.resize(len, -1);
                self.flops_of_meta.resize(len, 0.0);
                self.bytes_of_meta.resize(len, 0.0);
            }
            self.row_of_meta[m] = r as i32;
            self.flops_of_meta[m] = f;
            self.bytes_of_meta[m] = b;
        }
        Some((r, f, b))
    }

    /// The metadata's FLOPs and bytes (finite, else 0; no metadata: 0), for kernels without their own stats.
    fn meta_flops_bytes(&mut self, p: &PlaneView, meta_id: i64) -> (f64, f64) {
        let look = |p: &PlaneView| {
            let info = p.meta.get(&meta_id);
            (finite_or_0(info.and_then(|i| i.flops)), finite_or_0(info.and_then(|i| i.bytes)))
        };
        if !(0..CACHED_IDS).contains(&meta_id) {
            return look(p);
        }
        let m = meta_id as usize;
        if m < self.fb_plane.len() && self.fb_plane[m] == self.plane_no {
            return self.fb_of_meta[m];
        }
        if self.fb_plane.len() <= m {
            let len = (m + 1).max(2 * self.fb_plane.len());
            self.fb_plane.resize(len, 0);
            self.fb_of_meta.resize(len, (0.0, 0.0));
        }
        let v = look(p);
        self.fb_plane[m] = self.plane_no;
        self.fb_of_meta[m] = v;
        v
    }

    fn kernel_row(&mut self, p: &PlaneView, l: &LineView, i: usize) -> u32 {
        let op_k = l.op[i];
        let prog_k = l.program[i];
        let cache_key = op_k as i64 * 16777216 + (prog_k as i64 + 1);
        if let Some(&cached) = self.row_of_kernel.get(&cache_key) {
            if self.rows.rows[cached as usize].host != self.is_device {
                return cached;
            }
        }
        let s = p.strings;
        let cat_k = l.category[i];
        let category = if cat_k >= 0 {
            &*s[cat_k as usize]
        } else {
            p.meta.get(&l.meta_id[i]).and_then(|info| info.category.as_deref()).unwrap_or("")
        };
        let op = &*s[op_k as usize];
        let name = match op.rfind("::") {
            Some(last) => &op[last + 2..],
            None => op,
        };
        let program = if prog_k >= 0 { &*s[prog_k as usize] } else { "" };
        let module = if l.module[i] >= 0 { &*s[l.module[i] as usize] } else { "" };
        let r = self.rows.row_for(program, name, module, category, !self.is_device, self.is_device);
        if op_k < 1 << 24 && prog_k < (1 << 24) - 1 {
            self.row_of_kernel.insert(cache_key, r);
        }
        r
    }
}

/// `name(id)` of an XLA Modules event (a name without line breaks, then the program id in parentheses).
fn module_of(name: &str) -> Option<(&str, &str)> {
    let inner = name.strip_suffix(')')?;
    let digits = inner.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let prefix = inner[..inner.len() - digits].strip_suffix('(')?;
    if prefix.contains(['\n', '\r', '\u{2028}', '\u{2029}']) {
        return None;
    }
    Some((prefix, &inner[inner.len() - digits..]))
}
