//! A small capture made here, with what real ones have (a TPU's XLA Modules, XLA Ops and Steps lines with op
//! stats on their metadata; GPU kernels naming their op and program, launched under step annotations whose
//! contexts link threads; a host's step markers, compiles, transfers and dispatches; a program's HLO; the devices'
//! stats), so that its analysis runs the paths a real capture takes. The WebAssembly build's hosts analyze it, as
//! a file, when they load the module (wasm.rs `sample_capture`, `warm`): V8 compiles a module's functions on their
//! first call with a baseline compiler and optimizes the ones that run a lot, and the first capture a user opens
//! should find both done.

use crate::analyze::analyze_reader;
use crate::output::types::ProfileSummary;
use crate::source::{Fault, ReadAt};

/// Protocol-buffer bytes, written as XLA writes them.
#[derive(Default)]
pub struct W(pub Vec<u8>);

impl W {
    pub fn varint(&mut self, mut v: u64) -> &mut Self {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
        self
    }
    pub fn num(&mut self, field: u64, v: u64) -> &mut Self {
        self.varint(field << 3).varint(v)
    }
    pub fn bytes(&mut self, field: u64, b: &[u8]) -> &mut Self {
        self.varint(field << 3 | 2).varint(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    pub fn str(&mut self, field: u64, s: &str) -> &mut Self {
        self.bytes(field, s.as_bytes())
    }
    pub fn msg(&mut self, field: u64, body: impl FnOnce(&mut W)) -> &mut Self {
        let mut w = W::default();
        body(&mut w);
        self.bytes(field, &w.0)
    }
    pub fn double(&mut self, field: u64, v: f64) -> &mut Self {
        self.varint(field << 3 | 1);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
}

/// A metadata entry (plane field `field`: 4 events, 5 stats) `id` named `name`, with `more` written in its value.
fn entry(p: &mut W, field: u64, id: u64, name: &str, more: impl FnOnce(&mut W)) {
    p.msg(field, |m| {
        m.num(1, id).msg(2, |v| {
            v.num(1, id).str(2, name);
            more(v);
        });
    });
}

/// A line of a plane (`id`, `name`, its event offsets from 1 µs) with the events `body` writes.
fn line(p: &mut W, id: u64, name: &str, body: impl FnOnce(&mut W)) {
    p.msg(3, |l| {
        l.num(1, id).str(2, name).num(3, 1_000);
        body(l);
    });
}

/// Stat metadata ids of the sample (every plane names them alike).
mod stat {
    pub const HLO_OP: u64 = 1;
    pub const PROGRAM: u64 = 2;
    pub const CORRELATION: u64 = 3;
    pub const ROOT: u64 = 4;
    pub const CATEGORY: u64 = 5;
    pub const FLOPS: u64 = 6;
    pub const BYTES: u64 = 7;
    pub const PRODUCER_TYPE: u64 = 8;
    pub const PRODUCER: u64 = 9;
    pub const CONSUMER_TYPE: u64 = 10;
    pub const CONSUMER: u64 = 11;
    pub const VENDOR: u64 = 12;
    pub const CC_MAJOR: u64 = 13;
    pub const CC_MINOR: u64 = 14;
    pub const GPU_NAME: u64 = 15;
    pub const BANDWIDTH: u64 = 16;
    pub const PEAK_TFLOPS: u64 = 17;
    pub const PEAK_HBM: u64 = 18;
    pub const HLO_PROTO: u64 = 19;
    /// Op names (string values by reference): OP_NAME + op.
    pub const OP_NAME: u64 = 100;
    pub const NAMES: [&str; 19] = [
        "hlo_op",
        "program_id",
        "correlation_id",
        "_r",
        "hlo_category",
        "flops",
        "bytes_accessed",
        "_pt",
        "_p",
        "_ct",
        "_c",
        "device_vendor",
        "compute_cap_major",
        "compute_cap_minor",
        "gpu_device_name",
        "memory_bandwidth",
        "peak_teraflops_per_second",
        "peak_hbm_bw_gigabytes_per_second",
        "Hlo Proto",
    ];
}

/// A stat's value: a number, a string, or a string by reference (the stat metadata id of the string).
#[derive(Clone, Copy)]
enum V<'a> {
    U(u64),
    F(f64),
    S(&'a str),
    Ref(u64),
}

fn stat_value(s: &mut W, id: u64, v: V) {
    s.num(1, id);
    match v {
        V::U(x) => s.num(3, x),
        V::F(x) => s.double(2, x),
        V::S(x) => s.str(5, x),
        V::Ref(x) => s.num(7, x),
    };
}

/// An event: metadata id, offset and duration (ps), and its stats.
fn event(l: &mut W, meta: u64, off: u64, dur: u64, stats: &[(u64, V)]) {
    l.msg(4, |e| {
        e.num(1, meta).num(2, off).num(3, dur);
        for &(id, v) in stats {
            e.msg(4, |s| stat_value(s, id, v));
        }
    });
}

/// Steps of the sample, and the distinct ops each runs: enough for its tables to grow and its sorts to take their
/// general path (past 20 elements), as a real capture's do, and for the hot functions to run often enough per
/// analysis that V8 optimizes them within a few analyses.
pub const STEPS: u64 = 8;
pub const OPS: u64 = 40;
/// The program every op belongs to.
const PROGRAM: u64 = 7;
const MS: u64 = 1_000_000_000;
/// The opcodes and fusion kinds of the ops, in turn (their HLO categories differ).
const OPCODES: [(&str, &str); 5] =
    [("fusion", "kLoop"), ("fusion", "kOutput"), ("convolution", ""), ("add", ""), ("all-reduce", "")];

/// The sample's three forms: the steps come from a TPU's Steps line, from GPU kernels grouped under the host's
/// step annotations, or, in a capture with no device (XLA on CPU), from the host's step annotations themselves.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Form {
    TpuSteps,
    GpuAnnotations,
    CpuHost,
}

pub const FORMS: [Form; 3] = [Form::TpuSteps, Form::GpuAnnotations, Form::CpuHost];

fn op_name(j: u64) -> String {
    format!("{}.{}", OPCODES[(j % 5) as usize].0, j + 1)
}

fn stat_names(p: &mut W) {
    for (k, n) in stat::NAMES.iter().enumerate() {
        entry(p, 5, k as u64 + 1, n, |_| {});
    }
    for j in 0..OPS {
        entry(p, 5, stat::OP_NAME + j, &op_name(j), |_| {});
    }
}

/// The program's serialized xla.HloProto: one computation with every op (hlo_categories.rs reads it).
fn hlo_proto() -> Vec<u8> {
    let mut w = W::default();
    w.msg(1, |m| {
        m.str(1, "jit_train_step").num(5, PROGRAM);
        m.msg(3, |c| {
            for j in 0..OPS {
                let (opcode, kind) = OPCODES[(j % 5) as usize];
                c.msg(2, |i| {
                    i.str(1, &op_name(j)).str(2, opcode);
                    if !kind.is_empty() {
                        i.str(11, kind);
                    }
                });
            }
        });
    });
    w.0
}

/// The host plane: step annotations with contexts on the main thread and the kernels' launches, and torch_xla's
/// step markers, compile, transfers and dispatches on a thread of their own.
fn host_plane(p: &mut W) {
    p.num(1, 1).str(2, "/host:CPU");
    line(p, 1, "python3", |l| {
        for k in 0..STEPS {
            let t = k * 10 * MS;
            let ctx = [(stat::PRODUCER_TYPE, V::U(1)), (stat::PRODUCER, V::U(k + 1))];
            event(l, 1, t, 9 * MS, &[(stat::ROOT, V::U(1)), ctx[0], ctx[1]]);
            for j in 0..OPS {
                event(l, 2, t + MS + j * 1_000_000, 500_000, &[(stat::CORRELATION, V::U(k * OPS + j + 1))]);
            }
        }
    });
    line(p, 2, "pt_xla/2", |l| {
        for k in 0..STEPS {
            let t = k * 10 * MS;
            event(l, 8, t + MS / 2, MS / 4, &[(stat::CONSUMER_TYPE, V::U(1)), (stat::CONSUMER, V::U(k + 1))]);
            event(l, 3, t, MS / 10, &[]);
            if k == 0 {
                event(l, 4, t + MS / 10, MS / 2, &[]);
            }
            event(l, 5, t + MS, MS / 5, &[]);
            event(l, 6, t + 2 * MS, MS / 5, &[]);
            event(l, 7, t + 3 * MS, MS / 5, &[]);
        }
    });
    for (id, name) in [
        (1, "train"),
        (2, "cuLaunchKernel"),
        (3, "StepMarker"),
        (4, "XlaCompile"),
        (5, "SyncTensorsGraphInternal"),
        (6, "TransferToDevice"),
        (7, "ExecuteComputation"),
        (8, "ThunkExecute"),
    ] {
        entry(p, 4, id, name, |_| {});
    }
    stat_names(p);
}

/// A GPU's kernels, each naming its op and program and the launch it came from, with the device's stats.
fn gpu_plane(p: &mut W) {
    p.num(1, 2).str(2, "/device:GPU:0");
    line(p, 1, "Stream #1(Compute)", |l| {
        for k in 0..STEPS {
            for j in 0..OPS {
                let stats = [
                    (stat::HLO_OP, V::Ref(stat::OP_NAME + j)),
                    (stat::PROGRAM, V::U(PROGRAM)),
                    (stat::CORRELATION, V::U(k * OPS + j + 1)),
                ];
                event(l, 1 + j % 3, k * 10 * MS + 2 * MS + j * 150_000_000, 100_000_000, &stats);
            }
        }
    });
    for (id, name) in [(1, "loop_fusion_kernel"), (2, "cutlass_gemm"), (3, "nccl_all_reduce")] {
        entry(p, 4, id, name, |_| {});
    }
    stat_names(p);
    let plane_stats = [
        (stat::VENDOR, V::S("Nvidia")),
        (stat::CC_MAJOR, V::U(9)),
        (stat::CC_MINOR, V::U(0)),
        (stat::GPU_NAME, V::S("NVIDIA H200")),
    ];
    for (id, v) in plane_stats.into_iter().chain([(stat::BANDWIDTH, V::F(4.8e12))]) {
        p.msg(6, |s| stat_value(s, id, v));
    }
}

/// The programs' HLO, as JAX writes it for a GPU capture.
fn metadata_plane(p: &mut W) {
    p.num(1, 4).str(2, "/host:metadata");
    let hlo = hlo_proto();
    entry(p, 4, PROGRAM, "jit_train_step", |m| {
        m.msg(5, |s| {
            s.num(1, stat::HLO_PROTO).bytes(6, &hlo);
        });
    });
    stat_names(p);
}

/// A TPU: its programs on XLA Modules, every op execution on XLA Ops (metadata with the op's HLO text, short
/// name, category, flops, bytes and program), and a Steps line.
fn tpu_plane(p: &mut W) {
    p.num(1, 3).str(2, "/device:TPU:0");
    line(p, 1, "XLA Modules", |l| {
        for k in 0..STEPS {
            event(l, 1, k * 10 * MS + MS, 8 * MS, &[]);
        }
    });
    line(p, 2, "XLA Ops", |l| {
        for k in 0..STEPS {
            // Later ops first on odd steps: a line out of order is sorted before it is read.
            for n in 0..OPS {
                let j = if k % 2 == 1 { OPS - 1 - n } else { n };
                event(l, 10 + j, k * 10 * MS + MS + j * 190_000_000, 150_000_000, &[]);
            }
        }
    });
    line(p, 3, "Steps", |l| {
        for k in 0..STEPS {
            event(l, 2, k * 10 * MS, 10 * MS, &[]);
        }
    });
    entry(p, 4, 1, &format!("jit_train_step({PROGRAM})"), |_| {});
    entry(p, 4, 2, "1", |_| {});
    for j in 0..OPS {
        let name = op_name(j);
        let category = ["convolution", "loop fusion", "data formatting", "all-reduce", "non-fusion elementwise"];
        p.msg(4, |m| {
            m.num(1, 10 + j).msg(2, |v| {
                v.num(1, 10 + j).str(2, &format!("%{name} = {}(...)", OPCODES[(j % 5) as usize].0)).str(4, &name);
                let stats = [
                    (stat::CATEGORY, V::S(category[(j % 5) as usize])),
                    (stat::FLOPS, V::F(1e9 * (j + 1) as f64)),
                    (stat::BYTES, V::U(1 << 20)),
                    (stat::PROGRAM, V::U(PROGRAM)),
                ];
                for (id, x) in stats {
                    v.msg(5, |s| stat_value(s, id, x));
                }
            });
        });
    }
    stat_names(p);
    for (id, v) in [(stat::PEAK_TFLOPS, V::F(918.0)), (stat::PEAK_HBM, V::F(1640.0))] {
        p.msg(6, |s| stat_value(s, id, v));
    }
}

/// The sample capture's bytes in one of its forms.
pub fn capture(form: Form) -> Vec<u8> {
    let mut w = W::default();
    w.msg(1, host_plane);
    if form != Form::CpuHost {
        w.msg(1, gpu_plane);
    }
    w.msg(1, metadata_plane);
    if form == Form::TpuSteps {
        w.msg(1, tpu_plane);
    }
    w.str(4, "sample-host");
    w.0
}

struct InMemory(Vec<u8>);

impl ReadAt for InMemory {
    fn size(&self) -> usize {
        self.0.len()
    }
    fn read_at(&self, off: usize, buf: &mut [u8]) -> Result<usize, String> {
        let n = buf.len().min(self.0.len().saturating_sub(off));
        buf[..n].copy_from_slice(&self.0[off..off + n]);
        Ok(n)
    }
}

/// The sample capture in `form` analyzed as a file is, through a small read window (every path of the reading).
pub fn analyze_sample(
    form: Form,
    timeline: Option<&mut dyn crate::timeline::TimelineSink>,
) -> Result<(ProfileSummary, f64), Fault> {
    analyze_reader(&InMemory(capture(form)), timeline, 4 << 10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::types::StepSource;

    #[test]
    fn each_form_takes_its_steps_from_where_real_captures_do() {
        let want = [
            (Form::TpuSteps, StepSource::Device),
            (Form::GpuAnnotations, StepSource::Annotations),
            (Form::CpuHost, StepSource::Host),
        ];
        for (form, source) in want {
            let (s, _) = analyze_sample(form, None).unwrap();
            assert_eq!(s.overview.step_source, source, "{form:?}");
            assert!(s.steps.len() as u64 >= STEPS - 2, "{form:?}: {} steps", s.steps.len());
        }
    }

    #[test]
    fn ops_are_named_categorized_and_counted() {
        // The GPU's kernels alone, and with the TPU's executions of the same ops beside them (each op twice a step).
        for (form, per_step) in [(Form::GpuAnnotations, 1), (Form::TpuSteps, 2)] {
            let (s, _) = analyze_sample(form, None).unwrap();
            assert_eq!(s.ops.len() as u64, OPS, "{form:?}");
            let counted = s.ops.iter().all(|o| o.count == per_step * STEPS && !o.category.is_empty());
            assert!(counted, "{form:?}: {:?}", s.ops);
        }
    }
}
