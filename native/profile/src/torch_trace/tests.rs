//! torch.profiler's Chrome trace, on the capture the trainer wrote on CPU (test/fixtures/profiles/torch, made by
//! make-capture.py there): the op table against torch.profiler's own `key_averages()` of the same profile, the
//! steps against its `ProfilerStep*` row; the same summary read whole and through a small window (the JSON reader
//! takes tiny pieces under test, so every token is split somewhere); faults that name the byte; the export copy;
//! and `tpw profile` finding the capture in the trainer's layout.

use super::*;
use crate::analyze::{analyze_bytes, analyze_reader};
use crate::cli::profile_main;
use crate::output::types::Hardware;
use crate::source::tests::Bytes;
use crate::timeline::kept::KeptLines;
use crate::trace::export_trace;

const NAME: &str = "tiny-llama-cpu";

fn fixture(ext: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test/fixtures/profiles/torch");
    std::fs::read(dir.join(format!("{NAME}{ext}"))).unwrap()
}

/// A row of key_averages() as make-capture.py wrote it.
#[derive(Debug, Default)]
struct Expected {
    name: String,
    count: u64,
    self_us: f64,
    total_us: f64,
}

/// The rows of the expected file (json.dumps with indent=1: one field a line).
fn expected() -> Vec<Expected> {
    let text = String::from_utf8(fixture(".expected.json")).unwrap();
    let mut rows: Vec<Expected> = vec![];
    for line in text.lines().map(str::trim) {
        let field = |key: &str| line.strip_prefix(&format!("\"{key}\": ")).map(|v| v.trim_end_matches(','));
        if let Some(v) = field("name") {
            assert!(!v.contains('\\'), "no escapes in the names: {v}");
            rows.push(Expected { name: v.trim_matches('"').to_string(), ..Expected::default() });
        } else if let Some(v) = field("count") {
            rows.last_mut().unwrap().count = v.parse().unwrap();
        } else if let Some(v) = field("self_us") {
            rows.last_mut().unwrap().self_us = v.parse().unwrap();
        } else if let Some(v) = field("total_us") {
            rows.last_mut().unwrap().total_us = v.parse().unwrap();
        }
    }
    assert!(rows.len() > 100, "read the expected rows");
    rows
}

fn summary() -> ProfileSummary {
    analyze_bytes(&fixture(".pt.trace.json"), 1, &|_, _| {}).unwrap()
}

#[test]
fn op_table_is_key_averages() {
    let s = summary();
    let want = expected();
    // key_averages counts the steps' annotations as one row, `ProfilerStep*`: the steps, not an op, here.
    let ops: Vec<&Expected> = want.iter().filter(|e| e.name != "ProfilerStep*").collect();
    assert_eq!(s.ops.len(), ops.len(), "one row per name");
    for e in ops {
        let got = s.ops.iter().find(|o| o.name == e.name).unwrap_or_else(|| panic!("no row {}", e.name));
        // The trace writes µs to the ns, as key_averages counts them: equal but for float sums.
        let near = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
        assert_eq!(got.count, e.count, "{}: count", e.name);
        assert!(near(got.self_us, e.self_us), "{}: self {} vs {}", e.name, got.self_us, e.self_us);
        assert!(near(got.total_us, e.total_us), "{}: total {} vs {}", e.name, got.total_us, e.total_us);
    }
    // Sorted by self time, the largest first, as the run view shows it.
    assert!(s.ops.windows(2).all(|w| w[0].self_us >= w[1].self_us));
}

#[test]
fn steps_are_the_profilers_and_the_capture_is_a_cpus() {
    let s = summary();
    let step_row = expected().into_iter().find(|e| e.name == "ProfilerStep*").unwrap();
    assert_eq!(s.steps.len() as u64, step_row.count);
    assert_eq!(s.overview.step_source, StepSource::Profiler);
    let total: f64 = s.steps.iter().map(|x| x.total_us).sum();
    assert!((total - step_row.total_us).abs() < 1e-6 * total, "{total} vs {}", step_row.total_us);
    for (k, st) in s.steps.iter().enumerate() {
        assert_eq!(st.index, k + 1);
        // On CPU the host's ops are what executes the model (the rest is Python between them), nothing a device's.
        assert!(st.execute_us > 0.1 * st.total_us, "step {k}: {st:?}");
        assert!(st.compile_us.is_sign_positive(), "+0, not -0");
        assert_eq!((st.transfer_us, st.host_us, st.compile_us), (0.0, 0.0, 0.0));
        let parts = st.execute_us + st.other_us;
        assert!((parts - st.total_us).abs() < 1e-6 * st.total_us);
    }
    assert!(s.steps[1].start_us > s.steps[0].start_us + s.steps[0].total_us - 1e-6);
    assert_eq!(s.overview.hardware, Hardware::Cpu);
    assert_eq!((s.overview.device_count, s.overview.busy_us), (0, 0.0));
    assert_eq!(s.planes.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["/host:CPU"]);
    assert_eq!(s.notes.steps, "torch.profiler's step annotations (ProfilerStep#N)");
}

#[test]
fn read_whole_and_through_a_window_alike() {
    let buf = fixture(".pt.trace.json");
    let whole = analyze_bytes(&buf, 2, &|_, _| {}).unwrap();
    let mut lines = KeptLines::default();
    let (read, t0) = analyze_reader(&Bytes(buf.clone(), Default::default()), Some(&mut lines), 4 << 10).unwrap();
    let mut without_names = read.clone();
    without_names.timeline = whole.timeline.clone();
    assert_eq!(without_names, whole);
    assert!(t0 > 0.0, "times are the trace's own (µs since the epoch)");
    assert_eq!(lines.lines.iter().map(|l| l.start.len()).sum::<usize>(), whole.event_count, "every event drawn");
    assert!(lines.lines.iter().all(|l| l.plane == "/host:CPU"));
    // Each drawn event names a name of the timeline, and the steps' annotations are the outermost on their line.
    let names = &read.timeline.names;
    let step = lines
        .lines
        .iter()
        .flat_map(|l| l.name_id.iter().zip(&l.depth))
        .filter(|(n, _)| names[**n as usize].starts_with("ProfilerStep#"));
    assert_eq!(step.map(|(_, d)| *d).collect::<Vec<_>>(), [0, 0]);
}

/// A trace written by hand: the format's bare-array form, a pid and tid as strings, and nesting on one thread.
const SMALL: &str = r#"[
 {"ph": "M", "name": "thread_name", "pid": 7, "tid": "9", "args": {"name": "python \"main\""}},
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 7, "tid": "9", "ts": 100, "dur": 50},
 {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 7, "tid": "9", "ts": 110, "dur": 30, "args": {"x": [1, {"y": null}]}},
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": "9", "ts": 112, "dur": 20},
 {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 7, "tid": "9", "ts": 120},
 {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": 7, "tid": "9", "ts": 90, "dur": 100}
]"#;

#[test]
fn self_time_excludes_the_ops_directly_under() {
    let mut lines = KeptLines::default();
    let (s, t0) = analyze_reader(&Bytes(SMALL.into(), Default::default()), Some(&mut lines), 64).unwrap();
    assert_eq!(t0, 100.0, "the profiler's own span is not read");
    let row = |n: &str| s.ops.iter().find(|o| o.name == n).map(|o| (o.count, o.self_us, o.total_us));
    assert_eq!(row("aten::linear"), Some((1, 10.0, 30.0)));
    assert_eq!(row("aten::mm"), Some((1, 20.0, 20.0)));
    assert_eq!(s.ops.len(), 2);
    assert_eq!(s.steps.len(), 1);
    assert_eq!((s.steps[0].execute_us, s.steps[0].other_us), (30.0, 20.0));
    assert_eq!(lines.lines[0].name, "python \"main\"");
    assert_eq!(lines.lines[0].depth, [0, 1, 2]);
}

#[test]
fn faults_name_what_and_where() {
    let say = |bytes: &[u8]| analyze_bytes(bytes, 1, &|_, _| {}).unwrap_err().describe(bytes.len());
    let buf = fixture(".pt.trace.json");
    for cut in [10, 1000, buf.len() / 2, buf.len() - 3] {
        let m = say(&buf[..cut]);
        assert!(m.starts_with("the trace is truncated: its JSON ends at byte "), "cut {cut}: {m}");
        assert!(m.contains(&format!("byte {cut} ")), "cut {cut}: {m}");
    }
    assert_eq!(
        say(br#"{"schemaVersion": 1}"#),
        "not a Chrome trace: the JSON object has no \"traceEvents\" (torch.profiler writes one)"
    );
    assert_eq!(say(br#"{"traceEvents": []} x"#), "not valid Chrome trace JSON: more after the trace's end at byte 20");
    assert_eq!(say(br#"{"traceEvents": [] ]"#), "not valid Chrome trace JSON: expected ',' or '}' at byte 19");
    assert_eq!(say(br#"{"traceEvents": [{"ph": tru}]}"#), "not valid Chrome trace JSON: expected a value at byte 24");
    assert_eq!(
        say(&[0x1f, 0x8b, 8, 0, 0]),
        "it is gzip-compressed (a .json.gz trace): decompress it first (gunzip -k FILE)"
    );
}

struct Collect(Vec<u8>);
impl Out for Collect {
    fn write(&mut self, b: &[u8]) -> Result<(), String> {
        self.0.extend_from_slice(b);
        Ok(())
    }
}

#[test]
fn export_copies_the_trace_as_it_is() {
    let buf = fixture(".pt.trace.json");
    let mut out = Collect(vec![]);
    let n = export_trace(&Bytes(buf.clone(), Default::default()), &mut out).unwrap();
    assert!(out.0 == buf, "byte for byte");
    assert_eq!(n, summary().event_count);
}

#[test]
fn tpw_profile_finds_the_capture_in_the_trainers_layout() {
    let d = std::env::temp_dir().join(format!("tpw-torch-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let run = d.join("profile/plugins/profile/2026_11_29_00_02_49");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("vm_0.pt.trace.json"), fixture(".pt.trace.json")).unwrap();
    std::fs::write(run.join("vm_1.pt.trace.json"), fixture(".pt.trace.json")).unwrap();
    std::fs::write(run.join("vm_2.pt.trace.json.tmp"), "").unwrap();
    let dir = d.join("profile").to_string_lossy().into_owned();
    let run_dir = run.to_string_lossy().into_owned();
    let o = profile_main(&[dir, "--json".into()], &crate::native::NativeFiles).unwrap();
    assert_eq!((o.code, o.err.as_str()), (0, ""));
    // Both ranks' captures, named from their files, each with its two steps; the .tmp beside them is not one.
    let hosts = &o.out[o.out.find("\"hosts\"").unwrap()..];
    for h in ["vm_0", "vm_1"] {
        assert!(
            hosts.contains(&format!(
                "\"host\": \"{h}\",\n   \"file\": \"{run_dir}/{h}.pt.trace.json\",\n   \"steps\": 2,"
            )),
            "{hosts}"
        );
    }
    assert!(!o.out.contains("vm_2"));
    assert!(o.out.contains("\"host_count\": 2,"));
    std::fs::remove_dir_all(&d).unwrap();
}
