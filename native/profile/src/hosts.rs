//! The captures of several hosts of one run side by side: each host's step time and idle share, the slowest host
//! named, and one op table for all (rows of the same program and op summed). `tpw profile DIR` prints it, and the
//! run view's "Compare hosts" shows it (ProfileHosts).

use crate::output::types::{Hardware, HostRow, OpRow, ProfileHosts, ProfileSummary, StepBreakdown, StepSource};
use std::collections::HashMap;

pub struct HostProfile {
    pub file: String,
    pub summary: ProfileSummary,
}

/// The run's devices.
#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    pub hardware: Hardware,
    pub device_type: String,
    pub device_count: usize,
    pub host_count: usize,
    pub peak_tflops: f64,
    pub hbm_gbs: f64,
    pub busy_percent: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Combined {
    pub device: Device,
    /// The first host's step source other than none.
    pub step_source: StepSource,
    /// Step k of the run (index k + 1): its slowest host's step k.
    pub steps: Vec<StepBreakdown>,
    pub ops: Vec<OpRow>,
    pub hosts: Vec<HostRow>,
    /// The host with the longest average step, when more than one host has steps.
    pub slowest: Option<String>,
}

/// A host's name: what its capture says, else its file name without `.xplane.pb`.
pub fn host_name(h: &HostProfile) -> String {
    match h.summary.hosts.first() {
        Some(n) if !n.is_empty() => n.clone(),
        _ => {
            let b = h.file.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            b.strip_suffix(".xplane.pb").or_else(|| b.strip_suffix(".pt.trace.json")).unwrap_or(b).to_owned()
        }
    }
}

pub fn combine_hosts(hosts: &[HostProfile]) -> Combined {
    let rows: Vec<HostRow> = hosts
        .iter()
        .map(|h| {
            let s = &h.summary.steps;
            HostRow {
                host: host_name(h),
                location: h.file.clone(),
                steps: s.len(),
                avg_step_us: if s.is_empty() {
                    0.0
                } else {
                    s.iter().map(|st| st.total_us).sum::<f64>() / s.len() as f64
                },
                idle_percent: h.summary.overview.idle_percent,
                busy_us: h.summary.overview.busy_us,
            }
        })
        .collect();
    let with_steps: Vec<&HostRow> = rows.iter().filter(|r| r.steps > 0).collect();
    let slowest = (with_steps.len() > 1)
        .then(|| with_steps.iter().fold(with_steps[0], |a, &r| if r.avg_step_us > a.avg_step_us { r } else { a }))
        .map(|r| r.host.clone());
    // Step k of the run lasts as long as its slowest host's step k (hosts wait for each other at the collectives).
    let n = hosts.iter().map(|h| h.summary.steps.len()).max().unwrap_or(0);
    let steps = (0..n)
        .map(|k| {
            let at_k = hosts.iter().filter_map(|h| h.summary.steps.get(k));
            let s = at_k.fold(None::<&StepBreakdown>, |a, b| match a {
                Some(a) if a.total_us >= b.total_us => Some(a),
                _ => Some(b),
            });
            StepBreakdown { index: k + 1, ..s.cloned().unwrap_or_default() }
        })
        .collect();
    // Rows of the same program and op, in first-seen order.
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut ops: Vec<OpRow> = Vec::new();
    for o in hosts.iter().flat_map(|h| &h.summary.ops) {
        match index.get(&(o.program.clone(), o.name.clone())) {
            Some(&i) => {
                let row = &mut ops[i];
                row.count += o.count;
                row.self_us += o.self_us;
                row.total_us += o.total_us;
                row.flops += o.flops;
                row.bytes += o.bytes;
            }
            None => {
                index.insert((o.program.clone(), o.name.clone()), ops.len());
                ops.push(o.clone());
            }
        }
    }
    ops.sort_by(|a, b| b.self_us.total_cmp(&a.self_us));
    let ov: Vec<_> = hosts.iter().map(|h| &h.summary.overview).collect();
    let first = ov.iter().find(|o| o.device_count > 0).or(ov.first()).copied();
    let busy: f64 = ov.iter().map(|o| o.busy_us).sum();
    let active: f64 = ov.iter().map(|o| o.active_us).sum();
    Combined {
        device: Device {
            hardware: first.map_or(Hardware::Cpu, |o| o.hardware),
            device_type: first.map_or(String::new(), |o| o.device_type.clone()),
            device_count: ov.iter().map(|o| o.device_count).sum(),
            host_count: hosts.len(),
            peak_tflops: first.map_or(0.0, |o| o.peak_tflops),
            hbm_gbs: first.map_or(0.0, |o| o.hbm_gbs),
            busy_percent: if active > 0.0 { (100.0 * busy) / active } else { 0.0 },
        },
        step_source: ov.iter().map(|o| o.step_source).find(|&s| s != StepSource::None).unwrap_or_default(),
        steps,
        ops,
        hosts: rows,
        slowest,
    }
}

/// The run view's hosts side by side: the 200 ops with the most self time, and the captures that failed.
pub fn hosts_message(hosts: &[HostProfile], errors: Vec<String>) -> ProfileHosts {
    let c = combine_hosts(hosts);
    ProfileHosts { hosts: c.hosts, slowest: c.slowest, ops: c.ops.into_iter().take(200).collect(), errors }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::types::ProfileOverview;

    fn op(program: &str, name: &str, self_us: f64) -> OpRow {
        OpRow {
            program: program.into(),
            name: name.into(),
            count: 1,
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
        let h = host("dir/w1.xplane.pb", "", vec![], vec![], Default::default());
        assert_eq!(host_name(&h), "w1");
        let h = host("dir/w1.xplane.pb.xplane.pb", "", vec![], vec![], Default::default());
        assert_eq!(host_name(&h), "w1.xplane.pb");
        let h = host("dir/w1.xplane.pb", "tpu-host-0", vec![], vec![], Default::default());
        assert_eq!(host_name(&h), "tpu-host-0");
    }

    #[test]
    fn combined() {
        let cpu = ProfileOverview { busy_us: 1.0, active_us: 4.0, idle_percent: 75.0, ..Default::default() };
        let tpu = ProfileOverview {
            hardware: Hardware::Tpu,
            device_type: "TPU v6 Lite".into(),
            device_count: 4,
            peak_tflops: 918.0,
            hbm_gbs: 1640.0,
            busy_us: 3.0,
            active_us: 4.0,
            idle_percent: 25.0,
            step_source: StepSource::Device,
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
                hardware: Hardware::Tpu,
                device_type: "TPU v6 Lite".into(),
                device_count: 4,
                host_count: 2,
                peak_tflops: 918.0,
                hbm_gbs: 1640.0,
                busy_percent: 50.0,
            }
        );
        assert_eq!(c.step_source, StepSource::Device);
        assert_eq!((c.hosts[0].host.as_str(), c.hosts[0].steps, c.hosts[0].avg_step_us), ("a", 2, 20.0));
        assert_eq!(c.hosts[1].host, "hb");
        // Equal averages: the first stays the slowest.
        assert_eq!(c.slowest.as_deref(), Some("a"));
        assert_eq!((c.steps[0].index, c.steps[0].total_us, c.steps[0].start_us), (1, 20.0, 1.0));
        assert_eq!((c.steps[1].index, c.steps[1].total_us), (2, 30.0));
        let names: Vec<_> = c.ops.iter().map(|o| (o.program.as_str(), o.name.as_str(), o.self_us, o.count)).collect();
        assert_eq!(names, vec![("1", "y", 10.0, 2), ("1", "x", 5.0, 1), ("2", "x", 2.0, 1)]);
        assert_eq!(c.ops[0].flops, 4.0);
    }

    #[test]
    fn empty() {
        let c = combine_hosts(&[]);
        assert_eq!((c.device.hardware, c.device.busy_percent, c.step_source), (Hardware::Cpu, 0.0, StepSource::None));
        assert!(c.steps.is_empty() && c.ops.is_empty() && c.slowest.is_none());
    }
}
