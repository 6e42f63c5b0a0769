//! A Chrome trace as torch.profiler (Kineto) writes it, read into what the analysis uses: the complete events
//! (`"ph": "X"`) with their process, thread, category, name, start and duration; the names its metadata events
//! give processes and threads; and the GPUs its `deviceProperties` describe. Flow events, instant events, counters
//! and the profiler's own spans (`"cat": "Trace"`) are not read.

use super::json::{fault, Cursor};
use crate::source::{Fault, Window};
use std::collections::HashMap;

/// What an event is, from its category.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cat {
    /// An operator on the host (`cpu_op`: aten and the like).
    HostOp,
    /// `record_function` (`user_annotation`): torch.profiler's `ProfilerStep#N`, the optimizer's step, NCCL calls.
    Annotation,
    /// The accelerator runtime's and driver's calls on the host (`cuda_runtime`, `cuda_driver`, ...).
    Runtime,
    /// Device work: kernels, copies, memsets.
    Kernel,
    Memcpy,
    Memset,
    /// Anything else (`python_function`, `cuda_sync`, `gpu_user_annotation`, ...): drawn, not counted.
    Other,
}

impl Cat {
    fn of(cat: &str) -> Option<Cat> {
        Some(match cat {
            "cpu_op" | "operator" => Cat::HostOp,
            "user_annotation" => Cat::Annotation,
            "cuda_runtime" | "cuda_driver" | "runtime" | "privateuse1_runtime" | "privateuse1_driver" => Cat::Runtime,
            "kernel" | "Kernel" => Cat::Kernel,
            "gpu_memcpy" | "Memcpy" => Cat::Memcpy,
            "gpu_memset" | "Memset" => Cat::Memset,
            "Trace" => return None,
            _ => Cat::Other,
        })
    }

    pub fn on_device(self) -> bool {
        matches!(self, Cat::Kernel | Cat::Memcpy | Cat::Memset)
    }

    /// The op table's category of a row of this kind.
    pub fn label(self) -> &'static str {
        match self {
            Cat::HostOp => "cpu_op",
            Cat::Annotation => "user_annotation",
            Cat::Runtime => "runtime",
            Cat::Kernel => "kernel",
            Cat::Memcpy => "memcpy",
            Cat::Memset => "memset",
            Cat::Other => "other",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub line: u32,
    pub name: u32,
    pub cat: Cat,
    /// µs, as the trace writes them.
    pub ts: f64,
    pub dur: f64,
}

/// A GPU as the trace's `deviceProperties` describe it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuProps {
    pub id: String,
    pub name: String,
    pub major: f64,
    pub minor: f64,
    /// AMD's architecture name (`gfx942`), where given.
    pub arch: String,
}

#[derive(Default)]
pub struct Trace {
    pub events: Vec<Event>,
    pub names: Vec<String>,
    /// (pid, tid) of each line, as written.
    pub lines: Vec<(String, String)>,
    pub process_name: HashMap<String, String>,
    /// `process_labels`: "CPU", "GPU 0".
    pub process_label: HashMap<String, String>,
    pub thread_name: HashMap<(String, String), String>,
    pub gpus: Vec<GpuProps>,
    /// A JSON array with no object around it (the format's other form).
    pub bare: bool,
}

/// What one event object held.
#[derive(Default)]
struct Fields {
    ph: String,
    cat: String,
    name: String,
    pid: String,
    tid: String,
    ts: f64,
    dur: f64,
    /// args.name / args.labels (metadata events).
    arg_name: String,
    arg_labels: String,
}

struct Reader {
    trace: Trace,
    name_ids: HashMap<String, u32>,
    line_ids: HashMap<(String, String), u32>,
    key: String,
    raw: String,
    f: Fields,
}

/// Reads the trace through `win`. The caller has seen that it starts (after white space) with '{' or '['.
pub fn read_trace(win: &mut Window) -> Result<Trace, Fault> {
    let mut r = Reader {
        trace: Trace::default(),
        name_ids: HashMap::new(),
        line_ids: HashMap::new(),
        key: String::new(),
        raw: String::new(),
        f: Fields::default(),
    };
    let mut c = Cursor::new(win);
    match c.ws()? {
        Some(b'[') => {
            r.trace.bare = true;
            r.events(&mut c)?;
        }
        _ => r.top(&mut c)?,
    }
    if c.ws()?.is_some() {
        return Err(fault(c.at(), "more after the trace's end"));
    }
    Ok(r.trace)
}

impl Reader {
    fn top(&mut self, c: &mut Cursor) -> Result<(), Fault> {
        let mut seen_events = false;
        if c.open(b'{', b'}')? {
            loop {
                c.key(&mut self.key)?;
                match self.key.as_str() {
                    "traceEvents" => {
                        seen_events = true;
                        self.events(c)?
                    }
                    "deviceProperties" if c.ws()? == Some(b'[') => self.device_properties(c)?,
                    _ => c.skip()?,
                }
                if !c.more(b'}')? {
                    break;
                }
            }
        }
        if !seen_events {
            return Err(Fault::Say(
                "not a Chrome trace: the JSON object has no \"traceEvents\" (torch.profiler writes one)".into(),
            ));
        }
        Ok(())
    }

    fn events(&mut self, c: &mut Cursor) -> Result<(), Fault> {
        if c.ws()? != Some(b'[') {
            return Err(fault(c.at(), "expected traceEvents to be an array"));
        }
        if !c.open(b'[', b']')? {
            return Ok(());
        }
        loop {
            if c.ws()? == Some(b'{') {
                self.event(c)?;
            } else {
                c.skip()?;
            }
            if !c.more(b']')? {
                return Ok(());
            }
        }
    }

    fn event(&mut self, c: &mut Cursor) -> Result<(), Fault> {
        let f = &mut self.f;
        f.ph.clear();
        f.cat.clear();
        f.name.clear();
        f.pid.clear();
        f.tid.clear();
        f.arg_name.clear();
        f.arg_labels.clear();
        f.ts = f64::NAN;
        f.dur = 0.0;
        if c.open(b'{', b'}')? {
            loop {
                c.key(&mut self.key)?;
                let f = &mut self.f;
                match self.key.as_str() {
                    "ph" => c.name_like(&mut f.ph)?,
                    "cat" => c.name_like(&mut f.cat)?,
                    "name" => c.name_like(&mut f.name)?,
                    "pid" => c.name_like(&mut f.pid)?,
                    "tid" => c.name_like(&mut f.tid)?,
                    "ts" => f.ts = c.number_or_nan(&mut self.raw)?,
                    "dur" => f.dur = c.number_or_nan(&mut self.raw)?,
                    "args" if c.ws()? == Some(b'{') => self.args(c)?,
                    _ => c.skip()?,
                }
                if !c.more(b'}')? {
                    break;
                }
            }
        }
        self.keep();
        Ok(())
    }

    fn args(&mut self, c: &mut Cursor) -> Result<(), Fault> {
        if !c.open(b'{', b'}')? {
            return Ok(());
        }
        loop {
            c.key(&mut self.key)?;
            match self.key.as_str() {
                "name" => c.name_like(&mut self.f.arg_name)?,
                "labels" => c.name_like(&mut self.f.arg_labels)?,
                _ => c.skip()?,
            }
            if !c.more(b'}')? {
                return Ok(());
            }
        }
    }

    /// Keeps what the event says, if it says something the analysis uses.
    fn keep(&mut self) {
        let f = &self.f;
        match f.ph.as_str() {
            "X" => {
                let Some(cat) = Cat::of(&f.cat) else { return };
                if !f.ts.is_finite() {
                    return;
                }
                let t = &mut self.trace;
                let key = (f.pid.clone(), f.tid.clone());
                let line = *self.line_ids.entry(key).or_insert_with_key(|k| {
                    t.lines.push(k.clone());
                    (t.lines.len() - 1) as u32
                });
                let name = match self.name_ids.get(&f.name) {
                    Some(&n) => n,
                    None => {
                        t.names.push(f.name.clone());
                        self.name_ids.insert(f.name.clone(), (t.names.len() - 1) as u32);
                        (t.names.len() - 1) as u32
                    }
                };
                let dur = if f.dur.is_finite() && f.dur > 0.0 { f.dur } else { 0.0 };
                t.events.push(Event { line, name, cat, ts: f.ts, dur });
            }
            "M" => {
                let t = &mut self.trace;
                match f.name.as_str() {
                    "process_name" => {
                        t.process_name.insert(f.pid.clone(), f.arg_name.clone());
                    }
                    "process_labels" => {
                        t.process_label.insert(f.pid.clone(), f.arg_labels.clone());
                    }
                    "thread_name" => {
                        t.thread_name.insert((f.pid.clone(), f.tid.clone()), f.arg_name.clone());
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn device_properties(&mut self, c: &mut Cursor) -> Result<(), Fault> {
        if !c.open(b'[', b']')? {
            return Ok(());
        }
        loop {
            if c.ws()? == Some(b'{') {
                let mut g = GpuProps::default();
                if c.open(b'{', b'}')? {
                    loop {
                        c.key(&mut self.key)?;
                        match self.key.as_str() {
                            "id" => c.name_like(&mut g.id)?,
                            "name" => c.name_like(&mut g.name)?,
                            "gcnArchName" => c.name_like(&mut g.arch)?,
                            "computeMajor" => g.major = c.number_or_nan(&mut self.raw)?,
                            "computeMinor" => g.minor = c.number_or_nan(&mut self.raw)?,
                            _ => c.skip()?,
                        }
                        if !c.more(b'}')? {
                            break;
                        }
                    }
                }
                self.trace.gpus.push(g);
            } else {
                c.skip()?;
            }
            if !c.more(b']')? {
                return Ok(());
            }
        }
    }
}
