//! The decoder on XSpaces written here (every field form it must read; faults at known bytes) and on the real
//! captures (test/fixtures/profiles/real): the same summary through the whole file in memory, through small read
//! windows (planes and lines read field by field), and split over threads.

use super::*;
use crate::analyze::{analyze_bytes, analyze_reader};
use crate::output::types::ProfileSummary;
use crate::sample::W;
use crate::source::tests::Bytes;
use crate::timeline::kept::KeptLines;

/// The summary of `buf` in memory (threads), and through a window of `window` bytes, with its timeline.
fn both(buf: &[u8], threads: usize, window: usize) -> (ProfileSummary, (ProfileSummary, f64), KeptLines) {
    let whole = analyze_bytes(buf, threads, &|_, _| {}).unwrap();
    let mut lines = KeptLines::default();
    let read = analyze_reader(&Bytes(buf.to_vec(), Default::default()), Some(&mut lines), window).unwrap();
    (whole, read, lines)
}

/// The summary's fields that do not depend on how it was read (the timeline's names are only there with one).
fn same(a: &ProfileSummary, b: &ProfileSummary) {
    let mut b = b.clone();
    b.timeline = a.timeline.clone();
    assert_eq!(*a, b);
}

/// One plane whose events use every form the event loop must read: fields in another order, num_occurrences,
/// unknown fields (a two-byte tag, a length-delimited one), stats of every value type, long varints, overlong
/// tags. `corrupt`: an event, or a stat, whose varint runs past its end.
fn odd_xspace(corrupt: Option<&str>) -> Vec<u8> {
    let mut w = W::default();
    w.msg(1, |p| {
        p.num(1, 1).str(2, "/device:GPU:0");
        p.msg(3, |l| {
            l.str(2, "Stream #1(Kernel)").num(3, 1_700_000_000_000_000_000);
            // dur, then meta, then offset; an hlo_op as str, a module as ref, flops as double, bytes as int64.
            l.msg(4, |e| {
                e.num(3, 5_000_000).num(1, 3).num(2, 1 << 36);
                e.msg(4, |s| {
                    s.num(1, 1).str(5, "fusion.923");
                });
                e.msg(4, |s| {
                    s.num(1, 2).num(7, 11);
                });
                e.msg(4, |s| {
                    s.num(1, 3).double(2, 1.5e9);
                });
                e.msg(4, |s| {
                    s.num(1, 6).num(4, 123456789);
                });
            });
            l.msg(4, |e| {
                e.num(1, 4).num(2, (1 << 36) + 1_000_000).num(3, 2_000_000).num(5, 1).num(20, 99).str(15, "ignored");
                e.msg(4, |s| {
                    s.num(1, 5).bytes(6, &[1, 2, 3]);
                });
                e.msg(4, |s| {
                    s.num(1, 1).str(5, "fusion.5900");
                });
                e.msg(4, |s| {
                    s.num(1, 2).str(5, "jit_step");
                });
            });
            // Overlong (two-byte) tags for metadata_id, duration_ps, a stat and its metadata_id: the same fields.
            let mut raw = vec![0x88, 0x00, 3, 0x10, 0x80, 0x80, 0x80, 0x80, 0x02, 0x98, 0x00, 0x90, 0x4e];
            raw.extend_from_slice(&[0xa2, 0x00, 10, 0x88, 0x00, 1, 0x2a, 5]);
            raw.extend_from_slice(b"dot.7");
            l.bytes(4, &raw);
            match corrupt {
                // An event that says it is 3 bytes long, whose offset varint runs on past them.
                Some("event") => l.0.extend_from_slice(&[0x22, 3, 0x10, 0xff, 0xff, 0xff, 0xff, 0x0f]),
                // A stat whose metadata_id varint runs past the stat.
                Some("stat") => {
                    l.bytes(4, &[0x08, 3, 0x22, 2, 0x08, 0x85, 0x10, 0x01]);
                }
                _ => {}
            }
        });
        for (id, n) in [(3, "fusion"), (4, "copy")] {
            p.msg(4, |m| {
                m.num(1, id).msg(2, |v| {
                    v.num(1, id).str(2, n);
                });
            });
        }
        for (id, n) in
            [(1, "hlo_op"), (2, "hlo_module"), (3, "flops"), (5, "blob"), (6, "bytes_accessed"), (11, "jit_train")]
        {
            p.msg(5, |m| {
                m.num(1, id).msg(2, |v| {
                    v.num(1, id).str(2, n);
                });
            });
        }
    });
    w.0
}

#[test]
fn every_field_form() {
    let buf = odd_xspace(None);
    for window in [16, 64, 1 << 20] {
        let (whole, (read, _), lines) = both(&buf, 1, window);
        same(&whole, &read);
        assert_eq!(whole.event_count, 3);
        let mut rows: Vec<_> =
            (whole.ops.iter()).map(|o| (o.name.as_str(), o.module.as_str(), o.count, o.flops, o.bytes)).collect();
        rows.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(
            rows,
            [
                ("dot.7", "", 1, 0.0, 0.0),
                ("fusion.5900", "jit_step", 1, 0.0, 0.0),
                ("fusion.923", "jit_train", 1, 1.5e9, 123456789.0)
            ]
        );
        // The overlong-tagged event names its metadata (3: fusion); durations in µs, in start order.
        assert_eq!(read.timeline.names, ["fusion", "copy"]);
        assert_eq!(lines.lines[0].dur, [0.01, 5.0, 2.0]);
    }
}

#[test]
fn a_varint_past_its_event_or_stat_is_reported_at_its_field() {
    for corrupt in ["event", "stat"] {
        let buf = odd_xspace(Some(corrupt));
        let at = match corrupt {
            "event" => buf.windows(4).position(|w| w == [0x22, 3, 0x10, 0xff]).unwrap() + 2,
            _ => buf.windows(2).position(|w| w == [0x08, 0x85]).unwrap(),
        };
        let want =
            format!("the profile is truncated or corrupt: a field at byte {at} runs past the end of its message");
        let whole = analyze_bytes(&buf, 1, &|_, _| {}).unwrap_err();
        assert_eq!(whole.describe(buf.len()), want, "{corrupt}");
        for window in [16, 1 << 20] {
            let read = analyze_reader(&Bytes(buf.clone(), Default::default()), None, window).unwrap_err();
            assert_eq!(read, whole, "{corrupt}, window {window}");
        }
    }
}

/// A torch_xla-like host plane: step annotations (a root TraceMe, as torch_xla's StepTrace writes), dispatches, and
/// ops that nest (lines before the metadata, as XLA writes them; one line out of start order).
pub(crate) fn torch_xla_xspace() -> Vec<u8> {
    let us = 1_000_000u64;
    let mut w = W::default();
    type Stat = (u64, &'static str, u64);
    let module: Stat = (2, "SyncTensorsGraph.7", 0);
    let mut ops: Vec<(u64, u64, u64, Vec<Stat>)> = vec![];
    for k in 0..3 {
        let t = k * 100 * us;
        ops.push((4, t + 20 * us, 10 * us, vec![(1, "", 11), module, (4, "", 99)]));
        ops.push((3, t + 22 * us, 3 * us, vec![(1, "", 10), module, (3, "", 1000)]));
        ops.push((5, t + 40 * us, 2 * us, vec![(1, "", 12), module]));
    }
    ops.reverse();
    w.msg(1, |p| {
        p.num(1, 1).str(2, "/host:CPU");
        let line = |p: &mut W, id: u64, name: &str, events: &[(u64, u64, u64, Vec<Stat>)]| {
            p.msg(3, |l| {
                l.num(1, id).str(2, name).num(3, 1_000_000_000);
                for (meta, off, dur, stats) in events {
                    l.msg(4, |e| {
                        e.num(1, *meta).num(2, *off).num(3, *dur);
                        for &(m, s, v) in stats {
                            e.msg(4, |x| {
                                x.num(1, m);
                                if m == 1 {
                                    x.num(7, v);
                                } else if !s.is_empty() {
                                    x.str(5, s);
                                } else {
                                    x.num(3, v);
                                }
                            });
                        }
                    });
                }
            });
        };
        // Each step: its annotation, and torch_xla's graph building inside it (host compute, as xprof needs).
        let python: Vec<_> = (0..3)
            .flat_map(|k| [(1, k * 100 * us, 90 * us, vec![(6, "", 1)]), (6, k * 100 * us + us, 5 * us, vec![])])
            .collect();
        line(p, 1, "python3", &python);
        line(p, 2, "tf_XLAEigen", &ops);
        line(p, 3, "tf_pjrt", &(0..3).map(|k| (2, k * 100 * us + 10 * us, 5 * us, vec![])).collect::<Vec<_>>());
        for (k, n) in ["train_step", "ExecuteComputation", "dot.1", "call.2", "fusion.3", "SyncTensorsGraphInternal"]
            .iter()
            .enumerate()
        {
            let id = k as u64 + 1;
            p.msg(4, |m| {
                m.num(1, id).msg(2, |v| {
                    v.num(1, id).str(2, n);
                    if *n == "fusion.3" {
                        v.msg(5, |s| {
                            s.num(1, 5).num(7, 20);
                        });
                    }
                });
            });
        }
        let names = [(1, "hlo_op"), (2, "hlo_module"), (3, "flops"), (4, "_pt"), (5, "hlo_category"), (6, "_r")];
        for (id, n) in names.into_iter().chain([(10, "dot.1"), (11, "call.2"), (12, "fusion.3"), (20, "loop fusion")]) {
            p.msg(5, |m| {
                m.num(1, id).msg(2, |v| {
                    v.num(1, id).str(2, n);
                });
            });
        }
    });
    w.str(4, "vm");
    w.0
}

#[test]
fn a_torch_xla_capture_through_any_window() {
    let buf = torch_xla_xspace();
    let (whole, _, _) = both(&buf, 1, 1 << 20);
    assert_eq!((whole.steps.len(), whole.hosts.as_slice()), (3, ["vm".to_string()].as_slice()));
    // Each step is its annotation (90 µs); in it the ops that ran ([120, 130] and [140, 142]), the graph building.
    let s = &whole.steps[1];
    assert_eq!((s.start_us, s.total_us, s.execute_us, s.host_us, s.other_us), (100.0, 90.0, 12.0, 5.0, 73.0));
    let op = |n: &str| whole.ops.iter().find(|o| o.name == n).unwrap();
    // Self time leaves out the nested dot.
    assert_eq!((op("call.2").count, op("call.2").total_us, op("call.2").self_us), (3, 30.0, 21.0));
    assert_eq!(
        (op("dot.1").flops, op("dot.1").module.as_str(), op("fusion.3").category.as_str()),
        (3000.0, "SyncTensorsGraph.7", "loop fusion")
    );
    // Windows smaller than a tag, than a line, than the plane, and bigger than the file.
    for window in [16, 37, 100, 256, buf.len() - 1, 1 << 20] {
        let (_, (read, _), _) = both(&buf, 1, window);
        same(&whole, &read);
    }
}

#[test]
fn truncated_and_corrupt_captures_name_the_byte() {
    let buf = torch_xla_xspace();
    for cut in [1, 7, buf.len() / 2, buf.len() - 3] {
        let part = &buf[..cut];
        let e = analyze_bytes(part, 1, &|_, _| {}).unwrap_err();
        let msg = e.describe(cut);
        assert!(
            msg.starts_with("the profile is truncated or corrupt: a field at byte ")
                && msg.contains(" runs past the end"),
            "{msg}"
        );
        assert_eq!(analyze_reader(&Bytes(part.to_vec(), Default::default()), None, 64).unwrap_err(), e, "cut {cut}");
    }
    assert_eq!(analyze_bytes(&[], 1, &|_, _| {}).unwrap_err().describe(0), "the profile file is empty");
    let text = b"this is not a protobuf at all";
    assert!(analyze_bytes(text, 1, &|_, _| {})
        .unwrap_err()
        .describe(text.len())
        .starts_with("not a valid XSpace profile: invalid field tag"));
    // Three copies (three planes), the last one's first line with a wire type that does not exist: the fault at its
    // byte, on one thread or two.
    let mut three = [&buf[..], &buf[..], &buf[..]].concat();
    let at = three.windows(7).rposition(|w| w == b"python3").unwrap() + 7;
    assert_eq!(three[at], 0x18, "the timestamp_ns tag follows the line name");
    three[at] = 0x0f;
    let e = analyze_bytes(&three, 1, &|_, _| {}).unwrap_err();
    assert_eq!(e.describe(three.len()), format!("not a valid XSpace profile: invalid field tag 15 at byte {at}"));
    assert_eq!(analyze_bytes(&three, 2, &|_, _| {}).unwrap_err(), e);
}

fn real(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test/fixtures/profiles/real");
    std::fs::read(dir.join(format!("{name}.xplane.pb"))).unwrap()
}

const REAL: [&str; 8] = [
    "h200-jax-pallas",
    "h200-jax-transformer-no-cmdbuf",
    "h200-jax-transformer",
    "jax-mi300x-conv-legacy",
    "jax-mi300x-conv",
    "jax-te-fused-attn",
    "tf-8gpu-multi-worker",
    "tpu-v6e-4-inference",
];

#[test]
fn real_captures_read_whole_in_windows_and_on_threads_alike() {
    for name in REAL {
        let buf = real(name);
        let (whole, (read, _), lines) = both(&buf, 1, 1 << 20);
        same(&whole, &read);
        assert_eq!(lines.lines.iter().map(|l| l.start.len()).sum::<usize>(), whole.event_count, "{name}: every event");
        // Lines read field by field (a window smaller than any plane), and the planes over two threads.
        let (_, (small, _), _) = both(&buf, 1, 4 << 10);
        same(&whole, &small);
        let twice = [&buf[..], &buf[..]].concat();
        let one = analyze_bytes(&twice, 1, &|_, _| {}).unwrap();
        assert_eq!(analyze_bytes(&twice, 2, &|_, _| {}).unwrap(), one, "{name}, two threads");
    }
}

#[test]
fn step_grouping_stats_are_read_only_where_a_host_has_roots_or_the_capture_is_a_tpus() {
    let grouping = |name: &str| {
        let buf = real(name);
        scan_xspace(&mut Window::whole(&buf)).map(|l| l.grouping).unwrap()
    };
    // The pallas capture's host has no StepTraceAnnotation; TensorFlow's was grouped when written.
    let got: Vec<bool> =
        ["h200-jax-transformer", "h200-jax-pallas", "jax-te-fused-attn", "tf-8gpu-multi-worker", "tpu-v6e-4-inference"]
            .iter()
            .map(|n| grouping(n))
            .collect();
    assert_eq!(got, [true, false, false, false, true]);
}
