//! torch.profiler's captures: the Chrome trace JSON it writes (`export_chrome_trace`, TensorBoard's
//! `<host>.pt.trace.json`) to the same summary an XSpace capture gets. Planes are its processes (the host's, and
//! one per GPU: `/device:GPU:N`), lines their threads and streams. The op table is by self time as torch.profiler's
//! own `key_averages()` counts it: a host op's self time is its duration less that of the ops and annotations
//! directly under it on its thread; device kernels, copies and memsets are device ops, their whole duration self
//! time, and as on an XSpace capture, host rows are left out where a device ran anything. Steps are
//! torch.profiler's `ProfilerStep#N` annotations, each broken down by what covered its time (spans.rs).

mod json;
mod read;
mod spans;
#[cfg(test)]
mod tests;

use crate::devices::{gpu_model_name, overview_of, DeviceInfo, DevicePartial};
use crate::intervals::IntervalUnion;
use crate::op_stats::{add_exact, merge_ops, OpKey, OpPartial, ACC_STRIDE};
use crate::output::notes::steps_note;
use crate::output::types::{
    Hardware, PlaneSummary, ProfileNotes, ProfileSummary, StepSource, Timeline, UnattributedKernels,
};
use crate::source::{Fault, ReadAt, Window};
use crate::timeline::{TimelineSink, TIMELINE_MAX_EVENTS};
use crate::trace::Out;
use crate::view::StatValue;
use read::{read_trace, Cat, Event, GpuProps, Trace};
use spans::{breakdown, measure, push_sorted, Cover};
use std::collections::HashMap;

/// Whether a file that begins with `head` is JSON (a Chrome trace) rather than an XSpace: its first byte other
/// than white space (or a byte order mark) opens an object or an array, which no XSpace begins with.
pub fn is_chrome_trace(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    matches!(head.iter().find(|b| !b.is_ascii_whitespace()), Some(b'{' | b'['))
}

/// gzip's magic number: TensorBoard's trace handler writes `.pt.trace.json.gz` with `use_gzip=True`.
pub fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

/// A compile phase of torch.compile, as torch.profiler records it: Dynamo's, AOTAutograd's and Inductor's timed
/// phases (`… (dynamo_timed)`), and the compile entry points they run under.
fn is_compile(name: &str) -> bool {
    name.ends_with("(dynamo_timed)") || name.starts_with("_compile.") || name == "compile_fx_inner"
}

/// A plane of the summary: a process of the trace.
struct Plane {
    name: String,
    /// The GPU's index, for a device's plane.
    gpu: Option<usize>,
    /// Its lines (threads, streams), in the order shown.
    lines: Vec<usize>,
}

/// The planes of `t`: host processes first, then the GPUs by index.
fn planes_of(t: &Trace, line_events: &[Vec<u32>]) -> Vec<Plane> {
    let mut pids: Vec<&str> = vec![];
    let mut of_pid: HashMap<&str, usize> = HashMap::new();
    let mut on_device: Vec<bool> = vec![];
    let mut lines: Vec<Vec<usize>> = vec![];
    for (l, (pid, _)) in t.lines.iter().enumerate() {
        let p = *of_pid.entry(pid).or_insert_with(|| {
            pids.push(pid);
            on_device.push(false);
            lines.push(vec![]);
            pids.len() - 1
        });
        lines[p].push(l);
        on_device[p] |= line_events[l].iter().any(|&i| t.events[i as usize].cat.on_device());
    }
    let label = |p: usize| t.process_label.get(pids[p]).map_or("", String::as_str);
    let gpu_of = |p: usize| -> Option<usize> {
        let index = label(p).strip_prefix("GPU ").and_then(|n| n.trim().parse().ok());
        if index.is_some() {
            return index;
        }
        on_device[p].then(|| pids[p].parse().unwrap_or(p))
    };
    let hosts: Vec<usize> = (0..pids.len()).filter(|&p| gpu_of(p).is_none()).collect();
    let mut devices: Vec<(usize, usize)> = (0..pids.len()).filter_map(|p| gpu_of(p).map(|g| (g, p))).collect();
    devices.sort();
    let mut out = vec![];
    for &p in &hosts {
        let name = if hosts.len() == 1 { "/host:CPU".to_string() } else { format!("/host:CPU pid {}", pids[p]) };
        // The process's own thread first, then the others as they came.
        let mut ls = lines[p].clone();
        ls.sort_by_key(|&l| t.lines[l].1 != t.lines[l].0);
        out.push(Plane { name, gpu: None, lines: ls });
    }
    for (g, p) in devices {
        let mut ls = lines[p].clone();
        ls.sort_by_key(|&l| (t.lines[l].1.parse::<i64>().unwrap_or(i64::MAX), l));
        out.push(Plane { name: format!("/device:GPU:{g}"), gpu: Some(g), lines: ls });
    }
    out
}

/// A line's name: its thread's or stream's, as the trace names it.
fn line_name(t: &Trace, l: usize, device: bool) -> String {
    let (pid, tid) = &t.lines[l];
    match t.thread_name.get(&(pid.clone(), tid.clone())) {
        Some(n) if !n.trim().is_empty() => n.trim().to_string(),
        _ if device => format!("stream {tid}"),
        _ => format!("thread {tid}"),
    }
}

/// A GPU's device info: its type and peaks from the trace's deviceProperties.
fn gpu_info(name: String, props: Option<&GpuProps>) -> DeviceInfo {
    let mut st: HashMap<String, StatValue> = HashMap::new();
    let model = props.map_or("", |p| p.name.as_str());
    if let Some(p) = props {
        let amd = p.arch.starts_with("gfx") || model.to_ascii_uppercase().contains("AMD");
        let vendor = if model.to_ascii_uppercase().contains("NVIDIA") {
            "Nvidia"
        } else if amd {
            "AMD"
        } else {
            ""
        };
        st.insert("device_vendor".into(), StatValue::Str(vendor.into()));
        st.insert("compute_cap_major".into(), StatValue::Num(p.major));
        st.insert("compute_cap_minor".into(), StatValue::Num(p.minor));
        st.insert("gpu_device_name".into(), StatValue::Str(p.arch.clone()));
    }
    let device_type = gpu_model_name(&st);
    let peaks = crate::chips::chip_peaks(model).or_else(|| crate::chips::chip_peaks(&device_type));
    DeviceInfo {
        name,
        hardware: Hardware::Gpu,
        device_type,
        peak_tflops: peaks.map_or(0.0, |c| c.peak_tflops),
        hbm_gbs: peaks.map_or(0.0, |c| c.hbm_gbs),
        busy_us: 0.0,
        active_us: 0.0,
    }
}

/// The op table's rows as OpStats keeps them (exact sums, in picoseconds), by (category, name).
#[derive(Default)]
struct Rows {
    partial: OpPartial,
    index: HashMap<(&'static str, u32), usize>,
}

impl Rows {
    #[allow(clippy::too_many_arguments)]
    fn add(&mut self, t: &Trace, cat: Cat, name: u32, host: bool, count: f64, total_us: f64, self_us: f64) {
        let p = &mut self.partial;
        let k = *self.index.entry((cat.label(), name)).or_insert_with(|| {
            p.rows.push(OpKey {
                name: t.names[name as usize].clone(),
                category: cat.label().to_string(),
                host,
                ..OpKey::default()
            });
            p.acc.extend_from_slice(&[0.0; ACC_STRIDE]);
            p.rows.len() - 1
        });
        let a = &mut p.acc[ACC_STRIDE * k..ACC_STRIDE * (k + 1)];
        a[0] += count;
        add_exact(a, 1, (total_us * 1e6).round());
        add_exact(a, 3, (self_us * 1e6).round());
    }
}

/// The [start, end) of a line's events that `want` picks, in start order.
fn spans<'a>(
    t: &'a Trace,
    evs: &'a [u32],
    want: impl Fn(&Event) -> bool + 'a,
) -> impl Iterator<Item = (f64, f64)> + 'a {
    evs.iter().map(|&i| &t.events[i as usize]).filter(move |e| want(e)).map(|e| (e.ts, e.ts + e.dur))
}

fn is_step(t: &Trace, name: u32) -> bool {
    t.names[name as usize].starts_with("ProfilerStep#")
}

/// Copies a trace that is Chrome trace JSON already to `out`, unchanged: its event count (complete events).
pub fn copy_trace(src: &dyn ReadAt, out: &mut dyn Out) -> Result<usize, Fault> {
    let mut w = Window::reading(src, crate::analyze::DECODE_WINDOW);
    let mut at = 0;
    while at < w.size() {
        let piece = w.get_up_to(at, 1 << 20)?;
        out.write(piece).map_err(Fault::Io)?;
        at += piece.len();
    }
    Ok(read_trace(&mut w)?.events.len())
}

/// The capture's summary and first event (µs), its timeline's lines handed to `timeline` as they are made.
pub fn analyze_trace(
    win: &mut Window,
    timeline: Option<&mut dyn TimelineSink>,
) -> Result<(ProfileSummary, f64), Fault> {
    let t = read_trace(win)?;
    let mut line_events: Vec<Vec<u32>> = vec![vec![]; t.lines.len()];
    for (i, e) in t.events.iter().enumerate() {
        line_events[e.line as usize].push(i as u32);
    }
    // Start order, the longer first on equal starts (a parent before the child it begins with).
    for v in &mut line_events {
        v.sort_by(|&a, &b| {
            let (a, b) = (&t.events[a as usize], &t.events[b as usize]);
            a.ts.total_cmp(&b.ts).then(b.dur.total_cmp(&a.dur))
        });
    }
    let planes = planes_of(&t, &line_events);
    let (mut t0, mut t1) = (f64::INFINITY, f64::NEG_INFINITY);
    for e in &t.events {
        t0 = t0.min(e.ts);
        t1 = t1.max(e.ts + e.dur);
    }
    if !t0.is_finite() {
        (t0, t1) = (0.0, 0.0);
    }
    let mut warnings = vec![];
    let mut timeline = timeline;
    if timeline.is_some() && t.events.len() > TIMELINE_MAX_EVENTS {
        timeline = None;
        warnings.push(format!(
            "The capture has {} events; the timeline shows none above {TIMELINE_MAX_EVENTS}. Open the trace itself in Perfetto to see them.",
            t.events.len()
        ));
    }
    let mut names: Vec<String> = vec![];
    let mut name_id: Vec<i32> = vec![-1; t.names.len()];
    let mut rows = Rows::default();
    let (mut kernels, mut transfers, mut host_ops, mut compile) =
        (IntervalUnion::new(), IntervalUnion::new(), IntervalUnion::new(), IntervalUnion::new());
    let mut devices = DevicePartial::default();
    let mut plane_rows = vec![];
    let mut steps: Vec<(f64, f64)> = vec![];
    let (mut depth_end, mut counted): (Vec<f64>, Vec<(f64, usize)>) = (vec![], vec![]);
    let mut child_us: Vec<f64> = vec![0.0; t.events.len()];
    let (mut children, mut parent) = (vec![0u32; t.events.len()], vec![u32::MAX; t.events.len()]);
    for plane in &planes {
        let device = plane.gpu.is_some();
        let mut busy = IntervalUnion::new();
        let mut events = 0;
        for &l in &plane.lines {
            let evs = &line_events[l];
            events += evs.len();
            let (mut start, mut dur, mut ids, mut depth) = (vec![], vec![], vec![], vec![]);
            depth_end.clear();
            counted.clear();
            for &i in evs {
                let i = i as usize;
                let e = &t.events[i];
                while depth_end.last().is_some_and(|&end| end <= e.ts) {
                    depth_end.pop();
                }
                if timeline.is_some() {
                    let n = &mut name_id[e.name as usize];
                    if *n < 0 {
                        *n = names.len() as i32;
                        names.push(t.names[e.name as usize].clone());
                    }
                    start.push(e.ts);
                    dur.push(e.dur);
                    ids.push(*n);
                    depth.push(depth_end.len().min(255) as u8);
                }
                depth_end.push(e.ts + e.dur);
                if !device && matches!(e.cat, Cat::HostOp | Cat::Annotation | Cat::Runtime) {
                    // Self time as key_averages counts it: less the ops and annotations directly under it.
                    while counted.last().is_some_and(|&(end, _)| end <= e.ts) {
                        counted.pop();
                    }
                    if let Some(&(_, p)) = counted.last() {
                        child_us[p] += e.dur;
                        children[p] += 1;
                        parent[i] = p as u32;
                    }
                    counted.push((e.ts + e.dur, i));
                }
                if e.cat == Cat::Annotation && is_step(&t, e.name) && !device {
                    steps.push((e.ts, e.ts + e.dur));
                }
            }
            if let Some(sink) = timeline.as_deref_mut() {
                sink.line(&plane.name, &line_name(&t, l, device), &start, &dur, &ids, &depth);
            }
            if device {
                push_sorted(&mut busy, spans(&t, evs, |e| e.cat.on_device()));
                push_sorted(&mut kernels, spans(&t, evs, |e| e.cat == Cat::Kernel));
                push_sorted(&mut transfers, spans(&t, evs, |e| matches!(e.cat, Cat::Memcpy | Cat::Memset)));
            } else {
                push_sorted(&mut host_ops, spans(&t, evs, |e| matches!(e.cat, Cat::HostOp | Cat::Runtime)));
            }
            push_sorted(&mut compile, spans(&t, evs, |e| is_compile(&t.names[e.name as usize])));
        }
        plane_rows.push(PlaneSummary { name: plane.name.clone(), lines: plane.lines.len(), events });
        if let Some(g) = plane.gpu {
            let props = t.gpus.iter().find(|p| p.id.parse::<usize>().ok() == Some(g));
            let mut d = gpu_info(plane.name.clone(), props.or(t.gpus.get(g)));
            let u = busy.result();
            d.busy_us = measure(&u);
            d.active_us = if u.is_empty() { 0.0 } else { u[u.len() - 1] - u[0] };
            devices.devices.push(d);
        }
    }
    for plane in &planes {
        for &l in &plane.lines {
            for &i in &line_events[l] {
                let e = &t.events[i as usize];
                let row = if plane.gpu.is_some() {
                    e.cat.on_device()
                } else {
                    matches!(e.cat, Cat::HostOp | Cat::Runtime) || (e.cat == Cat::Annotation && !is_step(&t, e.name))
                };
                if row {
                    let i = i as usize;
                    // As key_averages: an op whose parent is an op of the same name with no other child is
                    // one call with it (a wrapper that dispatches to itself), its self time the parent's.
                    let p = parent[i] as usize;
                    let one = p < t.events.len() && children[p] == 1 && t.events[p].name == e.name;
                    let (count, total) = if one { (0.0, 0.0) } else { (1.0, e.dur) };
                    rows.add(&t, e.cat, e.name, plane.gpu.is_none(), count, total, e.dur - child_us[i]);
                }
            }
        }
    }
    let mut ops = merge_ops(&[&rows.partial], None);
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    steps.dedup();
    let (kernels, transfers, host_ops, compile) =
        (kernels.result(), transfers.result(), host_ops.result(), compile.result());
    let any_device = !devices.devices.is_empty();
    let cover = if any_device {
        Cover { compile: &compile, execute: &kernels, transfer: &transfers, host: &host_ops }
    } else {
        Cover { compile: &compile, execute: &host_ops, transfer: &[], host: &[] }
    };
    let mut steps = breakdown(&steps, &cover);
    for s in &mut steps {
        s.start_us -= t0;
    }
    let source = if steps.is_empty() { StepSource::None } else { StepSource::Profiler };
    let overview = overview_of(&[&devices], 1, &mut ops, source);
    let summary = ProfileSummary {
        hosts: vec![],
        planes: plane_rows,
        event_count: t.events.len(),
        span_us: t1 - t0,
        steps,
        ops,
        unattributed_kernels: UnattributedKernels::default(),
        overview,
        notes: ProfileNotes { steps: steps_note(source), unattributed: String::new() },
        timeline: Timeline { names },
        warnings,
    };
    Ok((summary, t0))
}
