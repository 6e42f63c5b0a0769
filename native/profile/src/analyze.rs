//! From an XSpace to what `tpw profile` prints: step-time breakdown, op table and overview (a port of
//! analyze.ts's Analyzer and mergePartials, without the timeline, which the command does not show). One pass
//! over the lines: each line is put in start order once, and the same walk computes nesting depth, device-busy
//! intervals and the host's step intervals; op statistics, device stats and step grouping see each line too.

use crate::decode::{decode_planes, scan_xspace, Fail, Layout};
use crate::devices::{device_steps, overview_of, DevicePartial, DeviceStats};
use crate::intervals::IntervalUnion;
use crate::jsmath::{js_cmp, js_max, js_min};
use crate::mapped::Capture;
use crate::op_stats::{merge_ops, OpPartial, OpStats};
use crate::step_groups::{group_steps, GroupCollector, GroupPartial};
use crate::steps::{kind_of, step_breakdown, Kind, StepIntervals};
use crate::view::{LineView, PlaneSummary, PlaneView, ProfileSummary, SpaceInfo, UnattributedKernels, XSpaceVisitor};

/// Device lines whose events are not op executions (their spans would count a device busy twice or wrongly).
fn not_busy_line(name: &str) -> bool {
    matches!(name, "XLA Modules" | "Async XLA Ops" | "XLA TraceMe" | "Steps")
}

#[derive(Default)]
pub struct Analyzer {
    event_count: usize,
    t0: f64,
    t1: f64,
    ops: OpStats,
    devices: DeviceStats,
    groups: GroupCollector,
    line_busy: Vec<f64>,
    planes: Vec<PlaneSummary>,
    /// The first /host:CPU plane's index: its step intervals are the host's.
    host_index: Option<usize>,
    step_iv: StepIntervals,
    busy: IntervalUnion,
    host_busy: IntervalUnion,
    /// Step-interval kind by name key (-1: not known yet).
    kind_of_key: Vec<i8>,
    order: Vec<u32>,
    depth_end: Vec<f64>,
}

/// What the analyzer saw, ready to be merged into a summary.
pub struct Partial {
    pub event_count: usize,
    pub t0: f64,
    pub t1: f64,
    pub planes: Vec<PlaneSummary>,
    pub ops: OpPartial,
    pub devices: DevicePartial,
    /// The first /host:CPU plane this analyzer saw, if any.
    pub host: Option<usize>,
    pub step_iv: StepIntervals,
    pub busy: Vec<f64>,
    pub host_busy: Vec<f64>,
    pub groups: GroupPartial,
}

impl Analyzer {
    pub fn new() -> Self {
        Analyzer { t0: f64::INFINITY, t1: f64::NEG_INFINITY, ..Default::default() }
    }

    /// An analyzer for a share of the planes that begins after a TPU plane (see GroupCollector::after_tpu_plane).
    pub fn after_tpu_plane() -> Self {
        Analyzer { groups: GroupCollector::after_tpu_plane(), ..Self::new() }
    }

    pub fn partial(mut self) -> Partial {
        Partial {
            event_count: self.event_count,
            t0: self.t0,
            t1: self.t1,
            planes: std::mem::take(&mut self.planes),
            ops: self.ops.into_partial(),
            devices: self.devices.partial(),
            host: self.host_index,
            step_iv: std::mem::take(&mut self.step_iv),
            busy: self.busy.result(),
            host_busy: self.host_busy.result(),
            groups: self.groups.partial(),
        }
    }

    /// Events in start order, longer first on equal starts (a parent before the child it begins with); false
    /// when already so.
    fn sort_line(&mut self, l: &LineView) -> bool {
        let (o, d, n) = (&l.offset_ps, &l.duration_ps, l.count);
        let mut sorted = true;
        for i in 1..n {
            if !(o[i - 1] < o[i] || (o[i - 1] == o[i] && d[i - 1] >= d[i])) {
                sorted = false;
                break;
            }
        }
        if sorted {
            return false;
        }
        self.order.clear();
        self.order.extend(0..n as u32);
        self.order.sort_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            let x = o[a] - o[b];
            if x != 0.0 && !x.is_nan() {
                js_cmp(x)
            } else {
                js_cmp(d[b] - d[a])
            }
        });
        true
    }

    fn kind_of_meta(&mut self, p: &PlaneView, meta_id: i32) -> Kind {
        let info = p.meta.get(&(meta_id as i64));
        let key = info.map_or(-1, |i| i.key);
        if key >= 0 && (key as usize) < self.kind_of_key.len() && self.kind_of_key[key as usize] >= 0 {
            return KINDS[self.kind_of_key[key as usize] as usize];
        }
        let k = kind_of(info.map_or("", |i| &*i.name));
        if (0..1 << 24).contains(&key) {
            if key as usize >= self.kind_of_key.len() {
                self.kind_of_key.resize(key as usize + 1, -1);
            }
            self.kind_of_key[key as usize] = k as i8;
        }
        k
    }
}

const KINDS: [Kind; 6] = [Kind::None, Kind::Marker, Kind::Compile, Kind::Execute, Kind::Transfer, Kind::Host];

impl XSpaceVisitor for Analyzer {
    fn plane(&mut self, p: &PlaneView) {
        self.planes.push(PlaneSummary { name: p.name.clone(), lines: p.line_count, events: 0 });
        if self.host_index.is_none() && p.name.starts_with("/host:CPU") {
            self.host_index = Some(p.index);
        }
        self.ops.plane(p);
        self.devices.plane(p);
        self.groups.plane(p);
    }

    fn line(&mut self, p: &PlaneView, l: &LineView) {
        let n = l.count;
        if n == 0 {
            return;
        }
        if let Some(last) = self.planes.last_mut() {
            last.events += n;
        }
        self.event_count += n;
        let ordered = self.sort_line(l);
        let is_host = self.host_index == Some(p.index);
        let device = p.name.starts_with("/device:");
        let all_ops = device && l.name == "XLA Ops";
        // Busy: a device's op executions (every event of TPU's XLA Ops line, GPU kernels naming an HLO op), or on
        // a host, its op events (XLA on CPU); host events count only where no device ran anything.
        let busy_on = if device { all_ops || !not_busy_line(&l.name) } else { true };
        let mut d_top = 0usize;
        let (mut busy_s, mut busy_e) = (f64::NAN, f64::NAN);
        let (mut t0, mut t1) = (self.t0, self.t1);
        let order = std::mem::take(&mut self.order);
        let mut depth_end = std::mem::take(&mut self.depth_end);
        for k in 0..n {
            let i = if ordered { order[k] as usize } else { k };
            let off = l.offset_ps[i];
            let dur = l.duration_ps[i];
            while d_top > 0 && depth_end[d_top - 1] <= off {
                d_top -= 1;
            }
            let depth = d_top.min(255);
            if d_top == depth_end.len() {
                depth_end.push(0.0);
            }
            depth_end[d_top] = off + dur;
            d_top += 1;
            let s_us = (l.timestamp_ns + off / 1000.0) / 1000.0;
            let e_us = s_us + dur / 1e6;
            if s_us < t0 {
                t0 = s_us;
            }
            if e_us > t1 {
                t1 = e_us;
            }
            if is_host {
                let kind = self.kind_of_meta(p, l.meta_id[i]);
                if kind != Kind::None && (kind != Kind::Compile || depth <= 8) && (kind != Kind::Execute || depth == 0)
                {
                    self.step_iv.add(kind, s_us, e_us);
                }
            }
            if !busy_on || (!all_ops && l.op[i] < 0) {
                continue;
            }
            // Busy intervals, merged along the line (events come in start order).
            if s_us <= busy_e {
                if e_us > busy_e {
                    busy_e = e_us;
                }
            } else {
                if !busy_e.is_nan() {
                    let u = if device { &mut self.busy } else { &mut self.host_busy };
                    u.push(busy_s, busy_e);
                    if device {
                        self.line_busy.push(busy_s);
                        self.line_busy.push(busy_e);
                    }
                }
                busy_s = s_us;
                busy_e = e_us;
            }
        }
        self.order = order;
        self.depth_end = depth_end;
        if busy_on {
            let u = if device { &mut self.busy } else { &mut self.host_busy };
            if !busy_e.is_nan() {
                u.push(busy_s, busy_e);
                if device {
                    self.line_busy.push(busy_s);
                    self.line_busy.push(busy_e);
                }
            }
            u.end_run();
        }
        if !self.line_busy.is_empty() {
            let lb = std::mem::take(&mut self.line_busy);
            self.devices.busy_run(&lb);
            self.line_busy = lb;
            self.line_busy.clear();
        }
        self.devices.line(l);
        self.groups.line(l);
        self.t0 = t0;
        self.t1 = t1;
        self.ops.line(p, l);
    }
}

/// The summary of partials that cover consecutive planes, in plane order (analyze.ts mergePartials, without the
/// timeline). Op times are summed in picoseconds (whole numbers, exact) and made µs once, and unions do not
/// depend on the order of their runs: the summary is the same however the planes were split.
pub fn summarize(parts: Vec<Partial>, info: SpaceInfo) -> ProfileSummary {
    let mut event_count = 0;
    let (mut t0, mut t1) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut planes = vec![];
    let mut host: Option<usize> = None;
    for (k, p) in parts.iter().enumerate() {
        event_count += p.event_count;
        t0 = js_min(t0, p.t0);
        t1 = js_max(t1, p.t1);
        if let Some(h) = p.host {
            if host.is_none_or(|best| h < parts[best].host.unwrap_or(usize::MAX)) {
                host = Some(k);
            }
        }
    }
    for p in &parts {
        planes.extend(p.planes.iter().cloned());
    }
    if !t0.is_finite() {
        t0 = 0.0;
        t1 = 0.0;
    }
    let mut unattributed = UnattributedKernels::default();
    let op_parts: Vec<OpPartial> = parts.iter().map(|p| p.ops.clone()).collect();
    let mut ops = merge_ops(&op_parts, Some(&mut unattributed));
    let any_device = parts.iter().any(|p| !p.busy.is_empty());
    let busy = if parts.len() == 1 {
        if any_device {
            parts[0].busy.clone()
        } else {
            parts[0].host_busy.clone()
        }
    } else {
        let mut u = IntervalUnion::new();
        for p in &parts {
            u.push_run(if any_device { &p.busy } else { &p.host_busy });
        }
        u.result()
    };
    // Steps as xprof finds them: a device's own Steps line first, else the device work step annotations group
    // (GPU), else the host's program dispatches (torch_xla).
    let step_lines: Vec<Vec<f64>> = parts.iter().flat_map(|p| p.devices.steps.iter().cloned()).collect();
    let device_windows = !step_lines.is_empty();
    let groups: Vec<GroupPartial> = parts.iter().map(|p| p.groups.clone()).collect();
    let grouped = if device_windows { None } else { group_steps(&groups, &busy) };
    let raw = if device_windows {
        device_steps(&step_lines, &busy)
    } else if let Some(g) = grouped.clone() {
        g
    } else if let Some(h) = host {
        step_breakdown(&parts[h].step_iv, &busy)
    } else {
        vec![]
    };
    let steps: Vec<_> = raw
        .into_iter()
        .map(|mut s| {
            s.start_us -= t0;
            s
        })
        .collect();
    let step_source = if device_windows {
        "device"
    } else if grouped.is_some() {
        "annotations"
    } else if !steps.is_empty() {
        "host"
    } else {
        "none"
    };
    let devices: Vec<&DevicePartial> = parts.iter().map(|p| &p.devices).collect();
    let overview = overview_of(&devices, info.hostnames.len().max(1), &mut ops, step_source);
    let mut warnings = info.errors.clone();
    warnings.extend(info.warnings.iter().cloned());
    ProfileSummary {
        hosts: info.hostnames,
        planes,
        event_count,
        span_us: t1 - t0,
        steps,
        ops,
        unattributed_kernels: unattributed,
        overview,
        warnings,
    }
}

/// Plane ranges for `threads` threads: consecutive planes, about the same number of bytes each.
fn chunks(layout: &Layout, threads: usize) -> Vec<std::ops::Range<usize>> {
    let n = layout.planes.len();
    let total: usize = layout.planes.iter().map(|&(s, e)| e - s).sum();
    let mut out = vec![];
    let (mut from, mut acc) = (0, 0);
    for (k, &(s, e)) in layout.planes.iter().enumerate() {
        acc += e - s;
        if out.len() + 1 < threads && acc * threads >= total * (out.len() + 1) && k + 1 < n {
            out.push(from..k + 1);
            from = k + 1;
        }
    }
    out.push(from..n);
    out
}

/// Below this many bytes a capture is analyzed on one thread (starting others costs more than they save).
const MIN_BYTES_PER_THREAD: usize = 2 << 20;

/// How many threads analyze a capture of `size` bytes: TPW_THREADS when set (tests, benches), else the cores
/// this process may use, at most one per 2 MiB and at most 8.
fn threads_for(size: usize) -> usize {
    let set = std::env::var("TPW_THREADS").ok().and_then(|v| v.parse::<usize>().ok()).filter(|&n| n > 0);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    set.unwrap_or_else(|| cores.min(8).min(size / MIN_BYTES_PER_THREAD).max(1))
}

fn analyze_range(
    buf: &[u8],
    layout: &Layout,
    range: std::ops::Range<usize>,
    capture: &Capture,
) -> Result<Partial, Fail> {
    let mut a = if layout.tpu_before(range.start) { Analyzer::after_tpu_plane() } else { Analyzer::new() };
    decode_planes(buf, layout, range, &mut a, &mut |s, e| capture.release(s, e))?;
    Ok(a.partial())
}

/// Why a capture has no summary.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfileError {
    /// What to tell the user (it names the file), as the node CLI words it.
    Say(String),
    /// Unreadable, or corrupt inside a plane: the node CLI words the message (an fs error's text, or the offset
    /// of the fault, which this decoder does not track).
    HandOff,
}

/// Analyzes the capture `file`, its planes split over threads when it is big (threads_for). A panic (a fault
/// in this port that some capture reaches) hands the capture to the node CLI too, rather than failing it.
pub fn analyze_file(file: &str) -> Result<ProfileSummary, ProfileError> {
    std::panic::catch_unwind(|| analyze_file_unguarded(file)).unwrap_or(Err(ProfileError::HandOff))
}

fn analyze_file_unguarded(file: &str) -> Result<ProfileSummary, ProfileError> {
    let capture = Capture::open(file).map_err(|_| ProfileError::HandOff)?;
    let buf = capture.bytes();
    let say = |e: Fail| match e {
        Fail::Say(m) => ProfileError::Say(format!("{file}: {m}")),
        Fail::HandOff => ProfileError::HandOff,
    };
    let layout = scan_xspace(buf).map_err(say)?;
    let ranges = chunks(&layout, threads_for(buf.len()).min(layout.planes.len()));
    let parts: Vec<Result<Partial, Fail>> = if ranges.len() == 1 {
        vec![analyze_range(buf, &layout, 0..layout.planes.len(), &capture)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .into_iter()
                .map(|r| {
                    let (layout, capture) = (&layout, &capture);
                    scope.spawn(move || analyze_range(buf, layout, r, capture))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(Err(Fail::HandOff))).collect()
        })
    };
    let parts = parts.into_iter().collect::<Result<Vec<_>, _>>().map_err(say)?;
    Ok(summarize(parts, layout.info))
}
