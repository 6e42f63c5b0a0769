//! `tpw profile FILE|DIR [--json] [--top N]`: a capture's overview, steps and op table in a terminal or CI. A
//! directory is every capture under it (`*.xplane.pb`, torch.profiler's `*.pt.trace.json`) (one per host of a run, or the sessions of a log directory): each
//! host's overview and step time side by side, the slowest named, and the op table of all of them combined. The
//! native executable and the WebAssembly build (`node bin/tpw.js profile`) run this same code; they differ only
//! in how they reach files (Files).

use crate::hosts::{combine_hosts, Combined, HostProfile};
use crate::output::json::{literals, record, to_json, Json, ToJson};
use crate::output::notes::{us, NO_STEPS_NOTE};
use crate::output::types::{Hardware, ProfileSummary, UnattributedKernels};

mod args;
#[cfg(test)]
mod tests;

pub use args::{parse_args, ProfileArgs};

/// What is at a path, without following a symbolic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    File,
    Dir,
    Other,
}

/// How the command reaches files: the native build through the OS, the WebAssembly build through its host.
pub trait Files {
    /// What `path` is (following a link given as the target itself); None where nothing is.
    fn kind(&self, path: &str) -> Option<Entry>;
    /// A directory's entries: name and kind; Err: why it cannot be read, in words.
    fn list(&self, dir: &str) -> Result<Vec<(String, Entry)>, String>;
    /// The capture's summary (no timeline), or the sentence that says why not, naming the file.
    fn analyze(&self, path: &str) -> Result<ProfileSummary, String>;
}

/// What an invocation printed, and its exit status.
#[derive(Debug, PartialEq)]
pub struct Output {
    pub code: i32,
    pub out: String,
    pub err: String,
}

/// `tpw profile ARGV`; None where the argv is not the command's to answer (--help, an unknown flag): the full CLI
/// answers those, with the help and usage words of its command table.
pub fn profile_main(argv: &[String], files: &dyn Files) -> Option<Output> {
    let args = parse_args(argv)?;
    let mut out = String::new();
    Some(match profile_command(&args, files, &mut out) {
        Ok(()) => Output { code: 0, out, err: String::new() },
        Err(Fail::Usage(m)) => Output { code: 2, out, err: format!("tpw profile: {m}; see tpw profile --help\n") },
        Err(Fail::Say(m)) => Output { code: 1, out, err: format!("tpw: {m}\n") },
    })
}

enum Fail {
    Usage(String),
    Say(String),
}

/// `dir/name`.
fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The captures named by `target`: the file itself, or every capture under the directory (regular files only:
/// symbolic links are neither followed nor counted), sorted.
fn captures_of(target: &str, files: &dyn Files) -> Result<Vec<String>, Fail> {
    match files.kind(target) {
        None => Err(Fail::Say(format!("There is no file or directory {target}."))),
        Some(Entry::Dir) => {
            let mut found = Vec::new();
            walk(target, files, &mut found)?;
            found.sort();
            if found.is_empty() {
                return Err(Fail::Say(format!(
                    "The directory {target} holds no capture (*.xplane.pb, *.pt.trace.json)."
                )));
            }
            Ok(found)
        }
        Some(_) => Ok(vec![target.to_owned()]),
    }
}

/// A capture's file name: an XSpace, or torch.profiler's Chrome trace as TensorBoard's layout names it.
pub fn is_capture_name(name: &str) -> bool {
    name.ends_with(".xplane.pb") || name.ends_with(".pt.trace.json")
}

fn walk(dir: &str, files: &dyn Files, found: &mut Vec<String>) -> Result<(), Fail> {
    let entries = files.list(dir).map_err(|why| Fail::Say(format!("Cannot read the directory {dir}: {why}.")))?;
    for (name, kind) in entries {
        match kind {
            Entry::Dir => walk(&join(dir, &name), files, found)?,
            Entry::File if is_capture_name(&name) => found.push(join(dir, &name)),
            _ => {}
        }
    }
    Ok(())
}

/// Pads to n characters.
fn pad(s: &str, n: usize) -> String {
    format!("{s}{}", " ".repeat(n.saturating_sub(s.chars().count())))
}

fn lpad(s: &str, n: usize) -> String {
    format!("{}{s}", " ".repeat(n.saturating_sub(s.chars().count())))
}

fn profile_command(args: &ProfileArgs, files: &dyn Files, out: &mut String) -> Result<(), Fail> {
    if args.positionals.len() > 1 {
        return Err(Fail::Usage(format!("unexpected argument \"{}\"", args.positionals[1])));
    }
    let target = match args.positionals.first() {
        Some(t) if !t.is_empty() => t,
        _ => {
            return Err(Fail::Usage(
                "missing FILE or DIR (a .xplane.pb or .pt.trace.json capture, or a directory of them)".into(),
            ))
        }
    };
    let top = match &args.top {
        None => 20,
        Some(t) => {
            t.trim().parse::<usize>().map_err(|_| Fail::Usage(format!("--top must be a whole number, not \"{t}\"")))?
        }
    };
    let mut hosts = vec![];
    for file in captures_of(target, files)? {
        let summary = files.analyze(&file).map_err(Fail::Say)?;
        hosts.push(HostProfile { file, summary });
    }
    let all = combine_hosts(&hosts);
    let shown = if top == 0 { all.ops.len() } else { top.min(all.ops.len()) };
    if args.json {
        out.push_str(&to_json(&JsonOutput { all: &all, shown, several: hosts.len() > 1 }, 1));
        out.push('\n');
        return Ok(());
    }
    text(&all, &hosts, shown, out);
    Ok(())
}

literals! {
    /// What bounds an op, in `--json` (null where there is no roofline).
    Bound { Compute = "Compute", Hbm = "HBM", Unknown = "Unknown" }
}

record! {
    /// `--json`'s device.
    JsonDevice {
        hardware: Hardware = "hardware",
        device_type: String = "device_type",
        device_count: usize = "device_count",
        host_count: usize = "host_count",
        peak_tflops: f64 = "peak_tflops",
        hbm_gbs: f64 = "hbm_gbs",
        busy_percent: f64 = "busy_percent",
    }
}

record! {
    /// `--json`'s op.
    JsonOp {
        program: String = "program",
        name: String = "name",
        category: String = "category",
        count: u64 = "count",
        self_us: f64 = "self_us",
        total_us: f64 = "total_us",
        flops: f64 = "flops",
        bytes: f64 = "bytes",
        bound_by: Option<Bound> = "bound_by",
    }
}

record! {
    /// `--json`'s host (with a directory of captures).
    JsonHost {
        host: String = "host",
        file: String = "file",
        steps: usize = "steps",
        avg_step_us: f64 = "avg_step_us",
        idle_percent: f64 = "idle_percent",
    }
}

/// `tpw profile --json`: {device, steps, ops} and, for a directory of captures, hosts.
struct JsonOutput<'a> {
    all: &'a Combined,
    shown: usize,
    several: bool,
}

impl ToJson for JsonOutput<'_> {
    fn write(&self, j: &mut Json) {
        let d = &self.all.device;
        j.begin('{');
        j.field(
            "device",
            &JsonDevice {
                hardware: d.hardware,
                device_type: d.device_type.clone(),
                device_count: d.device_count,
                host_count: d.host_count,
                peak_tflops: d.peak_tflops,
                hbm_gbs: d.hbm_gbs,
                busy_percent: d.busy_percent,
            },
        );
        // The run view's steps, under snake_case names.
        j.key("steps");
        j.begin('[');
        for s in &self.all.steps {
            j.item();
            s.write_alt(j);
        }
        j.end(']');
        let ops: Vec<JsonOp> = (self.all.ops[..self.shown].iter())
            .map(|o| JsonOp {
                program: o.program.clone(),
                name: o.name.clone(),
                category: o.category.clone(),
                count: o.count,
                self_us: o.self_us,
                total_us: o.total_us,
                flops: o.flops,
                bytes: o.bytes,
                bound_by: match o.bound_by.as_str() {
                    "Compute" => Some(Bound::Compute),
                    "HBM" => Some(Bound::Hbm),
                    "Unknown" => Some(Bound::Unknown),
                    _ => None,
                },
            })
            .collect();
        j.field("ops", &ops);
        if self.several {
            let hosts: Vec<JsonHost> = (self.all.hosts.iter())
                .map(|h| JsonHost {
                    host: h.host.clone(),
                    file: h.location.clone(),
                    steps: h.steps,
                    avg_step_us: h.avg_step_us,
                    idle_percent: h.idle_percent,
                })
                .collect();
            j.field("hosts", &hosts);
        }
        j.end('}');
    }
}

/// Above the op table of a capture with no TPU or GPU: whose table it is.
pub const CPU_OPS_NOTE: &str =
    "No TPU or GPU: the XLA ops that ran on the host's CPU, by our count (xprof's hlo_stats \
                                lists no op on CPU).";

fn line(out: &mut String, s: &str) {
    out.push_str(s);
    out.push('\n');
}

fn text(all: &Combined, hosts: &[HostProfile], shown: usize, out: &mut String) {
    let d = &all.device;
    let s = if d.host_count == 1 { "" } else { "s" };
    let what = if d.device_type.is_empty() { d.hardware.as_str() } else { &d.device_type };
    line(
        out,
        &format!(
            "{} × {what} on {} host{s}; devices busy {:.1}% of their active time.",
            d.device_count, d.host_count, d.busy_percent
        ),
    );
    if hosts.len() > 1 {
        line(out, "");
        line(out, &format!("{} {} {} {}", pad("HOST", 28), lpad("STEPS", 5), lpad("AVG STEP", 10), lpad("IDLE", 6)));
        for h in &all.hosts {
            let avg = if h.avg_step_us > 0.0 { us(h.avg_step_us) } else { "-".to_owned() };
            let idle = format!("{:.1}%", h.idle_percent);
            line(
                out,
                &format!(
                    "{} {} {} {}",
                    pad(&h.host, 28),
                    lpad(&h.steps.to_string(), 5),
                    lpad(&avg, 10),
                    lpad(&idle, 6)
                ),
            );
        }
        if let Some(s) = &all.slowest {
            line(out, &format!("Slowest host: {s}."));
        }
    }
    line(out, "");
    if all.steps.is_empty() {
        line(out, NO_STEPS_NOTE);
    } else {
        let avg = all.steps.iter().map(|s| s.total_us).sum::<f64>() / all.steps.len() as f64;
        let from = crate::output::notes::steps_note(all.step_source);
        line(out, &format!("{} steps (from {from}), average {}.", all.steps.len(), us(avg)));
    }
    line(out, "");
    let note = crate::output::notes::unattributed_note(&sum_unattributed(hosts));
    if shown == 0 {
        if !note.is_empty() {
            line(out, &note);
        } else {
            let planes: Vec<_> = hosts.iter().flat_map(|h| &h.summary.planes).filter(|p| p.events > 0).collect();
            let listed: Vec<String> = planes.iter().take(8).map(|p| format!("{} ({})", p.name, p.events)).collect();
            let these = if hosts.len() == 1 { "this capture" } else { "these captures" };
            let more = if planes.len() > 8 { ", …" } else { "" };
            let n = planes.len();
            line(
                out,
                &format!(
                    "No XLA ops ran on a device in {these}. It holds {n} planes with events: {}{more}.",
                    listed.join(", ")
                ),
            );
        }
        return;
    }
    if d.hardware == Hardware::Cpu {
        line(out, CPU_OPS_NOTE);
    }
    let head =
        [pad("OP", 36), pad("CATEGORY", 18), lpad("COUNT", 7), lpad("SELF", 11), lpad("TOTAL", 11), lpad("BOUND", 7)];
    line(out, &head.join(" "));
    for o in &all.ops[..shown] {
        let name = if o.name.chars().count() > 36 {
            format!("{}…", o.name.chars().take(35).collect::<String>())
        } else {
            o.name.clone()
        };
        let bound = if o.bound_by.as_str().is_empty() { "-" } else { o.bound_by.as_str() };
        let row = [
            pad(&name, 36),
            pad(&o.category, 18),
            lpad(&o.count.to_string(), 7),
            lpad(&us(o.self_us), 11),
            lpad(&us(o.total_us), 11),
            lpad(bound, 7),
        ];
        line(out, &row.join(" "));
    }
    if shown < all.ops.len() {
        line(out, &format!("… {} more (--top 0 shows all).", all.ops.len() - shown));
    }
    if !note.is_empty() {
        line(out, &format!("\n{note}"));
    }
}

/// The unattributed kernels of several hosts' captures, as one.
fn sum_unattributed(hosts: &[HostProfile]) -> UnattributedKernels {
    let mut out = UnattributedKernels::default();
    for u in hosts.iter().map(|h| &h.summary.unattributed_kernels) {
        out.count += u.count;
        out.self_us += u.self_us;
        for (n, c) in &u.names.0 {
            out.names.add(n, *c);
        }
    }
    out
}
