//! From an XSpace to its summary: step-time breakdown, op table, overview, and (for the run view) the timeline.
//! One pass over the lines: each line is put in start order once, and the same walk computes nesting depth,
//! device-busy intervals, the host's step intervals and the timeline's columns; op statistics, device stats and
//! step grouping see each line too.

use crate::decode::{decode_planes, scan_xspace, Layout};
use crate::devices::{device_steps, overview_of, DevicePartial, DeviceStats};
use crate::intervals::IntervalUnion;
use crate::op_stats::{merge_ops, OpPartial, OpStats};
use crate::output::notes::{steps_note, unattributed_note};
use crate::output::types::{PlaneSummary, ProfileNotes, ProfileSummary, StepSource, Timeline, UnattributedKernels};
use crate::source::{Fault, ReadAt, Window};
use crate::step_groups::{group_steps, host_steps, GroupCollector, GroupPartial};
use crate::steps::{kind_of, window_breakdown, Kind, StepIntervals};
use crate::timeline::{TimelineCollector, TimelineSink, TIMELINE_MAX_EVENTS};
use crate::torch_trace::{analyze_trace, is_chrome_trace, is_gzip};
use crate::view::{LineView, PlaneView, SpaceInfo, XSpaceVisitor};
use crate::windows::drop_incomplete;

/// Device lines whose events are not op executions (their spans would count a device busy twice or wrongly).
fn not_busy_line(name: &str) -> bool {
    matches!(name, "XLA Modules" | "Async XLA Ops" | "XLA TraceMe" | "Steps")
}

pub struct Analyzer<'s> {
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
    timeline: Option<TimelineCollector<'s>>,
}

/// What an analyzer saw, ready to be merged into a summary.
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
    /// The timeline's names, where it collected one (None: none asked for, or past its limit).
    pub timeline: Option<Vec<String>>,
}

impl<'s> Analyzer<'s> {
    /// `timeline`: where the timeline's lines go (none: no timeline). `after_tpu`: this analyzer's planes follow a
    /// TPU plane it does not see (another thread's share of a capture). `host_steps`: the capture's steps come from
    /// its host (Layout::host_steps).
    pub fn new(timeline: Option<&'s mut dyn TimelineSink>, after_tpu: bool, host_steps: bool) -> Self {
        Analyzer {
            event_count: 0,
            t0: f64::INFINITY,
            t1: f64::NEG_INFINITY,
            ops: OpStats::default(),
            devices: DeviceStats::default(),
            groups: if after_tpu {
                GroupCollector::after_tpu_plane()
            } else if host_steps {
                GroupCollector::for_host_steps()
            } else {
                GroupCollector::new()
            },
            line_busy: vec![],
            planes: vec![],
            host_index: None,
            step_iv: StepIntervals::default(),
            busy: IntervalUnion::new(),
            host_busy: IntervalUnion::new(),
            kind_of_key: vec![],
            order: vec![],
            depth_end: vec![],
            timeline: timeline.map(TimelineCollector::new),
        }
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
            timeline: self.timeline.map(TimelineCollector::names),
        }
    }

    /// Events in start order, longer first on equal starts (a parent before the child it begins with); false
    /// when already so.
    #[inline(never)] // kept small: lib.rs, "Function size"
    fn sort_line(&mut self, l: &LineView) -> bool {
        let (o, d, n) = (&l.offset_ps, &l.duration_ps, l.count);
        if (1..n).all(|i| o[i - 1] < o[i] || (o[i - 1] == o[i] && d[i - 1] >= d[i])) {
            return false;
        }
        self.order.clear();
        self.order.extend(0..n as u32);
        self.order.sort_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            o[a].total_cmp(&o[b]).then(d[b].total_cmp(&d[a]))
        });
        true
    }

    fn kind_of_meta(&mut self, p: &PlaneView, meta_id: i64) -> Kind {
        let info = p.meta.get(&meta_id);
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

const KINDS: [Kind; 5] = [Kind::None, Kind::Compile, Kind::Execute, Kind::Transfer, Kind::Host];

impl XSpaceVisitor for Analyzer<'_> {
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
        if self.event_count > TIMELINE_MAX_EVENTS {
            if let Some(t) = self.timeline.take() {
                t.drop_all();
            }
        }
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
        let mut timeline = self.timeline.take();
        if let Some(t) = timeline.as_mut() {
            t.begin_line(n);
        }
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
            t0 = t0.min(s_us);
            t1 = t1.max(e_us);
            if let Some(t) = timeline.as_mut() {
                t.event(p, l.meta_id[i], s_us, dur / 1e6, depth as u8);
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
                busy_e = busy_e.max(e_us);
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
        if let Some(t) = timeline.as_mut() {
            t.end_line(&p.name, if l.display_name.is_empty() { &l.name } else { &l.display_name });
        }
        self.timeline = timeline;
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
            self.devices.busy_run(&self.line_busy);
            self.line_busy.clear();
        }
        self.devices.line(l);
        self.groups.line(p, l);
        self.t0 = t0;
        self.t1 = t1;
        self.ops.line(p, l);
    }
}

/// The summary of partials that cover consecutive planes, in plane order, and the capture's first event (µs,
/// which the timeline's starts are relative to). `timeline_asked`: a timeline was collected (unless past its
/// limit). Op times are summed exactly and made µs once, and unions do not depend on the order of their runs: the
/// summary is the same however the planes were split.
pub fn summarize(parts: Vec<Partial>, info: SpaceInfo, timeline_asked: bool) -> (ProfileSummary, f64) {
    let mut event_count = 0;
    let (mut t0, mut t1) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut planes = vec![];
    let mut host: Option<usize> = None;
    for (k, p) in parts.iter().enumerate() {
        event_count += p.event_count;
        t0 = t0.min(p.t0);
        t1 = t1.max(p.t1);
        if let Some(h) = p.host {
            if host.is_none_or(|best| h < parts[best].host.unwrap_or(usize::MAX)) {
                host = Some(k);
            }
        }
        planes.extend(p.planes.iter().cloned());
    }
    if !t0.is_finite() {
        t0 = 0.0;
        t1 = 0.0;
    }
    let mut unattributed = UnattributedKernels::default();
    let op_parts: Vec<&OpPartial> = parts.iter().map(|p| &p.ops).collect();
    let mut ops = merge_ops(&op_parts, Some(&mut unattributed));
    let any_device = parts.iter().any(|p| !p.busy.is_empty());
    let mut u = IntervalUnion::new();
    for p in &parts {
        u.push_run(if any_device { &p.busy } else { &p.host_busy });
    }
    let busy = u.result();
    // Steps as xprof finds them: a device's own Steps line first, else the device work step annotations group
    // (GPU), else, in a capture with no device, the host's step annotations (XLA on CPU).
    let step_lines: Vec<Vec<f64>> = parts.iter().flat_map(|p| p.devices.steps.iter().cloned()).collect();
    let groups: Vec<&GroupPartial> = parts.iter().map(|p| &p.groups).collect();
    let (raw, step_source) = if !step_lines.is_empty() {
        (device_steps(&step_lines, &busy), StepSource::Device)
    } else if let Some(g) = group_steps(&groups, &busy) {
        (g, StepSource::Annotations)
    } else if let Some(mut windows) = host_steps(&groups).filter(|w| !w.is_empty()) {
        drop_incomplete(&mut windows);
        let iv = host.map(|h| &parts[h].step_iv);
        (window_breakdown(&windows, iv.unwrap_or(&StepIntervals::default()), &busy), StepSource::Host)
    } else {
        (vec![], StepSource::None)
    };
    let steps: Vec<_> = raw
        .into_iter()
        .map(|mut s| {
            s.start_us -= t0;
            s
        })
        .collect();
    let devices: Vec<&DevicePartial> = parts.iter().map(|p| &p.devices).collect();
    let overview = overview_of(&devices, info.hostnames.len().max(1), &mut ops, step_source);
    let mut warnings = info.errors.clone();
    warnings.extend(info.warnings.iter().cloned());
    let timeline = match parts.as_slice() {
        [one] => one.timeline.clone(),
        _ => None,
    };
    if timeline_asked && timeline.is_none() {
        warnings.push(format!(
            "The capture has {event_count} events; the timeline shows none above {TIMELINE_MAX_EVENTS}. Export the Chrome trace to see them in Perfetto."
        ));
    }
    let notes = ProfileNotes { steps: steps_note(step_source), unattributed: unattributed_note(&unattributed) };
    let summary = ProfileSummary {
        hosts: info.hostnames,
        planes,
        event_count,
        span_us: t1 - t0,
        steps,
        ops,
        unattributed_kernels: unattributed,
        overview,
        notes,
        timeline: Timeline { names: timeline.unwrap_or_default() },
        warnings,
    };
    (summary, t0)
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

/// Whether the capture is torch.profiler's Chrome trace JSON rather than an XSpace (a gzipped one is refused,
/// saying so).
pub fn chrome_trace(w: &mut Window) -> Result<bool, Fault> {
    let head = w.get_up_to(0, 4096)?;
    if is_gzip(head) {
        return Err(Fault::Say(
            "it is gzip-compressed (a .json.gz trace): decompress it first (gunzip -k FILE)".into(),
        ));
    }
    Ok(is_chrome_trace(head))
}

/// Read windows: the top-level scan reads little at a time (plane headers); the decoder reads a plane or a line.
const SCAN_WINDOW: usize = 4 << 10;
pub const DECODE_WINDOW: usize = 8 << 20;

/// The capture's summary and first event (µs), with its timeline's lines handed to `timeline` as they are made.
/// Read through `src` a window at a time (the WebAssembly build: its host reads the file).
pub fn analyze_reader(
    src: &dyn ReadAt,
    timeline: Option<&mut dyn TimelineSink>,
    window: usize,
) -> Result<(ProfileSummary, f64), Fault> {
    if chrome_trace(&mut Window::reading(src, SCAN_WINDOW))? {
        return analyze_trace(&mut Window::reading(src, window), timeline);
    }
    let layout = scan_xspace(&mut Window::reading(src, SCAN_WINDOW))?;
    let asked = timeline.is_some();
    let mut a = Analyzer::new(timeline, false, layout.host_steps());
    decode_planes(&mut Window::reading(src, window), &layout, 0..layout.planes.len(), &mut a, &mut |_, _| {})?;
    Ok(summarize(vec![a.partial()], layout.info, asked))
}

/// The summary of a capture held in memory (the native build maps the file), its planes split over `threads`
/// threads; `release(start, end)` is told of each plane's bytes once they are decoded. No timeline.
pub fn analyze_bytes(
    buf: &[u8],
    threads: usize,
    release: &(dyn Fn(usize, usize) + Sync),
) -> Result<ProfileSummary, Fault> {
    if chrome_trace(&mut Window::whole(buf))? {
        return Ok(analyze_trace(&mut Window::whole(buf), None)?.0);
    }
    let layout = scan_xspace(&mut Window::whole(buf))?;
    let ranges = chunks(&layout, threads.clamp(1, layout.planes.len()));
    let run = |r: std::ops::Range<usize>| -> Result<Partial, Fault> {
        let mut a = Analyzer::new(None, layout.tpu_before(r.start), layout.host_steps());
        decode_planes(&mut Window::whole(buf), &layout, r, &mut a, &mut |s, e| release(s, e))?;
        Ok(a.partial())
    };
    let parts: Vec<Result<Partial, Fault>> = if ranges.len() == 1 {
        ranges.into_iter().map(run).collect()
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = ranges.into_iter().map(|r| scope.spawn(move || run(r))).collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
        })
    };
    // The first fault in file order, whichever thread met it.
    let parts = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(summarize(parts, layout.info, false).0)
}
