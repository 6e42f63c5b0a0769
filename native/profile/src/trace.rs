//! XSpace → Chrome trace event JSON (the format Perfetto and chrome://tracing open; a capture that is one already,
//! torch.profiler's, is copied as it is), every event of every line,
//! written out in 1 MiB pieces so that a capture with millions of events never becomes one giant string. The
//! capture is decoded twice (the first pass only finds the earliest event, which times are relative to), so it is
//! never held whole either.

use crate::analyze::{chrome_trace, DECODE_WINDOW};
use crate::decode::{decode_planes, scan_xspace};
use crate::output::json::string;
use crate::source::{Fault, ReadAt, Window};
use crate::torch_trace::copy_trace;
use crate::view::{LineView, PlaneView, XSpaceVisitor};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Where the trace's bytes go.
pub trait Out {
    fn write(&mut self, b: &[u8]) -> Result<(), String>;
}

/// The earliest event start (ns) over all lines.
struct FirstEvent(f64);

impl XSpaceVisitor for FirstEvent {
    fn plane(&mut self, _: &PlaneView) {}
    fn line(&mut self, _: &PlaneView, l: &LineView) {
        for &o in &l.offset_ps[..l.count] {
            self.0 = self.0.min(l.timestamp_ns + o / 1000.0);
        }
    }
}

struct TraceWriter<'o> {
    out: &'o mut dyn Out,
    buf: String,
    t0: f64,
    first: bool,
    tid: usize,
    count: usize,
    failed: Option<String>,
}

impl TraceWriter<'_> {
    fn sep(&mut self) {
        if !self.first {
            self.buf.push_str(",\n");
        }
        self.first = false;
    }

    fn flush(&mut self) {
        if self.failed.is_none() {
            if let Err(e) = self.out.write(self.buf.as_bytes()) {
                self.failed = Some(e);
            }
        }
        self.buf.clear();
    }
}

impl XSpaceVisitor for TraceWriter<'_> {
    fn plane(&mut self, p: &PlaneView) {
        self.tid = 0;
        self.sep();
        let _ = write!(self.buf, "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":", p.index);
        string(&mut self.buf, &p.name);
        self.buf.push_str("}}");
    }

    fn line(&mut self, p: &PlaneView, l: &LineView) {
        let (pid, tid) = (p.index, self.tid);
        self.tid += 1;
        self.sep();
        let _ = write!(
            self.buf,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":"
        );
        string(&mut self.buf, if l.display_name.is_empty() { &l.name } else { &l.display_name });
        self.buf.push_str("}}");
        // Names repeat millions of times: quoted once each.
        let mut quoted: HashMap<i64, String> = HashMap::new();
        for i in 0..l.count {
            let id = l.meta_id[i];
            let name = quoted.entry(id).or_insert_with(|| {
                let mut q = String::new();
                match p.meta.get(&id) {
                    Some(info) => string(&mut q, &info.name),
                    None => string(&mut q, &format!("event#{id}")),
                }
                q
            });
            let ts = ((l.timestamp_ns - self.t0) + l.offset_ps[i] / 1000.0) / 1000.0;
            let dur = l.duration_ps[i] / 1e6;
            if !self.first {
                self.buf.push_str(",\n");
            }
            self.first = false;
            let _ = write!(
                self.buf,
                "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"name\":{name},\"ts\":{ts:.3},\"dur\":{dur:.3}}}"
            );
            self.count += 1;
            if self.buf.len() >= 1 << 20 {
                self.flush();
            }
        }
    }
}

/// Writes the capture read through `src` to `out` as Chrome trace JSON; returns the number of events.
pub fn export_trace(src: &dyn ReadAt, out: &mut dyn Out) -> Result<usize, Fault> {
    if chrome_trace(&mut Window::reading(src, 4 << 10))? {
        return copy_trace(src, out);
    }
    let layout = scan_xspace(&mut Window::reading(src, 4 << 10))?;
    let all = 0..layout.planes.len();
    let mut first = FirstEvent(f64::INFINITY);
    decode_planes(&mut Window::reading(src, DECODE_WINDOW), &layout, all.clone(), &mut first, &mut |_, _| {})?;
    let t0 = if first.0.is_finite() { first.0 } else { 0.0 };
    let mut w = TraceWriter { out, buf: String::new(), t0, first: true, tid: 0, count: 0, failed: None };
    w.buf.push_str("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    decode_planes(&mut Window::reading(src, DECODE_WINDOW), &layout, all, &mut w, &mut |_, _| {})?;
    w.buf.push_str("]}\n");
    w.flush();
    match w.failed {
        Some(e) => Err(Fault::Io(e)),
        None => Ok(w.count),
    }
}
