//! A small capture made here, with what real ones have (a TPU's XLA Ops, Modules and Steps lines with op stats on
//! their metadata; GPU kernels naming their op and program, launched under a step annotation; a host's step
//! markers and dispatches; a program's HLO), so that its analysis runs every path a real capture takes. The
//! WebAssembly build analyzes it when its host loads it (`warm`): V8 compiles a module's functions on their first
//! call, and the first capture a user opens should not pay for that.

use crate::analyze::analyze_reader;
use crate::source::ReadAt;

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

/// An event: metadata id, offset and duration (ps), and stats (metadata id, value; stat 1, hlo_op, by ref).
fn event(l: &mut W, meta: u64, off: u64, dur: u64, stats: &[(u64, u64)]) {
    l.msg(4, |e| {
        e.num(1, meta).num(2, off).num(3, dur);
        for &(m, v) in stats {
            e.msg(4, |s| {
                s.num(1, m).num(if m == 1 { 7 } else { 3 }, v);
            });
        }
    });
}

/// The sample capture's bytes; `tpu`: with a TPU plane (whose Steps line then gives the steps; without it, the
/// GPU's kernels are grouped under the host's step annotations).
pub fn capture(tpu: bool) -> Vec<u8> {
    let ms = 1_000_000_000u64;
    let mut w = W::default();
    // Stat names every plane shares: 1 hlo_op, 2 program_id, 3 correlation_id, 4 _r, 5 hlo_category, 6 flops,
    // 7 bytes_accessed, 8 group; 10.. op names (ref values).
    let stat_names = |p: &mut W| {
        let names = ["hlo_op", "program_id", "correlation_id", "_r", "hlo_category", "flops", "bytes_accessed"];
        for (k, n) in names.iter().enumerate() {
            entry(p, 5, k as u64 + 1, n, |_| {});
        }
        entry(p, 5, 10, "fusion.1", |_| {});
        entry(p, 5, 11, "dot.2", |_| {});
    };
    w.msg(1, |p| {
        p.num(1, 1).str(2, "/host:CPU");
        p.msg(3, |l| {
            l.str(2, "python3").num(3, 1_000);
            for k in 0..4 {
                event(l, 1, k * 10 * ms, 9 * ms, &[(4, 1)]);
                event(l, 2, k * 10 * ms + ms, ms, &[(3, k + 1)]);
            }
        });
        entry(p, 4, 1, "train", |_| {});
        entry(p, 4, 2, "cuLaunchKernel", |_| {});
        stat_names(p);
    });
    w.msg(1, |p| {
        p.num(1, 2).str(2, "/device:GPU:0");
        p.msg(3, |l| {
            l.str(2, "Stream #1(Kernel)").num(3, 1_000);
            for k in 0..4 {
                event(l, 1, k * 10 * ms + 2 * ms, 3 * ms, &[(1, 10), (2, 0), (3, k + 1)]);
            }
        });
        entry(p, 4, 1, "fusion_kernel", |_| {});
        stat_names(p);
    });
    w.msg(if tpu { 1 } else { 15 }, |p| {
        p.num(1, 3).str(2, "/device:TPU:0");
        p.msg(3, |l| {
            l.str(2, "XLA Ops").num(3, 1_000);
            for k in 0..4 {
                event(l, 1, k * 10 * ms, 5 * ms, &[]);
                event(l, 2, k * 10 * ms + ms, 2 * ms, &[]);
            }
        });
        p.msg(3, |l| {
            l.str(2, "Steps").num(3, 1_000);
            for k in 0..4 {
                event(l, 3, k * 10 * ms, 10 * ms, &[]);
            }
        });
        for (id, name, short) in [(1, "%fusion.1 = fusion(...)", "fusion.1"), (2, "%dot.2 = dot(...)", "dot.2")] {
            p.msg(4, |m| {
                m.num(1, id).msg(2, |v| {
                    v.num(1, id).str(2, name).str(4, short);
                    v.msg(5, |s| {
                        s.num(1, 5).str(5, "convolution");
                    });
                    v.msg(5, |s| {
                        s.num(1, 6).double(2, 1e9);
                    });
                    v.msg(5, |s| {
                        s.num(1, 2).num(3, 7);
                    });
                });
            });
        }
        entry(p, 4, 3, "1", |_| {});
        stat_names(p);
        p.msg(6, |s| {
            s.num(1, 7).double(2, 1640.0);
        });
    });
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

/// Analyzes the sample capture with and without its TPU plane, with the timeline, through a small read window
/// (every path of the reading too): the number of events found.
pub fn analyze_sample(mut timeline: Option<&mut dyn crate::timeline::TimelineSink>) -> usize {
    let mut n = 0;
    for tpu in [true, false] {
        let t = timeline.as_mut().map(|t| &mut **t as &mut dyn crate::timeline::TimelineSink);
        n += analyze_reader(&InMemory(capture(tpu)), t, 4 << 10).map_or(0, |(s, _)| s.event_count);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::analyze_bytes;
    use crate::output::types::{Hardware, StepSource};

    #[test]
    fn the_sample_takes_the_paths_of_real_captures() {
        assert_eq!(analyze_sample(None), 24 + 12);
        let s = analyze_bytes(&capture(true), 1, &|_, _| {}).unwrap();
        assert_eq!(
            (s.overview.hardware, s.overview.step_source, s.steps.len()),
            (Hardware::Gpu, StepSource::Device, 4)
        );
        let mut names: Vec<_> = s.ops.iter().map(|o| (o.name.as_str(), o.count)).collect();
        names.sort();
        assert_eq!(names, [("dot.2", 4), ("fusion.1", 4), ("fusion.1", 4)]);
        let s = analyze_bytes(&capture(false), 1, &|_, _| {}).unwrap();
        assert_eq!((s.overview.step_source, s.steps.len(), s.ops.len()), (StepSource::Annotations, 4, 1));
    }
}
