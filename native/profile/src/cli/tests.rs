//! Tests of cli.rs. The expected bytes of `cases` were printed by the TypeScript profileMain itself (node, with
//! its analysis replaced by these summaries), so they pin this port to the node CLI's output.

use super::*;
use crate::view::{OpRow, PlaneSummary, ProfileOverview, StepBreakdown};

mod op_table;

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn parses_as_node_parse_args() {
    let ok = |a: &[&str], json: bool, top: Option<&str>, pos: &[&str]| {
        let want = ProfileArgs { json, top: top.map(str::to_owned), positionals: argv(pos) };
        assert_eq!(parse_args(&argv(a)), Some(want), "{a:?}");
    };
    ok(&["a"], false, None, &["a"]);
    ok(&["--json", "a"], true, None, &["a"]);
    ok(&["--top", "5", "a"], false, Some("5"), &["a"]);
    ok(&["--top=5", "a"], false, Some("5"), &["a"]);
    ok(&["--top", "-"], false, Some("-"), &[]);
    ok(&["--top=-5"], false, Some("-5"), &[]);
    ok(&["--top="], false, Some(""), &[]);
    ok(&["--top", ""], false, Some(""), &[]);
    ok(&["-"], false, None, &["-"]);
    ok(&[""], false, None, &[""]);
    ok(&["--", "--json"], false, None, &["--json"]);
    ok(&["a", "--", "-x", "--"], false, None, &["a", "-x", "--"]);
    ok(&["--top", "5", "--top", "6"], false, Some("6"), &[]);
    ok(&["--json", "--json"], true, None, &[]);
    ok(&["--top=a=b"], false, Some("a=b"), &[]);
    ok(&["--top", "a", "b", "--json"], true, Some("a"), &["a", "b"][1..]);
    ok(&["é", "--json"], true, None, &["é"]);
    for bad in [
        &["--top"][..],
        &["--top", "-5"],
        &["--top", "--json"],
        &["--top", "--"],
        &["--json=x"],
        &["--json="],
        &["-j"],
        &["-abc"],
        &["--help"],
        &["-h"],
        &["--topp"],
        &["--=x"],
        &["--="],
        &["---top", "5"],
        &["--TOP", "1"],
        &["--toString"],
        &["-é"],
        &["--é=1"],
        &["a", "--top"],
    ] {
        assert_eq!(parse_args(&argv(bad)), None, "{bad:?}");
    }
}

#[test]
fn joins_as_node_path_join() {
    assert_eq!(path_join("caps", "a.xplane.pb"), "caps/a.xplane.pb");
    assert_eq!(path_join("./caps", "a.xplane.pb"), "caps/a.xplane.pb");
    assert_eq!(path_join("caps//", "a"), "caps/a");
    assert_eq!(path_join("rd//sub/..", "a"), "rd/a");
    assert_eq!(path_join("../x/./y/..", "a"), "../x/a");
    assert_eq!(path_join("..", "a"), "../a");
    assert_eq!(path_join("/", "a"), "/a");
    assert_eq!(path_join("//x/../..", "a"), "/a");
    assert_eq!(path_join(".", "a"), "a");
}

#[test]
fn array_indices_first() {
    assert_eq!(array_index("0"), Some(0));
    assert_eq!(array_index("4294967294"), Some(4294967294));
    assert_eq!(array_index("4294967295"), None);
    assert_eq!(array_index("01"), None);
    assert_eq!(array_index("-1"), None);
    assert_eq!(array_index("1.0"), None);
    assert_eq!(array_index(""), None);
    let s = |names: &[(&str, f64)]| ProfileSummary {
        unattributed_kernels: UnattributedKernels {
            count: 1.0,
            self_us: 0.5,
            names: names.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
        },
        ..Default::default()
    };
    let all = [s(&[("b", 1.0), ("10", 2.0)]), s(&[("2", 1.0), ("a", 3.0), ("b", 1.0)])];
    let u = sum_unattributed(all.iter());
    let names: Vec<_> = u.names.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(names, vec![("2", 1.0), ("10", 2.0), ("b", 2.0), ("a", 3.0)]);
    assert_eq!((u.count, u.self_us), (2.0, 1.0));
}

fn n(s: &str) -> f64 {
    crate::jsfmt::string_to_number(s)
}

#[allow(clippy::too_many_arguments)]
fn op(
    program: &str,
    name: &str,
    category: &str,
    count: f64,
    self_us: f64,
    total_us: f64,
    flops: f64,
    bytes: f64,
    bound_by: &'static str,
) -> OpRow {
    OpRow {
        program: program.into(),
        name: name.into(),
        category: category.into(),
        module: "jit_f".into(),
        count,
        self_us,
        total_us,
        flops,
        bytes,
        intensity: 0.0,
        bound_by,
    }
}

fn summary(file: &str) -> Result<ProfileSummary, ProfileError> {
    let name = file.rsplit('/').next().unwrap();
    Ok(match name {
        "a.xplane.pb" => op_table::summary_a(),
        "b.xplane.pb" => ProfileSummary {
            hosts: vec![],
            planes: vec![PlaneSummary { name: "/device:TPU:1".into(), lines: 3, events: 7 }],
            event_count: 7,
            span_us: n("5"),
            steps: vec![
                StepBreakdown {
                    index: 1,
                    start_us: n("2"),
                    total_us: n("11"),
                    compile_us: n("0.25"),
                    execute_us: n("7.699999999999999"),
                    transfer_us: n("0.1"),
                    host_us: n("0.3333333333333333"),
                    other_us: n("0"),
                },
                StepBreakdown {
                    index: 2,
                    start_us: n("13"),
                    total_us: n("1000.25"),
                    compile_us: n("0.25"),
                    execute_us: n("700.175"),
                    transfer_us: n("0.1"),
                    host_us: n("0.3333333333333333"),
                    other_us: n("0"),
                },
            ],
            ops: vec![
                op(
                    "0",
                    "fusion.1.0",
                    "µ-fusion",
                    n("4"),
                    n("1.5"),
                    n("2.25"),
                    n("1000000000000.5"),
                    n("3500000000"),
                    "HBM",
                ),
                op(
                    "9",
                    "new-op",
                    "other",
                    n("1"),
                    n("4000000"),
                    n("6000000"),
                    n("1000000000000.5"),
                    n("3500000000"),
                    "Compute",
                ),
            ],
            unattributed_kernels: UnattributedKernels {
                count: n("2"),
                self_us: n("0.1"),
                names: vec![("7".into(), n("1")), ("command_buffer.1".into(), n("1"))],
            },
            overview: ProfileOverview {
                hardware: "TPU",
                device_type: "TPU v6 Lite".into(),
                device_count: 2,
                host_count: 1,
                peak_tflops: n("918"),
                hbm_gbs: n("1640"),
                busy_us: n("10"),
                active_us: n("20"),
                idle_percent: n("50"),
                step_source: "host",
            },
            warnings: vec![],
        },
        "c.xplane.pb" => ProfileSummary {
            hosts: vec!["host-c".into()],
            planes: vec![
                PlaneSummary { name: "/host:CPU/0".into(), lines: 1, events: 1 },
                PlaneSummary { name: "/host:CPU/1".into(), lines: 1, events: 11 },
                PlaneSummary { name: "/host:CPU/2".into(), lines: 1, events: 21 },
                PlaneSummary { name: "/host:CPU/3".into(), lines: 1, events: 0 },
                PlaneSummary { name: "/host:CPU/4".into(), lines: 1, events: 41 },
                PlaneSummary { name: "/host:CPU/5".into(), lines: 1, events: 51 },
                PlaneSummary { name: "/host:CPU/6".into(), lines: 1, events: 61 },
                PlaneSummary { name: "/host:CPU/7".into(), lines: 1, events: 71 },
                PlaneSummary { name: "/host:CPU/8".into(), lines: 1, events: 81 },
                PlaneSummary { name: "/host:CPU/9".into(), lines: 1, events: 91 },
            ],
            event_count: 1,
            span_us: n("0"),
            steps: vec![],
            ops: vec![],
            unattributed_kernels: UnattributedKernels { count: n("0"), self_us: n("0"), names: vec![] },
            overview: ProfileOverview {
                hardware: "CPU",
                device_type: "".into(),
                device_count: 0,
                host_count: 1,
                peak_tflops: n("918"),
                hbm_gbs: n("1640"),
                busy_us: n("0"),
                active_us: n("0"),
                idle_percent: n("0"),
                step_source: "none",
            },
            warnings: vec![],
        },
        "d.xplane.pb" => ProfileSummary {
            hosts: vec![],
            planes: vec![
                PlaneSummary { name: "/host:CPU/0".into(), lines: 1, events: 1 },
                PlaneSummary { name: "/host:CPU/1".into(), lines: 1, events: 11 },
                PlaneSummary { name: "/host:CPU/2".into(), lines: 1, events: 21 },
                PlaneSummary { name: "/host:CPU/3".into(), lines: 1, events: 0 },
                PlaneSummary { name: "/host:CPU/4".into(), lines: 1, events: 41 },
                PlaneSummary { name: "/host:CPU/5".into(), lines: 1, events: 51 },
                PlaneSummary { name: "/host:CPU/6".into(), lines: 1, events: 61 },
                PlaneSummary { name: "/host:CPU/7".into(), lines: 1, events: 71 },
                PlaneSummary { name: "/host:CPU/8".into(), lines: 1, events: 81 },
                PlaneSummary { name: "/host:CPU/9".into(), lines: 1, events: 91 },
            ],
            event_count: 1,
            span_us: n("0"),
            steps: vec![],
            ops: vec![],
            unattributed_kernels: UnattributedKernels {
                count: n("4"),
                self_us: n("2000000"),
                names: vec![("fusion.9".into(), n("4"))],
            },
            overview: ProfileOverview {
                hardware: "CPU",
                device_type: "".into(),
                device_count: 0,
                host_count: 1,
                peak_tflops: n("918"),
                hbm_gbs: n("1640"),
                busy_us: n("0"),
                active_us: n("0"),
                idle_percent: n("0"),
                step_source: "none",
            },
            warnings: vec![],
        },
        "e.xplane.pb" => ProfileSummary {
            hosts: vec!["host-c".into()],
            planes: vec![
                PlaneSummary { name: "/host:CPU/0".into(), lines: 1, events: 1 },
                PlaneSummary { name: "/host:CPU/1".into(), lines: 1, events: 11 },
            ],
            event_count: 1,
            span_us: n("0"),
            steps: vec![],
            ops: vec![],
            unattributed_kernels: UnattributedKernels { count: n("0"), self_us: n("0"), names: vec![] },
            overview: ProfileOverview {
                hardware: "TPU",
                device_type: "TPU v6 Lite".into(),
                device_count: 4,
                host_count: 1,
                peak_tflops: n("918"),
                hbm_gbs: n("1640"),
                busy_us: n("1"),
                active_us: n("3"),
                idle_percent: n("38.27"),
                step_source: "device",
            },
            warnings: vec![],
        },
        _ => return Err(ProfileError::Say(format!("no summary for {file}"))),
    })
}

/// The captures' layout the cases name, under a directory of this test's own.
fn layout() -> String {
    let d = std::env::temp_dir().join(format!("tpw-cli-test-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    let files = [
        "one/a.xplane.pb",
        "two/a.xplane.pb",
        "two/sub/b.xplane.pb",
        "two/notes.txt",
        "c.xplane.pb",
        "d.xplane.pb",
        "e.xplane.pb",
        "three/c.xplane.pb",
        "three/e.xplane.pb",
    ];
    for f in files {
        let p = d.join(f);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, "x").unwrap();
    }
    fs::create_dir_all(d.join("empty")).unwrap();
    // Neither followed nor counted, as node's readdirSync tells them.
    std::os::unix::fs::symlink(d.join("one"), d.join("three/link")).unwrap();
    std::os::unix::fs::symlink(d.join("one/a.xplane.pb"), d.join("three/a.xplane.pb")).unwrap();
    d.to_str().unwrap().to_owned()
}

#[test]
fn prints_as_the_node_cli() {
    let d = layout();
    let case = |args: &[&str], code: i32, want_out: &str, want_err: &str| {
        let args: Vec<String> = args.iter().map(|a| a.replace("{D}", &d)).collect();
        let (mut out, mut err) = (String::new(), String::new());
        let answer = profile_main(&args, summary, &mut out, &mut err);
        let want = if code < 0 { Answer::ToNode } else { Answer::Exit(code) };
        assert_eq!(answer, want, "{args:?}");
        assert_eq!(out, want_out.replace("{D}", &d), "{args:?}");
        assert_eq!(err, want_err.replace("{D}", &d), "{args:?}");
    };
    case(&["{D}/one/a.xplane.pb"], 0, "4 × TPU v6 Lite on 1 host; devices busy 61.7% of their active time.\n\n3 steps (from the devices' Steps lines), average 833.75 ms.\n\nOP                                   CATEGORY             COUNT        SELF       TOTAL   BOUND\nfusion.1.0                           µ-fusion                 1      3.00 s      4.50 s       -\nconvolution.2 ünïcödé.1              convolution              2      1.50 s      2.25 s     HBM\nall-reduce.3.2                       µ-fusion                 3      1.00 s      1.50 s Compute\ncopy-start.4.3                       convolution              4   750.00 ms      1.13 s Unknown\nfusion.1.4                           µ-fusion                 5   600.00 ms   900.00 ms       -\nconvolution.2 ünïcödé.5              convolution              6   500.00 ms   750.00 ms     HBM\nall-reduce.3.6                       µ-fusion                 7   428.57 ms   642.86 ms Compute\ncopy-start.4.7                       convolution              8   375.00 ms   562.50 ms Unknown\nfusion.1.8                           µ-fusion                 9   333.33 ms   500.00 ms       -\nconvolution.2 ünïcödé.9              convolution             10   300.00 ms   450.00 ms     HBM\nall-reduce.3.10                      µ-fusion                11   272.73 ms   409.09 ms Compute\ncopy-start.4.11                      convolution             12   250.00 ms   375.00 ms Unknown\nfusion.1.12                          µ-fusion                13   230.77 ms   346.15 ms       -\nconvolution.2 ünïcödé.13             convolution             14   214.29 ms   321.43 ms     HBM\nall-reduce.3.14                      µ-fusion                15   200.00 ms   300.00 ms Compute\ncopy-start.4.15                      convolution             16   187.50 ms   281.25 ms Unknown\nfusion.1.16                          µ-fusion                17   176.47 ms   264.71 ms       -\nconvolution.2 ünïcödé.17             convolution             18   166.67 ms   250.00 ms     HBM\nall-reduce.3.18                      µ-fusion                19   157.90 ms   236.84 ms Compute\ncopy-start.4.19                      convolution             20   150.00 ms   225.00 ms Unknown\n… 6 more (--top 0 shows all).\n\n5 kernels (1.23 ms) named an HLO op that their program's HLO does not hold (command_buffer.1 ×3, 10 ×1, fusion.2 ×1, …), so, as in xprof, no op is charged for them. XLA ran them inside CUDA command buffers (CUDA graphs), and the capture names the buffer, not the ops in it. For per-op statistics, profile with XLA_FLAGS=--xla_gpu_enable_command_buffer= (each kernel then launched on its own).\n", "");
    case(&["{D}/one/a.xplane.pb", "--json", "--top", "0"], 0, "{\n \"device\": {\n  \"hardware\": \"TPU\",\n  \"device_type\": \"TPU v6 Lite\",\n  \"device_count\": 4,\n  \"host_count\": 1,\n  \"peak_tflops\": 918,\n  \"hbm_gbs\": 1640,\n  \"busy_percent\": 61.72526373681316\n },\n \"steps\": [\n  {\n   \"index\": 1,\n   \"start_us\": 0,\n   \"total_us\": 10.5,\n   \"compile_us\": 0.25,\n   \"execute_us\": 7.35,\n   \"transfer_us\": 0.1,\n   \"host_us\": 0.3333333333333333,\n   \"other_us\": 0\n  },\n  {\n   \"index\": 2,\n   \"start_us\": 10.5,\n   \"total_us\": 1234.5678,\n   \"compile_us\": 0.25,\n   \"execute_us\": 864.19746,\n   \"transfer_us\": 0.1,\n   \"host_us\": 0.3333333333333333,\n   \"other_us\": 0\n  },\n  {\n   \"index\": 3,\n   \"start_us\": 1300,\n   \"total_us\": 2500000,\n   \"compile_us\": 0.25,\n   \"execute_us\": 1750000,\n   \"transfer_us\": 0.1,\n   \"host_us\": 0.3333333333333333,\n   \"other_us\": 0\n  }\n ],\n \"ops\": [\n  {\n   \"program\": \"0\",\n   \"name\": \"fusion.1.0\",\n   \"category\": \"µ-fusion\",\n   \"count\": 1,\n   \"self_us\": 3000000,\n   \"total_us\": 4500000,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": null\n  },\n  {\n   \"program\": \"1\",\n   \"name\": \"convolution.2 ünïcödé.1\",\n   \"category\": \"convolution\",\n   \"count\": 2,\n   \"self_us\": 1500000.05,\n   \"total_us\": 2250000.075,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"HBM\"\n  },\n  {\n   \"program\": \"2\",\n   \"name\": \"all-reduce.3.2\",\n   \"category\": \"µ-fusion\",\n   \"count\": 3,\n   \"self_us\": 1000000.1,\n   \"total_us\": 1500000.15,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Compute\"\n  },\n  {\n   \"program\": \"0\",\n   \"name\": \"copy-start.4.3\",\n   \"category\": \"convolution\",\n   \"count\": 4,\n   \"self_us\": 750000.15,\n   \"total_us\": 1125000.225,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Unknown\"\n  },\n  {\n   \"program\": \"1\",\n   \"name\": \"fusion.1.4\",\n   \"category\": \"µ-fusion\",\n   \"count\": 5,\n   \"self_us\": 600000.2,\n   \"total_us\": 900000.2999999999,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": null\n  },\n  {\n   \"program\": \"2\",\n   \"name\": \"convolution.2 ünïcödé.5\",\n   \"category\": \"convolution\",\n   \"count\": 6,\n   \"self_us\": 500000.25,\n   \"total_us\": 750000.375,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"HBM\"\n  },\n  {\n   \"program\": \"0\",\n   \"name\": \"all-reduce.3.6\",\n   \"category\": \"µ-fusion\",\n   \"count\": 7,\n   \"self_us\": 428571.72857142857,\n   \"total_us\": 642857.5928571429,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Compute\"\n  },\n  {\n   \"program\": \"1\",\n   \"name\": \"copy-start.4.7\",\n   \"category\": \"convolution\",\n   \"count\": 8,\n   \"self_us\": 375000.35,\n   \"total_us\": 562500.5249999999,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Unknown\"\n  },\n  {\n   \"program\": \"2\",\n   \"name\": \"fusion.1.8\",\n   \"category\": \"µ-fusion\",\n   \"count\": 9,\n   \"self_us\": 333333.73333333334,\n   \"total_us\": 500000.6,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": null\n  },\n  {\n   \"program\": \"0\",\n   \"name\": \"convolution.2 ünïcödé.9\",\n   \"category\": \"convolution\",\n   \"count\": 10,\n   \"self_us\": 300000.45,\n   \"total_us\": 450000.67500000005,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"HBM\"\n  },\n  {\n   \"program\": \"1\",\n   \"name\": \"all-reduce.3.10\",\n   \"category\": \"µ-fusion\",\n   \"count\": 11,\n   \"self_us\": 272727.7727272727,\n   \"total_us\": 409091.65909090906,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Compute\"\n  },\n  {\n   \"program\": \"2\",\n   \"name\": \"copy-start.4.11\",\n   \"category\": \"convolution\",\n   \"count\": 12,\n   \"self_us\": 250000.55,\n   \"total_us\": 375000.82499999995,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Unknown\"\n  },\n  {\n   \"program\": \"0\",\n   \"name\": \"fusion.1.12\",\n   \"category\": \"µ-fusion\",\n   \"count\": 13,\n   \"self_us\": 230769.8307692308,\n   \"total_us\": 346154.74615384615,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": null\n  },\n  {\n   \"program\": \"1\",\n   \"name\": \"convolution.2 ünïcödé.13\",\n   \"category\": \"convolution\",\n   \"count\": 14,\n   \"self_us\": 214286.36428571428,\n   \"total_us\": 321429.54642857146,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"HBM\"\n  },\n  {\n   \"program\": \"2\",\n   \"name\": \"all-reduce.3.14\",\n   \"category\": \"µ-fusion\",\n   \"count\": 15,\n   \"self_us\": 200000.7,\n   \"total_us\": 300001.05000000005,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Compute\"\n  },\n  {\n   \"program\": \"0\",\n   \"name\": \"copy-start.4.15\",\n   \"category\": \"convolution\",\n   \"count\": 16,\n   \"self_us\": 187500.75,\n   \"total_us\": 281251.125,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Unknown\"\n  },\n  {\n   \"program\": \"1\",\n   \"name\": \"fusion.1.16\",\n   \"category\": \"µ-fusion\",\n   \"count\": 17,\n   \"self_us\": 176471.38823529411,\n   \"total_us\": 264707.08235294116,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": null\n  },\n  {\n   \"program\": \"2\",\n   \"name\": \"convolution.2 ünïcödé.17\",\n   \"category\": \"convolution\",\n   \"count\": 18,\n   \"self_us\": 166667.51666666666,\n   \"total_us\": 250001.275,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"HBM\"\n  },\n  {\n   \"program\": \"0\",\n   \"name\": \"all-reduce.3.18\",\n   \"category\": \"µ-fusion\",\n   \"count\": 19,\n   \"self_us\": 157895.63684210525,\n   \"total_us\": 236843.45526315787,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Compute\"\n  },\n  {\n   \"program\": \"1\",\n   \"name\": \"copy-start.4.19\",\n   \"category\": \"convolution\",\n   \"count\": 20,\n   \"self_us\": 150000.95,\n   \"total_us\": 225001.42500000002,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Unknown\"\n  },\n  {\n   \"program\": \"2\",\n   \"name\": \"fusion.1.20\",\n   \"category\": \"µ-fusion\",\n   \"count\": 21,\n   \"self_us\": 142858.14285714287,\n   \"total_us\": 214287.21428571432,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": null\n  },\n  {\n   \"program\": \"0\",\n   \"name\": \"convolution.2 ünïcödé.21\",\n   \"category\": \"convolution\",\n   \"count\": 22,\n   \"self_us\": 136364.68636363634,\n   \"total_us\": 204547.0295454545,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"HBM\"\n  },\n  {\n   \"program\": \"7\",\n   \"name\": \"a-very-long-operation-name-that-goes-beyond-36\",\n   \"category\": \"data formatting\",\n   \"count\": 1,\n   \"self_us\": 0.125,\n   \"total_us\": 0.1875,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"HBM\"\n  },\n  {\n   \"program\": \"7\",\n   \"name\": \"ab-long-name-with-emoji-at-unit-34-😀-and-more\",\n   \"category\": \"x\",\n   \"count\": 2,\n   \"self_us\": 0.05,\n   \"total_us\": 0.07500000000000001,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": null\n  },\n  {\n   \"program\": \"7\",\n   \"name\": \"tab\\tquote\\\"back\\\\slash\\u0001ctl\",\n   \"category\": \"y\",\n   \"count\": 3,\n   \"self_us\": 0.000001,\n   \"total_us\": 0.0000015,\n   \"flops\": 0,\n   \"bytes\": 0,\n   \"bound_by\": null\n  },\n  {\n   \"program\": \"7\",\n   \"name\": \"exactly-thirty-six-units-long-name!!\",\n   \"category\": \"z\",\n   \"count\": 1e+21,\n   \"self_us\": 1e-7,\n   \"total_us\": 1.5e-7,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": null\n  }\n ]\n}\n", "");
    case(&["{D}/one/a.xplane.pb", "--top=3"], 0, "4 × TPU v6 Lite on 1 host; devices busy 61.7% of their active time.\n\n3 steps (from the devices' Steps lines), average 833.75 ms.\n\nOP                                   CATEGORY             COUNT        SELF       TOTAL   BOUND\nfusion.1.0                           µ-fusion                 1      3.00 s      4.50 s       -\nconvolution.2 ünïcödé.1              convolution              2      1.50 s      2.25 s     HBM\nall-reduce.3.2                       µ-fusion                 3      1.00 s      1.50 s Compute\n… 23 more (--top 0 shows all).\n\n5 kernels (1.23 ms) named an HLO op that their program's HLO does not hold (command_buffer.1 ×3, 10 ×1, fusion.2 ×1, …), so, as in xprof, no op is charged for them. XLA ran them inside CUDA command buffers (CUDA graphs), and the capture names the buffer, not the ops in it. For per-op statistics, profile with XLA_FLAGS=--xla_gpu_enable_command_buffer= (each kernel then launched on its own).\n", "");
    case(&["--top", "", "{D}/one/a.xplane.pb"], 0, "4 × TPU v6 Lite on 1 host; devices busy 61.7% of their active time.\n\n3 steps (from the devices' Steps lines), average 833.75 ms.\n\nOP                                   CATEGORY             COUNT        SELF       TOTAL   BOUND\nfusion.1.0                           µ-fusion                 1      3.00 s      4.50 s       -\nconvolution.2 ünïcödé.1              convolution              2      1.50 s      2.25 s     HBM\nall-reduce.3.2                       µ-fusion                 3      1.00 s      1.50 s Compute\ncopy-start.4.3                       convolution              4   750.00 ms      1.13 s Unknown\nfusion.1.4                           µ-fusion                 5   600.00 ms   900.00 ms       -\nconvolution.2 ünïcödé.5              convolution              6   500.00 ms   750.00 ms     HBM\nall-reduce.3.6                       µ-fusion                 7   428.57 ms   642.86 ms Compute\ncopy-start.4.7                       convolution              8   375.00 ms   562.50 ms Unknown\nfusion.1.8                           µ-fusion                 9   333.33 ms   500.00 ms       -\nconvolution.2 ünïcödé.9              convolution             10   300.00 ms   450.00 ms     HBM\nall-reduce.3.10                      µ-fusion                11   272.73 ms   409.09 ms Compute\ncopy-start.4.11                      convolution             12   250.00 ms   375.00 ms Unknown\nfusion.1.12                          µ-fusion                13   230.77 ms   346.15 ms       -\nconvolution.2 ünïcödé.13             convolution             14   214.29 ms   321.43 ms     HBM\nall-reduce.3.14                      µ-fusion                15   200.00 ms   300.00 ms Compute\ncopy-start.4.15                      convolution             16   187.50 ms   281.25 ms Unknown\nfusion.1.16                          µ-fusion                17   176.47 ms   264.71 ms       -\nconvolution.2 ünïcödé.17             convolution             18   166.67 ms   250.00 ms     HBM\nall-reduce.3.18                      µ-fusion                19   157.90 ms   236.84 ms Compute\ncopy-start.4.19                      convolution             20   150.00 ms   225.00 ms Unknown\nfusion.1.20                          µ-fusion                21   142.86 ms   214.29 ms       -\nconvolution.2 ünïcödé.21             convolution             22   136.36 ms   204.55 ms     HBM\na-very-long-operation-name-that-goe… data formatting          1      0.1 µs      0.2 µs     HBM\nab-long-name-with-emoji-at-unit-34-… x                        2      0.1 µs      0.1 µs       -\ntab\tquote\"back\\slash\u{1}ctl             y                        3      0.0 µs      0.0 µs       -\nexactly-thirty-six-units-long-name!! z                    1e+21      0.0 µs      0.0 µs       -\n\n5 kernels (1.23 ms) named an HLO op that their program's HLO does not hold (command_buffer.1 ×3, 10 ×1, fusion.2 ×1, …), so, as in xprof, no op is charged for them. XLA ran them inside CUDA command buffers (CUDA graphs), and the capture names the buffer, not the ops in it. For per-op statistics, profile with XLA_FLAGS=--xla_gpu_enable_command_buffer= (each kernel then launched on its own).\n", "");
    case(&["{D}/two"], 0, "6 × TPU v6 Lite on 2 hosts; devices busy 61.6% of their active time.\n\nHOST                         STEPS   AVG STEP   IDLE\ntpu-host-0                       3  833.75 ms  38.3%\nb                                2   505.6 µs  50.0%\nSlowest host: tpu-host-0.\n\n3 steps (from the devices' Steps lines), average 833.75 ms.\n\nOP                                   CATEGORY             COUNT        SELF       TOTAL   BOUND\nnew-op                               other                    1      4.00 s      6.00 s Compute\nfusion.1.0                           µ-fusion                 5      3.00 s      4.50 s       -\nconvolution.2 ünïcödé.1              convolution              2      1.50 s      2.25 s     HBM\nall-reduce.3.2                       µ-fusion                 3      1.00 s      1.50 s Compute\ncopy-start.4.3                       convolution              4   750.00 ms      1.13 s Unknown\nfusion.1.4                           µ-fusion                 5   600.00 ms   900.00 ms       -\nconvolution.2 ünïcödé.5              convolution              6   500.00 ms   750.00 ms     HBM\nall-reduce.3.6                       µ-fusion                 7   428.57 ms   642.86 ms Compute\ncopy-start.4.7                       convolution              8   375.00 ms   562.50 ms Unknown\nfusion.1.8                           µ-fusion                 9   333.33 ms   500.00 ms       -\nconvolution.2 ünïcödé.9              convolution             10   300.00 ms   450.00 ms     HBM\nall-reduce.3.10                      µ-fusion                11   272.73 ms   409.09 ms Compute\ncopy-start.4.11                      convolution             12   250.00 ms   375.00 ms Unknown\nfusion.1.12                          µ-fusion                13   230.77 ms   346.15 ms       -\nconvolution.2 ünïcödé.13             convolution             14   214.29 ms   321.43 ms     HBM\nall-reduce.3.14                      µ-fusion                15   200.00 ms   300.00 ms Compute\ncopy-start.4.15                      convolution             16   187.50 ms   281.25 ms Unknown\nfusion.1.16                          µ-fusion                17   176.47 ms   264.71 ms       -\nconvolution.2 ünïcödé.17             convolution             18   166.67 ms   250.00 ms     HBM\nall-reduce.3.18                      µ-fusion                19   157.90 ms   236.84 ms Compute\n… 7 more (--top 0 shows all).\n\n7 kernels (1.23 ms) named an HLO op that their program's HLO does not hold (command_buffer.1 ×4, 7 ×1, 10 ×1, …), so, as in xprof, no op is charged for them. XLA ran them inside CUDA command buffers (CUDA graphs), and the capture names the buffer, not the ops in it. For per-op statistics, profile with XLA_FLAGS=--xla_gpu_enable_command_buffer= (each kernel then launched on its own).\n", "");
    case(&["{D}/two//", "--json", "--top", "2"], 0, "{\n \"device\": {\n  \"hardware\": \"TPU\",\n  \"device_type\": \"TPU v6 Lite\",\n  \"device_count\": 6,\n  \"host_count\": 2,\n  \"peak_tflops\": 918,\n  \"hbm_gbs\": 1640,\n  \"busy_percent\": 61.60917776347706\n },\n \"steps\": [\n  {\n   \"index\": 1,\n   \"start_us\": 2,\n   \"total_us\": 11,\n   \"compile_us\": 0.25,\n   \"execute_us\": 7.699999999999999,\n   \"transfer_us\": 0.1,\n   \"host_us\": 0.3333333333333333,\n   \"other_us\": 0\n  },\n  {\n   \"index\": 2,\n   \"start_us\": 10.5,\n   \"total_us\": 1234.5678,\n   \"compile_us\": 0.25,\n   \"execute_us\": 864.19746,\n   \"transfer_us\": 0.1,\n   \"host_us\": 0.3333333333333333,\n   \"other_us\": 0\n  },\n  {\n   \"index\": 3,\n   \"start_us\": 1300,\n   \"total_us\": 2500000,\n   \"compile_us\": 0.25,\n   \"execute_us\": 1750000,\n   \"transfer_us\": 0.1,\n   \"host_us\": 0.3333333333333333,\n   \"other_us\": 0\n  }\n ],\n \"ops\": [\n  {\n   \"program\": \"9\",\n   \"name\": \"new-op\",\n   \"category\": \"other\",\n   \"count\": 1,\n   \"self_us\": 4000000,\n   \"total_us\": 6000000,\n   \"flops\": 1000000000000.5,\n   \"bytes\": 3500000000,\n   \"bound_by\": \"Compute\"\n  },\n  {\n   \"program\": \"0\",\n   \"name\": \"fusion.1.0\",\n   \"category\": \"µ-fusion\",\n   \"count\": 5,\n   \"self_us\": 3000001.5,\n   \"total_us\": 4500002.25,\n   \"flops\": 2000000000001,\n   \"bytes\": 7000000000,\n   \"bound_by\": null\n  }\n ],\n \"hosts\": [\n  {\n   \"host\": \"tpu-host-0\",\n   \"file\": \"{D}/two/a.xplane.pb\",\n   \"steps\": 3,\n   \"avg_step_us\": 833748.3559333333,\n   \"idle_percent\": 38.27\n  },\n  {\n   \"host\": \"b\",\n   \"file\": \"{D}/two/sub/b.xplane.pb\",\n   \"steps\": 2,\n   \"avg_step_us\": 505.625,\n   \"idle_percent\": 50\n  }\n ]\n}\n", "");
    case(&["{D}/two", "--top", "0x2"], 0, "6 × TPU v6 Lite on 2 hosts; devices busy 61.6% of their active time.\n\nHOST                         STEPS   AVG STEP   IDLE\ntpu-host-0                       3  833.75 ms  38.3%\nb                                2   505.6 µs  50.0%\nSlowest host: tpu-host-0.\n\n3 steps (from the devices' Steps lines), average 833.75 ms.\n\nOP                                   CATEGORY             COUNT        SELF       TOTAL   BOUND\nnew-op                               other                    1      4.00 s      6.00 s Compute\nfusion.1.0                           µ-fusion                 5      3.00 s      4.50 s       -\n… 25 more (--top 0 shows all).\n\n7 kernels (1.23 ms) named an HLO op that their program's HLO does not hold (command_buffer.1 ×4, 7 ×1, 10 ×1, …), so, as in xprof, no op is charged for them. XLA ran them inside CUDA command buffers (CUDA graphs), and the capture names the buffer, not the ops in it. For per-op statistics, profile with XLA_FLAGS=--xla_gpu_enable_command_buffer= (each kernel then launched on its own).\n", "");
    case(&["{D}/c.xplane.pb"], 0, "0 × CPU on 1 host; devices busy 0.0% of their active time.\n\nNo steps: no device has a Steps line, no step annotation (jax.profiler.StepTraceAnnotation, or a TraceMe with step_num) groups the device work, and no host dispatched XLA programs step by step (ExecuteComputation).\n\nNo XLA ops ran on a device in this capture. It holds 9 planes with events: /host:CPU/0 (1), /host:CPU/1 (11), /host:CPU/2 (21), /host:CPU/4 (41), /host:CPU/5 (51), /host:CPU/6 (61), /host:CPU/7 (71), /host:CPU/8 (81), ….\n", "");
    case(&["{D}/c.xplane.pb", "--json"], 0, "{\n \"device\": {\n  \"hardware\": \"CPU\",\n  \"device_type\": \"\",\n  \"device_count\": 0,\n  \"host_count\": 1,\n  \"peak_tflops\": 918,\n  \"hbm_gbs\": 1640,\n  \"busy_percent\": 0\n },\n \"steps\": [],\n \"ops\": []\n}\n", "");
    case(&["{D}/d.xplane.pb"], 0, "0 × CPU on 1 host; devices busy 0.0% of their active time.\n\nNo steps: no device has a Steps line, no step annotation (jax.profiler.StepTraceAnnotation, or a TraceMe with step_num) groups the device work, and no host dispatched XLA programs step by step (ExecuteComputation).\n\n4 kernels (2.00 s) named an HLO op that their program's HLO does not hold (fusion.9 ×4), so, as in xprof, no op is charged for them.\n", "");
    case(&["{D}/e.xplane.pb"], 0, "4 × TPU v6 Lite on 1 host; devices busy 33.3% of their active time.\n\nNo steps: no device has a Steps line, no step annotation (jax.profiler.StepTraceAnnotation, or a TraceMe with step_num) groups the device work, and no host dispatched XLA programs step by step (ExecuteComputation).\n\nNo XLA ops ran on a device in this capture. It holds 2 planes with events: /host:CPU/0 (1), /host:CPU/1 (11).\n", "");
    case(&["{D}/three"], 0, "4 × TPU v6 Lite on 2 hosts; devices busy 33.3% of their active time.\n\nHOST                         STEPS   AVG STEP   IDLE\nhost-c                           0          -   0.0%\nhost-c                           0          -  38.3%\n\nNo steps: no device has a Steps line, no step annotation (jax.profiler.StepTraceAnnotation, or a TraceMe with step_num) groups the device work, and no host dispatched XLA programs step by step (ExecuteComputation).\n\nNo XLA ops ran on a device in these captures. It holds 11 planes with events: /host:CPU/0 (1), /host:CPU/1 (11), /host:CPU/2 (21), /host:CPU/4 (41), /host:CPU/5 (51), /host:CPU/6 (61), /host:CPU/7 (71), /host:CPU/8 (81), ….\n", "");
    case(&["{D}/three", "--json"], 0, "{\n \"device\": {\n  \"hardware\": \"TPU\",\n  \"device_type\": \"TPU v6 Lite\",\n  \"device_count\": 4,\n  \"host_count\": 2,\n  \"peak_tflops\": 918,\n  \"hbm_gbs\": 1640,\n  \"busy_percent\": 33.333333333333336\n },\n \"steps\": [],\n \"ops\": [],\n \"hosts\": [\n  {\n   \"host\": \"host-c\",\n   \"file\": \"{D}/three/c.xplane.pb\",\n   \"steps\": 0,\n   \"avg_step_us\": 0,\n   \"idle_percent\": 0\n  },\n  {\n   \"host\": \"host-c\",\n   \"file\": \"{D}/three/e.xplane.pb\",\n   \"steps\": 0,\n   \"avg_step_us\": 0,\n   \"idle_percent\": 38.27\n  }\n ]\n}\n", "");
    case(
        &[],
        2,
        "",
        "tpw profile: missing FILE or DIR (a .xplane.pb capture, or a directory of them); see tpw profile --help\n",
    );
    case(
        &[""],
        2,
        "",
        "tpw profile: missing FILE or DIR (a .xplane.pb capture, or a directory of them); see tpw profile --help\n",
    );
    case(&["{D}/a", "b"], 2, "", "tpw profile: unexpected argument \"b\"; see tpw profile --help\n");
    case(
        &["{D}/one/a.xplane.pb", "--top", "x"],
        2,
        "",
        "tpw profile: --top must be a whole number, not \"x\"; see tpw profile --help\n",
    );
    case(
        &["{D}/one/a.xplane.pb", "--top=-1"],
        2,
        "",
        "tpw profile: --top must be a whole number, not \"-1\"; see tpw profile --help\n",
    );
    case(
        &["{D}/one/a.xplane.pb", "--top", "1.5"],
        2,
        "",
        "tpw profile: --top must be a whole number, not \"1.5\"; see tpw profile --help\n",
    );
    case(
        &["{D}/missing.xplane.pb", "--top", "x"],
        1,
        "",
        "tpw: There is no file or directory {D}/missing.xplane.pb.\n",
    );
    case(&["{D}/empty"], 1, "", "tpw: The directory {D}/empty holds no *.xplane.pb capture.\n");
    case(
        &["{D}/one/a.xplane.pb", "--top", "-"],
        2,
        "",
        "tpw profile: --top must be a whole number, not \"-\"; see tpw profile --help\n",
    );
    case(&["{D}/nope\nsecond line"], 1, "", "tpw: There is no file or directory {D}/nope\n");
    case(&["--help"], -1, "", "");
    case(&["{D}/one/a.xplane.pb", "--top", "-1"], -1, "", "");
    case(&["{D}/one/a.xplane.pb", "--json=1"], -1, "", "");
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_analysis_error_is_said_here_or_handed_to_node() {
    let (mut out, mut err) = (String::new(), String::new());
    let said = |f: &str| -> Result<ProfileSummary, ProfileError> {
        Err(ProfileError::Say(format!("{f}: the profile file is empty\nmore")))
    };
    let answer = profile_main(&argv(&["Cargo.toml"]), said, &mut out, &mut err);
    assert_eq!(answer, Answer::Exit(1));
    assert_eq!((out.as_str(), err.as_str()), ("", "tpw: Cargo.toml: the profile file is empty\n"));
    err.clear();
    let handed = |_: &str| -> Result<ProfileSummary, ProfileError> { Err(ProfileError::HandOff) };
    let answer = profile_main(&argv(&["Cargo.toml"]), handed, &mut out, &mut err);
    assert_eq!(answer, Answer::AnalysisFailed("tpw: Cargo.toml: the capture could not be read, or is corrupt".into()));
    assert_eq!((out.as_str(), err.as_str()), ("", ""));
}
