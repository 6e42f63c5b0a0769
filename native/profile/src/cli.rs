//! `tpw profile FILE|DIR [--json] [--top N]`: a port of extension/src/cli/profile-main.ts and profile-command.ts,
//! with protocol/profile-notes.ts. The output must be the node CLI's, byte for byte; whatever this executable
//! does not take (--help, a bad flag, an unreadable directory, a capture it cannot read) goes to node, which
//! answers it as the full CLI does.

use crate::analyze::ProfileError;
use crate::hosts::{combine_hosts, HostProfile};
use crate::jsfmt::{
    cmp_utf16, is_integer, num_to_string, string_to_number, stringify, to_fixed, utf16_len, utf16_prefix, Json,
};
use crate::view::{ProfileSummary, UnattributedKernels};
use std::collections::HashMap;
use std::fs;
use std::path::Path;

mod args;
#[cfg(test)]
mod tests;

pub use args::{parse_args, ProfileArgs};

/// How an invocation ended.
#[derive(Debug, PartialEq)]
pub enum Answer {
    /// Its output is in `out` / `err`; the process exits with this status.
    Exit(i32),
    /// Not for this executable: the node CLI answers the whole invocation.
    ToNode,
    /// A capture could not be analyzed: node answers the whole invocation with its own message; where there is
    /// no node, this line (`tpw: …`) goes to stderr and the status is 1.
    AnalysisFailed(String),
}

enum Fail {
    Usage(String),
    Tpw(String),
    ToNode,
    Analysis(String),
}

/// profileMain: the command on argv with `analyze` for the analysis; lines go to `out` / `err`.
pub fn profile_main<F>(argv: &[String], analyze: F, out: &mut String, err: &mut String) -> Answer
where
    F: FnMut(&str) -> Result<ProfileSummary, ProfileError>,
{
    let Some(args) = parse_args(argv) else {
        return Answer::ToNode;
    };
    match profile_command(&args, analyze, out) {
        Ok(()) => Answer::Exit(0),
        Err(Fail::Usage(m)) => {
            err.push_str(&format!("tpw profile: {m}; see tpw profile --help\n"));
            Answer::Exit(2)
        }
        Err(Fail::Tpw(m)) => {
            err.push_str(&format!("tpw: {}\n", describe(&m, "TpwError")));
            Answer::Exit(1)
        }
        Err(Fail::ToNode) => Answer::ToNode,
        Err(Fail::Analysis(m)) => Answer::AnalysisFailed(format!("tpw: {}", describe(&m, "TpwError"))),
    }
}

/// describeError: an error's first line, or its name when that is empty.
fn describe<'a>(message: &'a str, name: &'a str) -> &'a str {
    match message.split('\n').next() {
        Some(l) if !l.is_empty() => l,
        _ => name,
    }
}

/// `path.join(dir, name)` (POSIX) for a non-empty dir and a file name: '.' and '..' resolved by text (not by
/// the file system), slashes collapsed.
fn path_join(a: &str, b: &str) -> String {
    let p = format!("{a}/{b}");
    let absolute = p.starts_with('/');
    let mut segs: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if segs.last().is_some_and(|s| *s != "..") {
                    segs.pop();
                } else if !absolute {
                    segs.push("..");
                }
            }
            s => segs.push(s),
        }
    }
    let body = segs.join("/");
    if absolute {
        format!("/{body}")
    } else if body.is_empty() {
        ".".to_owned()
    } else {
        body
    }
}

/// The captures named by `target`: the file itself, or every *.xplane.pb under the directory (regular files
/// only: symbolic links are neither followed nor counted, as readdirSync's Dirents tell), sorted as JS sorts.
fn captures_of(target: &str) -> Result<Vec<String>, Fail> {
    let Ok(meta) = fs::metadata(target) else {
        return Err(Fail::Tpw(format!("There is no file or directory {target}.")));
    };
    if !meta.is_dir() {
        return Ok(vec![target.to_owned()]);
    }
    let mut found = Vec::new();
    walk(Path::new(target), target, &mut found)?;
    found.sort_by(|a, b| cmp_utf16(a, b));
    if found.is_empty() {
        return Err(Fail::Tpw(format!("The directory {target} holds no *.xplane.pb capture.")));
    }
    Ok(found)
}

/// `parent` names `dir` as node's Dirent.parentPath would; a directory that cannot be read, or a name that is not
/// UTF-8 (node would report or mangle it), sends the invocation to node.
fn walk(dir: &Path, parent: &str, found: &mut Vec<String>) -> Result<(), Fail> {
    let entries = fs::read_dir(dir).map_err(|_| Fail::ToNode)?;
    for e in entries {
        let e = e.map_err(|_| Fail::ToNode)?;
        let ty = e.file_type().map_err(|_| Fail::ToNode)?;
        let name = e.file_name();
        let name = name.to_str().ok_or(Fail::ToNode)?;
        if ty.is_dir() {
            walk(&e.path(), &path_join(parent, name), found)?;
        } else if ty.is_file() && name.ends_with(".xplane.pb") {
            found.push(path_join(parent, name));
        }
    }
    Ok(())
}

fn us(x: f64) -> String {
    if x >= 1e6 {
        format!("{} s", to_fixed(x / 1e6, 2))
    } else if x >= 1e3 {
        format!("{} ms", to_fixed(x / 1e3, 2))
    } else {
        format!("{} µs", to_fixed(x, 1))
    }
}

/// pad / lpad to n UTF-16 code units, as JS's `length` counts.
fn pad(s: &str, n: usize) -> String {
    let l = utf16_len(s);
    if l >= n {
        s.to_owned()
    } else {
        format!("{s}{}", " ".repeat(n - l))
    }
}

fn lpad(s: &str, n: usize) -> String {
    let l = utf16_len(s);
    if l >= n {
        s.to_owned()
    } else {
        format!("{}{s}", " ".repeat(n - l))
    }
}

fn line(out: &mut String, s: &str) {
    out.push_str(s);
    out.push('\n');
}

fn profile_command<F>(args: &ProfileArgs, mut analyze: F, out: &mut String) -> Result<(), Fail>
where
    F: FnMut(&str) -> Result<ProfileSummary, ProfileError>,
{
    if args.positionals.len() > 1 {
        return Err(Fail::Usage(format!("unexpected argument \"{}\"", args.positionals[1])));
    }
    let target = match args.positionals.first() {
        Some(t) if !t.is_empty() => t,
        _ => return Err(Fail::Usage("missing FILE or DIR (a .xplane.pb capture, or a directory of them)".into())),
    };
    let files = captures_of(target)?;
    let top = args.top.as_deref().map_or(20.0, string_to_number);
    if !is_integer(top) || top < 0.0 {
        let raw = args.top.as_deref().unwrap_or("undefined");
        return Err(Fail::Usage(format!("--top must be a whole number, not \"{raw}\"")));
    }
    let mut hosts = Vec::with_capacity(files.len());
    for file in files {
        match analyze(&file) {
            Ok(summary) => hosts.push(HostProfile { file, summary }),
            // The node CLI's words (a TpwError naming the file), said here.
            Err(ProfileError::Say(m)) => return Err(Fail::Tpw(m)),
            // Node says what is wrong (an fs error's text, or where a plane is corrupt).
            Err(ProfileError::HandOff) => {
                return Err(Fail::Analysis(format!("{file}: the capture could not be read, or is corrupt")))
            }
        }
    }
    let all = combine_hosts(&hosts);
    // top is a whole number ≥ 0 here (-0 included, which shows all as 0 does); `as` saturates.
    let shown = if top == 0.0 { all.ops.len() } else { (top as usize).min(all.ops.len()) };
    let ops = &all.ops[..shown];
    if args.json {
        let d = &all.device;
        let device = Json::Obj(vec![
            ("hardware", Json::Str(d.hardware)),
            ("device_type", Json::Str(&d.device_type)),
            ("device_count", Json::Num(d.device_count as f64)),
            ("host_count", Json::Num(d.host_count as f64)),
            ("peak_tflops", Json::Num(d.peak_tflops)),
            ("hbm_gbs", Json::Num(d.hbm_gbs)),
            ("busy_percent", Json::Num(d.busy_percent)),
        ]);
        let steps = all
            .steps
            .iter()
            .map(|s| {
                Json::Obj(vec![
                    ("index", Json::Num(s.index as f64)),
                    ("start_us", Json::Num(s.start_us)),
                    ("total_us", Json::Num(s.total_us)),
                    ("compile_us", Json::Num(s.compile_us)),
                    ("execute_us", Json::Num(s.execute_us)),
                    ("transfer_us", Json::Num(s.transfer_us)),
                    ("host_us", Json::Num(s.host_us)),
                    ("other_us", Json::Num(s.other_us)),
                ])
            })
            .collect();
        let op_rows = ops
            .iter()
            .map(|o| {
                Json::Obj(vec![
                    ("program", Json::Str(&o.program)),
                    ("name", Json::Str(&o.name)),
                    ("category", Json::Str(&o.category)),
                    ("count", Json::Num(o.count)),
                    ("self_us", Json::Num(o.self_us)),
                    ("total_us", Json::Num(o.total_us)),
                    ("flops", Json::Num(o.flops)),
                    ("bytes", Json::Num(o.bytes)),
                    ("bound_by", if o.bound_by.is_empty() { Json::Null } else { Json::Str(o.bound_by) }),
                ])
            })
            .collect();
        let mut fields = vec![("device", device), ("steps", Json::Arr(steps)), ("ops", Json::Arr(op_rows))];
        if hosts.len() > 1 {
            let rows = all
                .hosts
                .iter()
                .map(|h| {
                    Json::Obj(vec![
                        ("host", Json::Str(&h.host)),
                        ("file", Json::Str(&h.file)),
                        ("steps", Json::Num(h.steps as f64)),
                        ("avg_step_us", Json::Num(h.avg_step_us)),
                        ("idle_percent", Json::Num(h.idle_percent)),
                    ])
                })
                .collect();
            fields.push(("hosts", Json::Arr(rows)));
        }
        line(out, &stringify(&Json::Obj(fields), 1));
        return Ok(());
    }
    let d = &all.device;
    line(
        out,
        &format!(
            "{} × {} on {} host{}; devices busy {}% of their active time.",
            d.device_count,
            if d.device_type.is_empty() { d.hardware } else { &d.device_type },
            d.host_count,
            if d.host_count == 1 { "" } else { "s" },
            to_fixed(d.busy_percent, 1),
        ),
    );
    if hosts.len() > 1 {
        line(out, "");
        line(out, &format!("{} {} {} {}", pad("HOST", 28), lpad("STEPS", 5), lpad("AVG STEP", 10), lpad("IDLE", 6)));
        for h in &all.hosts {
            // `h.avg_step_us ? …`: 0 and NaN read as none.
            let avg = if h.avg_step_us != 0.0 && !h.avg_step_us.is_nan() { us(h.avg_step_us) } else { "-".to_owned() };
            line(
                out,
                &format!(
                    "{} {} {} {}",
                    pad(&h.host, 28),
                    lpad(&h.steps.to_string(), 5),
                    lpad(&avg, 10),
                    lpad(&format!("{}%", to_fixed(h.idle_percent, 1)), 6),
                ),
            );
        }
        if let Some(s) = all.slowest.as_deref().filter(|s| !s.is_empty()) {
            line(out, &format!("Slowest host: {s}."));
        }
    }
    line(out, "");
    if !all.steps.is_empty() {
        let avg = all.steps.iter().fold(0.0, |a, s| a + s.total_us) / all.steps.len() as f64;
        line(
            out,
            &format!("{} steps (from {}), average {}.", all.steps.len(), step_source_phrase(all.step_source), us(avg)),
        );
    } else {
        line(out, NO_STEPS_NOTE);
    }
    line(out, "");
    let summaries = || hosts.iter().map(|h| &h.summary);
    if ops.is_empty() {
        let planes: Vec<_> = hosts.iter().flat_map(|h| &h.summary.planes).filter(|p| p.events > 0).collect();
        let note = unattributed_note(&sum_unattributed(summaries()), us);
        if !note.is_empty() {
            line(out, &note);
        } else {
            let listed: Vec<String> = planes.iter().take(8).map(|p| format!("{} ({})", p.name, p.events)).collect();
            line(
                out,
                &format!(
                    "No XLA ops ran on a device in {}. It holds {} planes with events: {}{}.",
                    if hosts.len() == 1 { "this capture" } else { "these captures" },
                    planes.len(),
                    listed.join(", "),
                    if planes.len() > 8 { ", …" } else { "" },
                ),
            );
        }
        return Ok(());
    }
    line(
        out,
        &format!(
            "{} {} {} {} {} {}",
            pad("OP", 36),
            pad("CATEGORY", 18),
            lpad("COUNT", 7),
            lpad("SELF", 11),
            lpad("TOTAL", 11),
            lpad("BOUND", 7),
        ),
    );
    for o in ops {
        let name = if utf16_len(&o.name) > 36 { format!("{}…", utf16_prefix(&o.name, 35)) } else { o.name.clone() };
        line(
            out,
            &format!(
                "{} {} {} {} {} {}",
                pad(&name, 36),
                pad(&o.category, 18),
                lpad(&num_to_string(o.count), 7),
                lpad(&us(o.self_us), 11),
                lpad(&us(o.total_us), 11),
                lpad(if o.bound_by.is_empty() { "-" } else { o.bound_by }, 7),
            ),
        );
    }
    if ops.len() < all.ops.len() {
        line(out, &format!("… {} more (--top 0 shows all).", all.ops.len() - ops.len()));
    }
    let note = unattributed_note(&sum_unattributed(summaries()), us);
    if !note.is_empty() {
        line(out, &format!("\n{note}"));
    }
    Ok(())
}

/// Where the steps came from, as a phrase ("… steps (from PHRASE)").
pub fn step_source_phrase(source: &str) -> &'static str {
    match source {
        "device" => "the devices' Steps lines",
        "annotations" => "step annotations: the device work under each, as xprof groups it",
        "host" => "the host's program dispatches",
        "none" => "nowhere",
        _ => "undefined",
    }
}

/// Why a capture has no steps: the three sources the analysis looks for, none found.
pub const NO_STEPS_NOTE: &str =
    "No steps: no device has a Steps line, no step annotation (jax.profiler.StepTraceAnnotation, or a TraceMe with \
     step_num) groups the device work, and no host dispatched XLA programs step by step (ExecuteComputation).";

/// A JS object's own keys that are array indices ("0", "17"; not "017", not ≥ 2^32 − 1) come first, ascending.
fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) || (b[0] == b'0' && b.len() > 1) || b.len() > 10 {
        return None;
    }
    let v: u64 = key.parse().ok()?;
    (v < u32::MAX as u64).then_some(v as u32)
}

/// The unattributed kernels of several summaries (the hosts of one run) as one; names in the key order of the
/// JS object the TS builds (array-index keys first, ascending; the rest as first seen).
pub fn sum_unattributed<'a>(summaries: impl Iterator<Item = &'a ProfileSummary>) -> UnattributedKernels {
    let mut out = UnattributedKernels::default();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for s in summaries {
        let u = &s.unattributed_kernels;
        out.count += u.count;
        out.self_us += u.self_us;
        for (n, c) in &u.names {
            match at.get(n.as_str()) {
                Some(&i) => out.names[i].1 += c,
                None => {
                    at.insert(n, out.names.len());
                    out.names.push((n.clone(), 0.0 + c));
                }
            }
        }
    }
    out.names.sort_by_key(|(n, _)| match array_index(n) {
        Some(i) => (false, i),
        None => (true, 0),
    });
    out
}

/// What became of kernels that no op was charged for, and how to see them per op; '' when there were none.
pub fn unattributed_note(u: &UnattributedKernels, fmt_us: impl Fn(f64) -> String) -> String {
    if u.count == 0.0 || u.count.is_nan() {
        return String::new();
    }
    let mut names: Vec<&(String, f64)> = u.names.iter().collect();
    names.sort_by(|a, b| crate::jsmath::js_cmp(b.1 - a.1));
    let listed: Vec<String> = names.iter().take(3).map(|(n, c)| format!("{n} ×{}", num_to_string(*c))).collect();
    let listed = listed.join(", ") + if names.len() > 3 { ", …" } else { "" };
    let command_buffers = names.iter().any(|(n, _)| n.starts_with("command_buffer"));
    let mut s = format!(
        "{} kernels ({}) named an HLO op that their program's HLO does not hold ({listed}), so, as in xprof, no op is charged for them.",
        num_to_string(u.count),
        fmt_us(u.self_us),
    );
    if command_buffers {
        s.push_str(
            " XLA ran them inside CUDA command buffers (CUDA graphs), and the capture names the buffer, not the ops in it. \
             For per-op statistics, profile with XLA_FLAGS=--xla_gpu_enable_command_buffer= (each kernel then launched on its own).",
        );
    }
    s
}
