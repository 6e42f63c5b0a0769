//! Tests of cli.rs: argv, what the command prints for given summaries (through a Files that answers from memory,
//! or lists a real directory), and its errors.

use super::*;
use crate::output::json::Counts;
use crate::output::types::{BoundBy, OpRow, PlaneSummary, ProfileOverview, StepBreakdown, StepSource};
use std::collections::HashMap;

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn parses_as_the_full_cli() {
    let ok = |a: &[&str], json: bool, top: Option<&str>, pos: &[&str]| {
        let want = ProfileArgs { json, top: top.map(str::to_owned), positionals: argv(pos) };
        assert_eq!(parse_args(&argv(a)), Some(want), "{a:?}");
    };
    ok(&["a"], false, None, &["a"]);
    ok(&["--json", "a"], true, None, &["a"]);
    ok(&["--top", "5", "a"], false, Some("5"), &["a"]);
    ok(&["--top=5", "a"], false, Some("5"), &["a"]);
    ok(&["--", "--json"], false, None, &["--json"]);
    ok(&["--top", "5", "--top", "6"], false, Some("6"), &[]);
    for bad in [&["--top"][..], &["--top", "-5"], &["--json=x"], &["-j"], &["--help"], &["-h"], &["--topp"]] {
        assert_eq!(parse_args(&argv(bad)), None, "{bad:?}");
    }
}

fn op(program: &str, name: &str, category: &str, count: u64, self_us: f64, bound_by: BoundBy) -> OpRow {
    OpRow {
        program: program.into(),
        name: name.into(),
        category: category.into(),
        count,
        self_us,
        total_us: 1.5 * self_us,
        flops: 1e12,
        bytes: 3.5e9,
        bound_by,
        ..Default::default()
    }
}

fn step(index: usize, start_us: f64, total_us: f64) -> StepBreakdown {
    StepBreakdown {
        index,
        start_us,
        total_us,
        execute_us: 0.7 * total_us,
        other_us: 0.3 * total_us,
        ..Default::default()
    }
}

fn tpu(devices: usize, busy_us: f64, active_us: f64) -> ProfileOverview {
    ProfileOverview {
        hardware: Hardware::Tpu,
        device_type: "TPU v6 Lite".into(),
        device_count: devices,
        host_count: 1,
        peak_tflops: 918.0,
        hbm_gbs: 1640.0,
        busy_us,
        active_us,
        idle_percent: 100.0 * (1.0 - busy_us / active_us),
        step_source: StepSource::Device,
    }
}

/// A host with 25 ops (names past 36 characters, non-ASCII), 3 steps and unattributed kernels.
fn host_a() -> ProfileSummary {
    let mut ops: Vec<OpRow> = (0..24)
        .map(|k| {
            let bound = [BoundBy::None, BoundBy::Hbm, BoundBy::Compute, BoundBy::Unknown][k % 4];
            op(
                &(k % 3).to_string(),
                &format!("fusion.ünï.{k}"),
                "loop fusion",
                k as u64 + 1,
                3e6 / (k as f64 + 1.0),
                bound,
            )
        })
        .collect();
    ops.push(op("7", "a-very-long-operation-name-that-goes-beyond-36", "data formatting", 1, 0.125, BoundBy::Hbm));
    ProfileSummary {
        hosts: vec!["tpu-host-0".into()],
        planes: vec![PlaneSummary { name: "/device:TPU:0".into(), lines: 3, events: 100 }],
        steps: vec![step(1, 0.0, 10.5), step(2, 10.5, 1234.5), step(3, 1300.0, 2.5e6)],
        ops,
        unattributed_kernels: UnattributedKernels {
            count: 5,
            self_us: 1234.0,
            names: Counts(vec![("command_buffer.1".into(), 3), ("fusion.2".into(), 2)]),
        },
        overview: tpu(4, 3.0, 4.0),
        ..Default::default()
    }
}

/// A host without ops or steps: ten host planes, one of them without events.
fn host_c() -> ProfileSummary {
    ProfileSummary {
        hosts: vec!["host-c".into()],
        planes: (0..10)
            .map(|k| PlaneSummary {
                name: format!("/host:CPU/{k}"),
                lines: 1,
                events: if k == 3 { 0 } else { 10 * k + 1 },
            })
            .collect(),
        ..Default::default()
    }
}

/// XLA on CPU: steps from the host's step annotations, and the host's XLA ops.
fn host_cpu() -> ProfileSummary {
    ProfileSummary {
        hosts: vec!["vm".into()],
        steps: vec![step(1, 0.0, 2000.0), step(2, 2000.0, 4000.0)],
        ops: vec![op("1", "dot.3", "convolution", 2, 40.0, BoundBy::None)],
        overview: ProfileOverview { step_source: StepSource::Host, ..Default::default() },
        ..Default::default()
    }
}

/// Files from memory: paths to summaries, directories to their entries.
struct Memory {
    summaries: HashMap<String, ProfileSummary>,
    dirs: HashMap<String, Vec<(String, Entry)>>,
}

impl Files for Memory {
    fn kind(&self, path: &str) -> Option<Entry> {
        if self.dirs.contains_key(path.trim_end_matches('/')) {
            Some(Entry::Dir)
        } else if self.summaries.contains_key(path) {
            Some(Entry::File)
        } else {
            None
        }
    }
    fn list(&self, dir: &str) -> Result<Vec<(String, Entry)>, String> {
        self.dirs.get(dir.trim_end_matches('/')).cloned().ok_or_else(|| "permission denied".into())
    }
    fn analyze(&self, path: &str) -> Result<ProfileSummary, String> {
        self.summaries.get(path).cloned().ok_or_else(|| format!("{path}: the profile file is empty"))
    }
}

fn files() -> Memory {
    let mut b = host_a();
    b.hosts = vec![];
    b.steps = vec![step(1, 2.0, 11.0), step(2, 13.0, 1000.25)];
    b.ops = vec![
        op("9", "new-op", "other", 1, 4e6, BoundBy::Compute),
        op("0", "fusion.ünï.0", "loop fusion", 4, 1.5, BoundBy::None),
    ];
    b.overview = tpu(2, 10.0, 20.0);
    let summaries = [
        ("one/a.xplane.pb", host_a()),
        ("two/a.xplane.pb", host_a()),
        ("two/sub/b.xplane.pb", b),
        ("c.xplane.pb", host_c()),
        ("cpu.xplane.pb", host_cpu()),
    ];
    let dirs = [
        ("one", vec![("a.xplane.pb", Entry::File)]),
        (
            "two",
            vec![
                ("sub", Entry::Dir),
                ("notes.txt", Entry::File),
                ("link.xplane.pb", Entry::Other),
                ("a.xplane.pb", Entry::File),
            ],
        ),
        ("two/sub", vec![("b.xplane.pb", Entry::File)]),
        ("empty", vec![]),
        ("bad", vec![("x.xplane.pb", Entry::File)]),
    ];
    Memory {
        summaries: summaries.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        dirs: dirs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.into_iter().map(|(n, e)| (n.to_string(), e)).collect()))
            .collect(),
    }
}

fn run(args: &[&str]) -> Output {
    profile_main(&argv(args), &files()).expect("the command answers")
}

#[test]
fn one_capture_as_text() {
    let o = run(&["one/a.xplane.pb"]);
    assert_eq!((o.code, o.err.as_str()), (0, ""));
    let lines: Vec<&str> = o.out.lines().collect();
    assert_eq!(lines[0], "4 × TPU v6 Lite on 1 host; devices busy 75.0% of their active time.");
    assert_eq!(lines[2], "3 steps (from the devices' Steps lines), average 833.75 ms.");
    assert_eq!(
        lines[4],
        "OP                                   CATEGORY             COUNT        SELF       TOTAL   BOUND"
    );
    assert_eq!(
        lines[5],
        "fusion.ünï.0                         loop fusion              1      3.00 s      4.50 s       -"
    );
    assert_eq!(
        lines[6],
        "fusion.ünï.1                         loop fusion              2      1.50 s      2.25 s     HBM"
    );
    assert_eq!(lines.len(), 5 + 20 + 3);
    assert_eq!(lines[25], "… 5 more (--top 0 shows all).");
    assert!(lines[27].starts_with("5 kernels (1.23 ms) named an HLO op that their program's HLO does not hold (command_buffer.1 ×3, fusion.2 ×2), so, as in xprof"));
    let all = run(&["one/a.xplane.pb", "--top", "0"]).out;
    assert!(
        all.contains(
            "\na-very-long-operation-name-that-goe… data formatting          1      0.1 µs      0.2 µs     HBM\n"
        ),
        "{all}"
    );
}

#[test]
fn a_cpu_capture_says_whose_op_table_it_is() {
    let o = run(&["cpu.xplane.pb"]);
    let lines: Vec<&str> = o.out.lines().collect();
    assert_eq!(lines[0], "0 × CPU on 1 host; devices busy 0.0% of their active time.");
    assert_eq!(
        lines[2],
        "2 steps (from the host's step annotations (no device: XLA on CPU), as xprof groups them), average 3.00 ms."
    );
    assert_eq!(lines[4], CPU_OPS_NOTE);
    assert!(lines[5].starts_with("OP ") && lines[6].starts_with("dot.3 "), "{}", o.out);
    // Not on a TPU's table.
    assert!(!run(&["one/a.xplane.pb"]).out.contains(CPU_OPS_NOTE));
}

#[test]
fn one_capture_as_json() {
    let o = run(&["one/a.xplane.pb", "--json", "--top", "1"]);
    assert_eq!(o.code, 0);
    assert!(o.out.starts_with("{\n \"device\": {\n  \"hardware\": \"TPU\",\n  \"device_type\": \"TPU v6 Lite\",\n  \"device_count\": 4,\n  \"host_count\": 1,\n  \"peak_tflops\": 918,\n  \"hbm_gbs\": 1640,\n  \"busy_percent\": 75\n },\n \"steps\": [\n  {\n   \"index\": 1,\n   \"start_us\": 0,\n   \"total_us\": 10.5,"), "{}", o.out);
    assert!(o.out.ends_with(" \"ops\": [\n  {\n   \"program\": \"0\",\n   \"name\": \"fusion.ünï.0\",\n   \"category\": \"loop fusion\",\n   \"count\": 1,\n   \"self_us\": 3000000,\n   \"total_us\": 4500000,\n   \"flops\": 1000000000000,\n   \"bytes\": 3500000000,\n   \"bound_by\": null\n  }\n ]\n}\n"), "{}", o.out);
    assert!(!o.out.contains("\"hosts\""), "one capture: no hosts");
}

#[test]
fn a_directory_side_by_side() {
    let o = run(&["two"]);
    assert_eq!(o.code, 0, "{}", o.err);
    let lines: Vec<&str> = o.out.lines().collect();
    assert_eq!(lines[0], "6 × TPU v6 Lite on 2 hosts; devices busy 54.2% of their active time.");
    assert_eq!(
        &lines[2..6],
        [
            "HOST                         STEPS   AVG STEP   IDLE",
            "tpu-host-0                       3  833.75 ms  25.0%",
            "b                                2   505.6 µs  50.0%",
            "Slowest host: tpu-host-0."
        ]
    );
    assert_eq!(
        lines[10],
        "new-op                               other                    1      4.00 s      6.00 s Compute"
    );
    assert_eq!(
        lines[11],
        "fusion.ünï.0                         loop fusion              5      3.00 s      4.50 s       -"
    );
    let j = run(&["two/", "--json", "--top", "1"]).out;
    assert!(
        j.contains(
            "\"hosts\": [\n  {\n   \"host\": \"tpu-host-0\",\n   \"file\": \"two/a.xplane.pb\",\n   \"steps\": 3,"
        ),
        "{j}"
    );
    assert!(j.contains("\"file\": \"two/sub/b.xplane.pb\""), "{j}");
}

#[test]
fn what_a_capture_without_ops_holds() {
    let o = run(&["c.xplane.pb"]);
    assert_eq!(o.out, format!("0 × CPU on 1 host; devices busy 0.0% of their active time.\n\n{NO_STEPS_NOTE}\n\nNo XLA ops ran on a device in this capture. It holds 9 planes with events: /host:CPU/0 (1), /host:CPU/1 (11), /host:CPU/2 (21), /host:CPU/4 (41), /host:CPU/5 (51), /host:CPU/6 (61), /host:CPU/7 (71), /host:CPU/8 (81), ….\n"));
    assert_eq!(run(&["c.xplane.pb", "--json"]).out, "{\n \"device\": {\n  \"hardware\": \"CPU\",\n  \"device_type\": \"\",\n  \"device_count\": 0,\n  \"host_count\": 1,\n  \"peak_tflops\": 0,\n  \"hbm_gbs\": 0,\n  \"busy_percent\": 0\n },\n \"steps\": [],\n \"ops\": []\n}\n");
}

#[test]
fn errors_name_what_is_at_fault() {
    let err = |args: &[&str], code: i32, want: &str| {
        let o = run(args);
        assert_eq!((o.code, o.out.as_str(), o.err.as_str()), (code, "", want), "{args:?}");
    };
    let usage = |m: &str| format!("tpw profile: {m}; see tpw profile --help\n");
    err(&[], 2, &usage("missing FILE or DIR (a .xplane.pb or .pt.trace.json capture, or a directory of them)"));
    err(&["a", "b"], 2, &usage("unexpected argument \"b\""));
    for bad in ["x", "1.5", "-"] {
        err(&["one/a.xplane.pb", "--top", bad], 2, &usage(&format!("--top must be a whole number, not \"{bad}\"")));
    }
    err(&["missing.xplane.pb"], 1, "tpw: There is no file or directory missing.xplane.pb.\n");
    err(&["empty"], 1, "tpw: The directory empty holds no capture (*.xplane.pb, *.pt.trace.json).\n");
    err(&["bad"], 1, "tpw: bad/x.xplane.pb: the profile file is empty\n");
    assert_eq!(profile_main(&argv(&["--help"]), &files()), None, "--help is the full CLI's");
}

#[test]
fn a_real_directory_lists_files_not_links() {
    let d = std::env::temp_dir().join(format!("tpw-cli-list-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("w/sub")).unwrap();
    for f in ["w/b.xplane.pb", "w/sub/a.xplane.pb", "w/notes.txt"] {
        std::fs::write(d.join(f), "").unwrap();
    }
    std::os::unix::fs::symlink(d.join("w/b.xplane.pb"), d.join("w/link.xplane.pb")).unwrap();
    std::os::unix::fs::symlink(d.join("w/sub"), d.join("w/linked")).unwrap();
    let dir = d.join("w").to_string_lossy().into_owned();
    let o = profile_main(&argv(&[&dir]), &crate::native::NativeFiles).unwrap();
    // The first capture (sorted) is empty: its error names it, and the others were found beside it.
    assert_eq!(o.err, format!("tpw: {dir}/b.xplane.pb: the profile file is empty\n"));
    let mut found = vec![];
    walk(&dir, &crate::native::NativeFiles, &mut found).ok();
    found.sort();
    assert_eq!(found, vec![format!("{dir}/b.xplane.pb"), format!("{dir}/sub/a.xplane.pb")]);
    std::fs::remove_dir_all(&d).unwrap();
}
