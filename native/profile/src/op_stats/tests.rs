//! The op table's rules on hand-built planes.
#![allow(clippy::type_complexity)]
use super::*;
use crate::hlo_categories::tests::{instruction, proto};
use crate::output::types::{BoundBy, UnattributedKernels};
use crate::view::Program;

const STRINGS: &[&str] = &[
    "fusion.1",
    "5",
    "jit_f::dot.2",
    "command_buffer_1",
    "12",
    "0",
    "add.3",
    "9",
    "jit_f",
    "custom-cat",
    "b",
    "dot.2",
];

/// A partial's sums as plain numbers, 5 per row: count, total ps, self ps, flops, bytes.
fn plain(acc: &[f64]) -> Vec<f64> {
    acc.chunks(ACC_STRIDE)
        .flat_map(|r| [r[0], exact_total(r, 1), exact_total(r, 3), exact_total(r, 5), exact_total(r, 7)])
        .collect()
}

/// Plain sums, 5 per row, as a partial keeps them (ACC_STRIDE per row).
fn exact(plain: &[f64]) -> Vec<f64> {
    let mut acc = vec![];
    for r in plain.chunks(5) {
        let mut row = [0.0; ACC_STRIDE];
        row[0] = r[0];
        for (m, &x) in r[1..].iter().enumerate() {
            add_exact(&mut row, 1 + 2 * m, x);
        }
        acc.extend_from_slice(&row);
    }
    acc
}

#[test]
fn exact_sums_do_not_depend_on_the_order_of_additions() {
    // Past 2^53 a running sum of doubles rounds at each step: these three in two orders give two answers.
    let xs = [9007199254740992.0, 1.0, 1.0];
    assert_ne!((xs[0] + xs[1]) + xs[2], xs[0] + (xs[1] + xs[2]));
    let (mut a, mut b) = ([0.0; 2], [0.0; 2]);
    for &x in &xs {
        add_exact(&mut a, 0, x);
    }
    for &x in xs.iter().rev() {
        add_exact(&mut b, 0, x);
    }
    assert_eq!(exact_total(&a, 0), exact_total(&b, 0));
    assert_eq!(exact_total(&a, 0), 9007199254740994.0);
}

fn info(name: &str) -> EventInfo {
    EventInfo { name: name.into(), key: -1, ..EventInfo::default() }
}

fn plane<'a>(
    index: usize,
    name: &str,
    strings: &'a [std::sync::Arc<str>],
    metas: Vec<(i64, EventInfo)>,
) -> PlaneView<'a> {
    PlaneView {
        index,
        name: name.to_string(),
        line_count: 0,
        meta: metas.into_iter().collect(),
        stats: Default::default(),
        programs: vec![],
        strings,
    }
}

/// A plane whose metadata entries hold HLO protos (one that cannot be read is left out, as the decoder does).
fn hlo_plane<'a>(
    index: usize,
    name: &str,
    strings: &'a [std::sync::Arc<str>],
    metas: Vec<(i64, &str, Vec<u8>)>,
) -> PlaneView<'a> {
    let mut entries = vec![];
    let mut programs = vec![];
    for (id, n, proto) in metas {
        if let Ok(p) = crate::hlo_categories::decode_hlo_program(&proto) {
            let key = if p.id.is_empty() { id.to_string() } else { p.id };
            programs.push(Program { key, name: p.name, categories: std::sync::Arc::new(p.categories) });
        }
        entries.push((id, info(n)));
    }
    PlaneView { programs, ..plane(index, name, strings, entries) }
}

#[derive(Default, Clone, Copy)]
struct Ev {
    off: f64,
    dur: f64,
    meta: i64,
    op: Option<&'static str>,
    prog: Option<&'static str>,
    module: Option<&'static str>,
    cat: Option<&'static str>,
    flops: Option<f64>,
    bytes: Option<f64>,
    dev: Option<(f64, f64)>,
}

fn ev(off: f64, dur: f64, meta: i64) -> Ev {
    Ev { off, dur, meta, ..Ev::default() }
}

fn kernel(off: f64, dur: f64, meta: i64, op: &'static str, prog: &'static str) -> Ev {
    Ev { op: Some(op), prog: Some(prog), ..ev(off, dur, meta) }
}

fn line(name: &str, evs: &[Ev]) -> LineView {
    let k = |s: Option<&str>| s.map_or(-1, |s| STRINGS.iter().position(|x| *x == s).unwrap() as i32);
    let num = |x: Option<f64>| x.unwrap_or(f64::NAN);
    LineView {
        name: name.to_string(),
        display_name: name.to_string(),
        count: evs.len(),
        meta_id: evs.iter().map(|e| e.meta).collect(),
        offset_ps: evs.iter().map(|e| e.off * 1e6).collect(),
        duration_ps: evs.iter().map(|e| e.dur * 1e6).collect(),
        op: evs.iter().map(|e| k(e.op)).collect(),
        module: evs.iter().map(|e| k(e.module)).collect(),
        category: evs.iter().map(|e| k(e.cat)).collect(),
        program: evs.iter().map(|e| k(e.prog)).collect(),
        flops: evs.iter().map(|e| num(e.flops)).collect(),
        bytes: evs.iter().map(|e| num(e.bytes)).collect(),
        dev_offset_ps: evs.iter().map(|e| e.dev.map_or(f64::NAN, |d| d.0 * 1e6)).collect(),
        dev_duration_ps: evs.iter().map(|e| e.dev.map_or(f64::NAN, |d| d.1 * 1e6)).collect(),
        ..LineView::default()
    }
}

fn visit(s: &mut OpStats, p: &PlaneView, lines: &[LineView]) {
    s.plane(p);
    for l in lines {
        s.line(p, l);
    }
}

fn scenario() -> OpPartial {
    let strings: Vec<std::sync::Arc<str>> = STRINGS.iter().map(|&s| s.into()).collect();
    let mut s = OpStats::new();
    let prog5 = proto(
        "jit_f",
        Some(5),
        &[instruction("fusion.1", Some("fusion"), Some("kLoop")), instruction("dot.2", Some("dot"), None)],
    );
    let other = proto("other", None, &[instruction("x.1", Some("add"), None)]);
    let metas = vec![(1, "jit_f", prog5), (2, "other", other), (3, "bad", vec![0x0c])];
    visit(&mut s, &hlo_plane(0, "/host:metadata", &strings, metas), &[]);

    let k1 = EventInfo { flops: Some(1000.0), bytes: Some(10.0), category: Some("meta-cat".into()), ..info("k1") };
    let gpu = plane(1, "/device:GPU:0", &strings, vec![(1, k1), (2, info("k2"))]);
    let cat = |e: Ev, c| Ev { cat: Some(c), ..e };
    let stream = line(
        "Stream #1",
        &[
            kernel(0.0, 100.0, 1, "fusion.1", "5"),
            Ev { module: Some("jit_f"), flops: Some(7.0), ..kernel(50.0, 100.0, 2, "jit_f::dot.2", "5") },
            kernel(20.0, 10.0, 2, "command_buffer_1", "5"),
            kernel(30.0, 10.0, 2, "12", "5"),
            kernel(35.0, 10.0, 2, "b", "5"),
            kernel(40.0, 10.0, 2, "0", "5"),
            kernel(45.0, 5.0, 2, "12", "5"),
            kernel(60.0, 30.0, 2, "add.3", "9"),
            // A cache hit: the row's empty category stays.
            cat(kernel(90.0, 30.0, 2, "add.3", "9"), "custom-cat"),
            // Another op string for the same row, a miss: its category fills the row's.
            Ev { flops: Some(1.0), bytes: Some(2.0), ..cat(kernel(95.0, 3.0, 2, "dot.2", "5"), "custom-cat") },
            Ev { op: Some("b"), ..ev(96.0, 4.0, 7) },
            ev(97.0, 4.0, 2),
        ],
    );
    visit(&mut s, &gpu, &[stream]);

    let host = plane(2, "/host:CPU", &strings, vec![(1, info("h"))]);
    visit(&mut s, &host, &[line("thread", &[kernel(0.0, 5.0, 1, "fusion.1", "5")])]);

    let tpu_op =
        |name: &str, display: &str, category: Option<&str>, flops: Option<f64>, bytes: Option<f64>| EventInfo {
            display_name: display.into(),
            program: Some("7".into()),
            category: category.map(String::from),
            flops,
            bytes,
            ..info(name)
        };
    let metas = vec![
        (1, tpu_op("%while.1 = while(...)", "while.1", Some("control flow"), Some(f64::NAN), None)),
        (2, tpu_op("fusion.2 = fusion(...)", "fusion.2", Some("loop fusion"), Some(100.0), Some(50.0))),
        (3, tpu_op("copy.3", "", None, Some(f64::INFINITY), None)),
        (10, info("jit_train(7)")),
        (11, info("bad(x)")),
        (12, info("jit_other(5)")),
    ];
    let tpu = plane(3, "/device:TPU:0", &strings, metas);
    let lines = [
        line("XLA Modules", &[ev(0.0, 1.0, 10), ev(1.0, 1.0, 11), ev(2.0, 1.0, 12)]),
        line("Steps", &[ev(0.0, 1000.0, 2)]),
        line(
            "XLA Ops",
            &[
                ev(0.0, 100.0, 1),
                ev(10.0, 30.0, 2),
                Ev { dev: Some((42.0, 18.0)), ..ev(40.0, 20.0, 3) },
                ev(70.0, 10.0, 2),
                ev(90.0, 5.0, 99),
                ev(100.0, 10.0, 2),
                ev(200.0, 10.0, 3),
                ev(200.0, 20.0, 2),
            ],
        ),
    ];
    visit(&mut s, &tpu, &lines);
    s.partial()
}

#[test]
fn partial_rows_and_sums() {
    let p = scenario();
    let rows: Vec<(&str, &str, &str, &str, bool, bool)> = p
        .rows
        .iter()
        .map(|r| (r.program.as_str(), r.name.as_str(), r.module.as_str(), r.category.as_str(), r.host, r.kernel))
        .collect();
    assert_eq!(
        rows,
        [
            ("5", "fusion.1", "", "meta-cat", false, true),
            ("5", "dot.2", "jit_f", "custom-cat", false, true),
            ("5", "command_buffer_1", "", "", false, true),
            ("5", "12", "", "", false, true),
            ("5", "b", "", "", false, true),
            ("5", "0", "", "", false, true),
            ("9", "add.3", "", "", false, true),
            ("", "b", "", "", false, true),
            ("5", "fusion.1", "", "", true, false),
            ("7", "while.1", "", "control flow", false, false),
            ("7", "fusion.2", "", "loop fusion", false, false),
            ("7", "copy.3", "", "", false, false),
        ]
    );
    let acc: [f64; 60] = [
        1., 1e8, 1e8, 1000., 10., 2., 1.03e8, 1.03e8, 8., 2., 1., 1e7, 1e7, 0., 0., 2., 1.5e7, 1.5e7, 0., 0., 1., 1e7,
        1e7, 0., 0., 1., 1e7, 1e7, 0., 0., 2., 6e7, 6e7, 0., 0., 1., 4e6, 4e6, 0., 0., 1., 5e6, 5e6, 0., 0., 1., 1e8,
        4.2e7, 0., 0., 4., 7e7, 6e7, 400., 200., 2., 2.8e7, 2.8e7, 0., 0.,
    ];
    assert_eq!(plain(&p.acc), acc);
    let mut hlo: Vec<(&str, Vec<(&str, &str)>)> = p
        .hlo
        .iter()
        .map(|(k, v)| {
            let mut c: Vec<(&str, &str)> = v.iter().map(|(a, b)| (a.as_ref(), b.as_ref())).collect();
            c.sort();
            (k.as_str(), c)
        })
        .collect();
    hlo.sort();
    assert_eq!(
        hlo,
        [("2", vec![("x.1", "non-fusion elementwise")]), ("5", vec![("dot.2", "dot"), ("fusion.1", "loop fusion")])]
    );
    let mut modules: Vec<(&str, &str)> = p.modules.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    modules.sort();
    assert_eq!(modules, [("2", "other"), ("5", "jit_f"), ("7", "jit_train")]);
}

#[test]
fn merged_table() {
    let mut un = UnattributedKernels::default();
    let out = merge_ops(&[&scenario()], Some(&mut un));
    let got: Vec<(&str, &str, &str, &str, f64, f64, f64, f64, f64)> = out
        .iter()
        .map(|o| {
            (
                o.program.as_str(),
                o.name.as_str(),
                o.module.as_str(),
                o.category.as_str(),
                o.count as f64,
                o.self_us,
                o.total_us,
                o.flops,
                o.bytes,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("5", "dot.2", "jit_f", "custom-cat", 2., 103., 103., 8., 2.),
            ("5", "fusion.1", "jit_f", "meta-cat", 1., 100., 100., 1000., 10.),
            ("9", "add.3", "", "elementwise", 2., 60., 60., 0., 0.),
            ("7", "fusion.2", "jit_train", "loop fusion", 4., 60., 70., 400., 200.),
            ("7", "while.1", "jit_train", "control flow", 1., 42., 100., 0., 0.),
            ("7", "copy.3", "jit_train", "data formatting", 2., 28., 28., 0., 0.),
            ("", "b", "", "elementwise", 1., 4., 4., 0., 0.),
        ]
    );
    assert!(out.iter().all(|o| o.bound_by == BoundBy::None && o.intensity == 0.0));
    assert_eq!((un.count, un.self_us), (5, 45.0));
    let names: Vec<(&str, u64)> = un.names.0.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(names, [("command_buffer_1", 1), ("12", 2), ("b", 1), ("0", 1)]);
}

#[test]
fn merge_precedence_and_host_fallback() {
    let cats =
        |c: &[(&str, &str)]| Arc::new(c.iter().map(|(a, b)| (Arc::from(*a), Arc::from(*b))).collect::<Categories>());
    let key = |program: &str, name: &str, host: bool| OpKey {
        program: program.into(),
        name: name.into(),
        host,
        ..OpKey::default()
    };
    let a = OpPartial {
        rows: vec![key("1", "x.1", true), key("1", "y.2", true)],
        acc: exact(&[1., 2e6, 1e6, 0., 0., 3., 3e6, 3e6, 5., 0.]),
        hlo: [("1".to_string(), cats(&[("x.1", "first")]))].into_iter().collect(),
        modules: [("1".to_string(), "m_a".to_string())].into_iter().collect(),
    };
    let b = OpPartial {
        rows: vec![key("1", "x.1", true)],
        acc: exact(&[2., 4e6, 2e6, 0., 0.]),
        hlo: [("1".to_string(), cats(&[("x.1", "second")]))].into_iter().collect(),
        modules: [("1".to_string(), "m_b".to_string())].into_iter().collect(),
    };
    // No device rows: host rows count. The later partial's HLO wins, the first module name.
    let out = merge_ops(&[&a, &b], None);
    let got: Vec<(&str, &str, &str, f64, f64, f64)> = out
        .iter()
        .map(|o| (o.name.as_str(), o.category.as_str(), o.module.as_str(), o.count as f64, o.self_us, o.total_us))
        .collect();
    assert_eq!(got, [("x.1", "second", "m_a", 3., 3., 6.), ("y.2", "elementwise", "m_a", 3., 3., 3.)]);
}

#[test]
fn categories_from_names() {
    let cases = [
        ("fusion", "loop fusion"),
        ("fusion.1", "loop fusion"),
        ("dot_fusion.3", "convolution fusion"),
        ("convolution.4", "convolution"),
        ("dot", "convolution"),
        ("dot.1", "convolution"),
        ("dot.clone", "convolution"),
        ("dot.clone.2", "convolution"),
        ("dot.2.clone", "convolution"),
        ("dot.clone.2.clone", "convolution"),
        ("dot.clone.clone", "convolution"),
        ("dot.1.clone.2", "elementwise"),
        ("add.clone.", "elementwise"),
        ("copy-start.4", "data formatting"),
        ("transpose.1", "data formatting"),
        ("bitcast", "data formatting"),
        ("wrapped_scatter.1", "data formatting"),
        ("all-reduce-start.2", "collective"),
        ("all-gather", "collective"),
        ("reduce-scatter.1", "collective"),
        ("reduce.5", "reduction"),
        ("reduce-window", "reduction"),
        ("collective-permute-done", "collective"),
        ("all-to-all.3", "collective"),
        ("call", "control flow"),
        ("while.2", "control flow"),
        ("conditional.1", "control flow"),
        ("while.2a", "elementwise"),
        ("add.3", "elementwise"),
        ("", "elementwise"),
        (".1", "elementwise"),
        (".clone", "elementwise"),
        ("a.b.1", "elementwise"),
        ("fusion.1.2.3", "loop fusion"),
        ("multiply_reduce_fusion", "loop fusion"),
        ("fusion.x", "elementwise"),
        ("x.1.clone.clone", "elementwise"),
        ("slice.1", "data formatting"),
        ("pad", "data formatting"),
        ("gather.2", "data formatting"),
        ("scatter", "data formatting"),
        ("concatenate.1", "data formatting"),
        ("reshape.9", "data formatting"),
        ("broadcast.1", "data formatting"),
        ("convolution", "convolution"),
        ("convolution_fusion", "convolution fusion"),
        ("copy.1x", "data formatting"),
        ("reducex", "reduction"),
        ("loop_convolution_fusion.1.clone", "convolution fusion"),
        ("dot.\u{661}", "elementwise"),
    ];
    for (name, want) in cases {
        assert_eq!(category_from_name(name), want, "{name}");
    }
}

#[test]
fn module_names() {
    assert_eq!(module_of("jit_train(7)"), Some(("jit_train", "7")));
    assert_eq!(module_of("a(1(23)"), Some(("a(1", "23")));
    assert_eq!(module_of("(007)"), Some(("", "007")));
    assert_eq!(module_of("bad(x)"), None);
    assert_eq!(module_of("x()"), None);
    assert_eq!(module_of("a\nb(1)"), None);
    assert_eq!(module_of("x(1) "), None);
}

#[test]
fn far_from_sorted_line() {
    // Reversed starts (over 8 moves per event): the comparison sort's order, nesting as the sorted line.
    let strings: Vec<std::sync::Arc<str>> = STRINGS.iter().map(|&s| s.into()).collect();
    let metas = vec![
        (1, EventInfo { display_name: "while.1".into(), ..info("w") }),
        (2, EventInfo { display_name: "add.3".into(), ..info("a") }),
    ];
    let p = plane(0, "/device:TPU:0", &strings, metas);
    let mut evs: Vec<Ev> = (0..40).map(|i| ev(1000.0 + 10.0 * i as f64, 5.0, 2)).collect();
    evs.push(ev(1000.0, 1000.0, 1));
    evs.reverse();
    let mut s = OpStats::new();
    visit(&mut s, &p, &[line("XLA Ops", &evs)]);
    let p = s.partial();
    assert_eq!(plain(&p.acc), [1., 1e9, 8e8, 0., 0., 40., 2e8, 2e8, 0., 0.]);
}
