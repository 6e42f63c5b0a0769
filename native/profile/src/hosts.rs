//! The captures of several hosts of one run side by side (a port of extension/src/core/profiles/hosts.ts): each
//! host's step time and idle share, the slowest host named, and one op table for all (rows of the same program
//! and op summed). Field names are those `tpw profile --json` prints.

use crate::view::{OpRow, ProfileSummary, StepBreakdown};
use std::collections::HashMap;

pub struct HostProfile {
    pub file: String,
    pub summary: ProfileSummary,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HostRow {
    pub host: String,
    pub file: String,
    pub steps: usize,
    pub avg_step_us: f64,
    pub idle_percent: f64,
}

/// The run's devices (`device` of `--json`, in its key order).
#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    pub hardware: &'static str,
    pub device_type: String,
    pub device_count: usize,
    pub host_count: usize,
    pub peak_tflops: f64,
    pub hbm_gbs: f64,
    pub busy_percent: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CombinedProfile {
    pub device: Device,
    /// The first host's step source other than 'none', else 'none'.
    pub step_source: &'static str,
    /// Step k of the run (index k + 1): its slowest host's step k.
    pub steps: Vec<StepBreakdown>,
    pub ops: Vec<OpRow>,
    pub hosts: Vec<HostRow>,
    /// The host with the longest average step, when more than one host has steps.
    pub slowest: Option<String>,
}

/// `path.basename(p)` (POSIX): the part after the last '/', trailing slashes ignored.
pub fn basename(p: &str) -> &str {
    let t = p.trim_end_matches('/');
    match t.rfind('/') {
        Some(i) => &t[i + 1..],
        None => t,
    }
}

/// A host's name: what its capture says, else its file name without `.xplane.pb`.
pub fn host_name(h: &HostProfile) -> String {
    match h.summary.hosts.first() {
        Some(n) if !n.is_empty() => n.clone(),
        _ => {
            let b = basename(&h.file);
            b.strip_suffix(".xplane.pb").unwrap_or(b).to_owned()
        }
    }
}

pub fn combine_hosts(hosts: &[HostProfile]) -> CombinedProfile {
    let rows: Vec<HostRow> = hosts
        .iter()
        .map(|h| {
            let s = &h.summary.steps;
            HostRow {
                host: host_name(h),
                file: h.file.clone(),
                steps: s.len(),
                avg_step_us: if s.is_empty() {
                    0.0
                } else {
                    s.iter().fold(0.0, |a, st| a + st.total_us) / s.len() as f64
                },
                idle_percent: h.summary.overview.idle_percent,
            }
        })
        .collect();
    let with_steps: Vec<&HostRow> = rows.iter().filter(|r| r.steps > 0).collect();
    let slowest = if with_steps.len() > 1 {
        let mut a = with_steps[0];
        for &r in &with_steps[1..] {
            if r.avg_step_us > a.avg_step_us {
                a = r;
            }
        }
        Some(a.host.clone())
    } else {
        None
    };
    // Step k of the run lasts as long as its slowest host's step k (hosts wait for each other at the collectives).
    let n = hosts.iter().map(|h| h.summary.steps.len()).max().unwrap_or(0);
    let mut steps = Vec::with_capacity(n);
    for k in 0..n {
        let mut at_k = hosts.iter().filter_map(|h| h.summary.steps.get(k));
        let mut s = at_k.next().expect("some host has step k");
        for b in at_k {
            if b.total_us > s.total_us {
                s = b;
            }
        }
        steps.push(StepBreakdown { index: k + 1, ..s.clone() });
    }
    // Rows of the same program and op, in first-seen order (a JS Map keyed `${program}\0${name}`).
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut ops: Vec<OpRow> = Vec::new();
    let mut key = String::new();
    for h in hosts {
        for o in &h.summary.ops {
            key.clear();
            key.push_str(&o.program);
            key.push('\0');
            key.push_str(&o.name);
            match index.get(&key) {
                Some(&i) => {
                    let row = &mut ops[i];
                    row.count += o.count;
                    row.self_us += o.self_us;
                    row.total_us += o.total_us;
                    row.flops += o.flops;
                    row.bytes += o.bytes;
                }
                None => {
                    index.insert(key.clone(), ops.len());
                    ops.push(o.clone());
                }
            }
        }
    }
    // sort((a, b) => b.selfUs - a.selfUs): stable; a NaN difference counts as equal.
    ops.sort_by(|a, b| crate::jsmath::js_cmp(b.self_us - a.self_us));
    let ov: Vec<_> = hosts.iter().map(|h| &h.summary.overview).collect();
    let first = ov.iter().find(|o| o.device_count > 0).or(ov.first()).copied();
    let busy = ov.iter().fold(0.0, |a, o| a + o.busy_us);
    let active = ov.iter().fold(0.0, |a, o| a + o.active_us);
    CombinedProfile {
        device: Device {
            hardware: first.map_or("CPU", |o| o.hardware),
            device_type: first.map_or(String::new(), |o| o.device_type.clone()),
            device_count: ov.iter().map(|o| o.device_count).sum(),
            host_count: hosts.len(),
            peak_tflops: first.map_or(0.0, |o| o.peak_tflops),
            hbm_gbs: first.map_or(0.0, |o| o.hbm_gbs),
            busy_percent: if active > 0.0 { (100.0 * busy) / active } else { 0.0 },
        },
        step_source: ov.iter().find(|o| o.step_source != "none").map_or("none", |o| o.step_source),
        steps,
        ops,
        hosts: rows,
        slowest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::ProfileOverview;

    fn op(program: &str, name: &str, self_us: f64) -> OpRow {
        OpRow {
            program: program.into(),
            name: name.into(),
            count: 1.0,
            self_us,
            total_us: self_us,
            flops: 2.0,
            bytes: 3.0,
            ..Default::default()
        }
    }

    fn step(total_us: f64, start_us: f64) -> StepBreakdown {
        StepBreakdown { index: 9, start_us, total_us, execute_us: total_us, ..Default::default() }
    }

    fn host(file: &str, name: &str, steps: Vec<StepBreakdown>, ops: Vec<OpRow>, ov: ProfileOverview) -> HostProfile {
        let hosts = if name.is_empty() { vec![] } else { vec![name.to_owned()] };
        HostProfile {
            file: file.into(),
            summary: ProfileSummary { hosts, steps, ops, overview: ov, ..Default::default() },
        }
    }

    #[test]
    fn names() {
        assert_eq!(basename("a/b.xplane.pb/"), "b.xplane.pb");
        assert_eq!(basename("/"), "");
        assert_eq!(basename("x"), "x");
        let h = host("dir/w1.xplane.pb", "", vec![], vec![], Default::default());
        assert_eq!(host_name(&h), "w1");
        let h = host("dir/w1.xplane.pb.xplane.pb", "", vec![], vec![], Default::default());
        assert_eq!(host_name(&h), "w1.xplane.pb");
        let h = host("dir/w1.xplane.pb", "tpu-host-0", vec![], vec![], Default::default());
        assert_eq!(host_name(&h), "tpu-host-0");
    }

    #[test]
    fn combined() {
        let cpu = ProfileOverview {
            hardware: "CPU",
            busy_us: 1.0,
            active_us: 4.0,
            idle_percent: 75.0,
            step_source: "none",
            ..Default::default()
        };
        let tpu = ProfileOverview {
            hardware: "TPU",
            device_type: "TPU v6 Lite".into(),
            device_count: 4,
            peak_tflops: 918.0,
            hbm_gbs: 1640.0,
            busy_us: 3.0,
            active_us: 4.0,
            idle_percent: 25.0,
            step_source: "device",
            ..Default::default()
        };
        let a = host(
            "caps/a.xplane.pb",
            "",
            vec![step(10.0, 0.0), step(30.0, 10.0)],
            vec![op("1", "x", 5.0), op("1", "y", 1.0)],
            cpu,
        );
        let b = host("caps/b.xplane.pb", "hb", vec![step(20.0, 1.0)], vec![op("1", "y", 9.0), op("2", "x", 2.0)], tpu);
        let c = combine_hosts(&[a, b]);
        assert_eq!(
            c.device,
            Device {
                hardware: "TPU",
                device_type: "TPU v6 Lite".into(),
                device_count: 4,
                host_count: 2,
                peak_tflops: 918.0,
                hbm_gbs: 1640.0,
                busy_percent: 50.0,
            }
        );
        assert_eq!(c.step_source, "device");
        assert_eq!(
            c.hosts[0],
            HostRow {
                host: "a".into(),
                file: "caps/a.xplane.pb".into(),
                steps: 2,
                avg_step_us: 20.0,
                idle_percent: 75.0
            }
        );
        assert_eq!(c.hosts[1].host, "hb");
        // Equal averages: the first stays the slowest.
        assert_eq!(c.slowest.as_deref(), Some("a"));
        assert_eq!(c.steps.len(), 2);
        assert_eq!((c.steps[0].index, c.steps[0].total_us, c.steps[0].start_us), (1, 20.0, 1.0));
        assert_eq!((c.steps[1].index, c.steps[1].total_us), (2, 30.0));
        let names: Vec<_> = c.ops.iter().map(|o| (o.program.as_str(), o.name.as_str(), o.self_us, o.count)).collect();
        assert_eq!(names, vec![("1", "y", 10.0, 2.0), ("1", "x", 5.0, 1.0), ("2", "x", 2.0, 1.0)]);
        assert_eq!(c.ops[0].flops, 4.0);
    }

    #[test]
    fn empty() {
        let c = combine_hosts(&[]);
        assert_eq!(c.device.hardware, "CPU");
        assert_eq!(c.device.busy_percent, 0.0);
        assert_eq!(c.step_source, "none");
        assert!(c.steps.is_empty() && c.ops.is_empty() && c.slowest.is_none());
    }
}
