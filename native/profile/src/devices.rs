//! The devices of a capture for the overview: their type and peak rates (from the planes' own stats), how busy
//! each was, and the steps a device marks itself (a TPU's `Steps` line, which xprof takes step time from first).

use crate::chips::{bound_by, chip_peaks};
use crate::intervals::IntervalUnion;
use crate::output::types::{BoundBy, Hardware, OpRow, ProfileOverview, StepBreakdown, StepSource};
use crate::view::{LineView, PlaneView, StatValue};
use crate::windows::window_steps;
use std::collections::HashMap;

#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub name: String,
    pub hardware: Hardware,
    pub device_type: String,
    pub peak_tflops: f64,
    pub hbm_gbs: f64,
    pub busy_us: f64,
    pub active_us: f64,
}

/// What the planes said about their devices.
#[derive(Default, Clone)]
pub struct DevicePartial {
    pub devices: Vec<DeviceInfo>,
    /// Each device's Steps line: flat [start0, end0, ...] in µs.
    pub steps: Vec<Vec<f64>>,
}

/// `/device:TPU:0`, `/device:GPU:3` (not TPU_NON_CORE, SparseCore or custom planes): the hardware, if one.
pub fn device_plane(name: &str) -> Option<Hardware> {
    let rest = name.strip_prefix("/device:")?;
    let (hw, digits) = if let Some(d) = rest.strip_prefix("TPU:") {
        (Hardware::Tpu, d)
    } else if let Some(d) = rest.strip_prefix("GPU:") {
        (Hardware::Gpu, d)
    } else {
        return None;
    };
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(hw)
}

fn num(v: Option<&StatValue>) -> f64 {
    let x = match v {
        Some(StatValue::Num(x)) => *x,
        Some(StatValue::Str(s)) => s.trim().parse().unwrap_or(f64::NAN),
        None => f64::NAN,
    };
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

/// A plane stat as text.
fn string_of(v: Option<&StatValue>) -> Option<String> {
    v.map(|v| match v {
        StatValue::Num(x) => x.to_string(),
        StatValue::Str(s) => s.clone(),
    })
}

/// A GPU plane's device type as xprof's overview names it (xprof's GpuModelName): NVIDIA by architecture, AMD
/// by gfx version, plain 'GPU' when the plane names no vendor.
pub fn gpu_model_name(st: &HashMap<String, StatValue>) -> String {
    let vendor = string_of(st.get("device_vendor")).unwrap_or_default();
    let major = num(st.get("compute_cap_major"));
    let minor = num(st.get("compute_cap_minor"));
    if vendor == "Nvidia" {
        let name = match major {
            2.0 => Some("Fermi"),
            3.0 => Some("Kepler"),
            5.0 => Some("Maxwell"),
            6.0 => Some("Pascal"),
            7.0 => Some(if minor < 5.0 { "Volta" } else { "Turing" }),
            8.0 => Some(if minor < 9.0 { "Ampere" } else { "Ada Lovelace" }),
            9.0 => Some("Hopper"),
            10.0 => Some("Blackwell"),
            _ => None,
        };
        return match name {
            Some(n) => format!("Nvidia GPU ({n})"),
            None => "Nvidia GPU".to_string(),
        };
    }
    if vendor == "AMD" {
        let device = string_of(st.get("gpu_device_name")).unwrap_or_default();
        let is_gfx =
            device.len() >= 6 && device.starts_with("gfx") && device[3..].bytes().all(|b| b.is_ascii_hexdigit());
        let gfx = if is_gfx {
            device
        } else if major == 9.0 && minor == 4.0 {
            "gfx942".to_string()
        } else if major == 9.0 && minor == 5.0 {
            "gfx950".to_string()
        } else {
            String::new()
        };
        if !gfx.is_empty() {
            return format!("AMD GPU - {gfx}");
        }
        return if (9.0..=11.0).contains(&major) {
            format!("AMD GPU - gfx-{major}XX series")
        } else {
            "AMD GPU".to_string()
        };
    }
    "GPU".to_string()
}

#[derive(Default)]
pub struct DeviceStats {
    devices: Vec<DeviceInfo>,
    steps: Vec<Vec<f64>>,
    current: Option<usize>,
    union: Option<IntervalUnion>,
}

impl DeviceStats {
    pub fn plane(&mut self, p: &PlaneView) {
        self.flush();
        let Some(hardware) = device_plane(&p.name) else { return };
        let st = &p.stats;
        let device_type = string_of(st.get("device_type_string")).unwrap_or_else(|| {
            if hardware == Hardware::Gpu {
                gpu_model_name(st)
            } else {
                "TPU".to_string()
            }
        });
        // The chip's peaks by its model name where the plane gives one (NVIDIA H200), which the type does not.
        let table =
            chip_peaks(&string_of(st.get("gpu_device_name")).unwrap_or_default()).or_else(|| chip_peaks(&device_type));
        let bw = num(st.get("memory_bandwidth")) / 1e9;
        let or = |a: f64, b: f64| if a != 0.0 && !a.is_nan() { a } else { b };
        let peak_tflops = or(num(st.get("peak_teraflops_per_second")), table.as_ref().map_or(0.0, |t| t.peak_tflops));
        let hbm_gbs =
            or(or(num(st.get("peak_hbm_bw_gigabytes_per_second")), bw), table.as_ref().map_or(0.0, |t| t.hbm_gbs));
        self.devices.push(DeviceInfo {
            name: p.name.clone(),
            hardware,
            device_type,
            peak_tflops,
            hbm_gbs,
            busy_us: 0.0,
            active_us: 0.0,
        });
        self.current = Some(self.devices.len() - 1);
        self.union = Some(IntervalUnion::new());
    }

    /// The busy intervals (µs, sorted) of one line of the current device.
    pub fn busy_run(&mut self, flat: &[f64]) {
        if let Some(u) = self.union.as_mut() {
            if !flat.is_empty() {
                u.push_run(flat);
            }
        }
    }

    #[inline(never)] // kept small: lib.rs, "Function size"
    pub fn line(&mut self, l: &LineView) {
        if self.current.is_none() || l.name != "Steps" || l.count == 0 {
            return;
        }
        let mut w = Vec::with_capacity(2 * l.count);
        for i in 0..l.count {
            let s = (l.timestamp_ns + l.offset_ps[i] / 1000.0) / 1000.0;
            w.push(s);
            w.push(s + l.duration_ps[i] / 1e6);
        }
        self.steps.push(w);
    }

    pub fn partial(&mut self) -> DevicePartial {
        self.flush();
        DevicePartial { devices: std::mem::take(&mut self.devices), steps: std::mem::take(&mut self.steps) }
    }

    fn flush(&mut self) {
        if let (Some(c), Some(mut u)) = (self.current, self.union.take()) {
            let u = u.result();
            let d = &mut self.devices[c];
            let mut k = 0;
            while k < u.len() {
                d.busy_us += u[k + 1] - u[k];
                k += 2;
            }
            if !u.is_empty() {
                d.active_us = u[u.len() - 1] - u[0];
            }
        }
        self.current = None;
        self.union = None;
    }
}

/// Steps from the devices' Steps lines: step k takes the window of the device whose step k was longest, as xprof
/// takes the slowest core's (the devices' clocks need not agree, so windows are not merged).
#[inline(never)] // kept small: lib.rs, "Function size"
pub fn device_steps(per_device: &[Vec<f64>], busy: &[f64]) -> Vec<StepBreakdown> {
    let n = per_device.iter().map(Vec::len).min().unwrap_or(0);
    let mut windows = vec![];
    let mut k = 0usize;
    while k + 1 < n {
        let mut slowest = &per_device[0];
        for w in &per_device[1..] {
            if w[k + 1] - w[k] > slowest[k + 1] - slowest[k] {
                slowest = w;
            }
        }
        windows.push(slowest[k]);
        windows.push(slowest[k + 1]);
        k += 2;
    }
    window_steps(&windows, busy)
}

/// The overview of the devices, and each op's roofline point on their chip.
#[inline(never)] // kept small: lib.rs, "Function size"
pub fn overview_of(
    parts: &[&DevicePartial],
    host_count: usize,
    ops: &mut [OpRow],
    step_source: StepSource,
) -> ProfileOverview {
    let devices: Vec<&DeviceInfo> = parts.iter().flat_map(|p| p.devices.iter()).collect();
    let first = devices.first();
    let busy_us = devices.iter().fold(0.0, |a, d| a + d.busy_us);
    let active_us = devices.iter().fold(0.0, |a, d| a + d.active_us);
    let peak_tflops = first.map_or(0.0, |d| d.peak_tflops);
    let hbm_gbs = first.map_or(0.0, |d| d.hbm_gbs);
    // Only on TPU, whose op events carry their FLOPs and bytes: a GPU op's come from XLA's cost analysis, which
    // this does not run, so it gets no roofline point rather than a wrong one.
    let roofline = first.is_some_and(|d| d.hardware == Hardware::Tpu);
    for o in ops.iter_mut() {
        o.intensity = if o.bytes > 0.0 { o.flops / o.bytes } else { 0.0 };
        o.bound_by = if roofline { bound_by(o.flops, o.bytes, peak_tflops, hbm_gbs) } else { BoundBy::None };
    }
    ProfileOverview {
        hardware: first.map_or(Hardware::Cpu, |d| d.hardware),
        device_type: first.map_or(String::new(), |d| d.device_type.clone()),
        device_count: devices.len(),
        host_count,
        peak_tflops,
        hbm_gbs,
        busy_us,
        active_us,
        idle_percent: if active_us > 0.0 { 100.0 * (1.0 - busy_us / active_us) } else { 0.0 },
        step_source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_planes() {
        assert_eq!(device_plane("/device:TPU:0"), Some(Hardware::Tpu));
        assert_eq!(device_plane("/device:GPU:12"), Some(Hardware::Gpu));
        assert_eq!(device_plane("/device:TPU_NON_CORE:0"), None);
        assert_eq!(device_plane("/device:TPU:"), None);
    }
}
