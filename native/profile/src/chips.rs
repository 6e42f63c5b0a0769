//! Peak compute and memory bandwidth of accelerators, for the roofline of the op table: an op's operational
//! intensity (FLOPs per byte of HBM traffic) against the chip's ridge point (peak FLOP/s ÷ HBM bandwidth) says
//! whether memory or compute bounds it.
//!
//! A capture's own plane stats win when present; this table fills in what is missing. Figures are per chip,
//! dense bf16, from the vendors' published specifications (TPU7x's 4,614 TFLOP/s is FP8, half of it bf16).

use crate::output::types::BoundBy;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChipPeaks {
    /// Display name.
    pub name: &'static str,
    /// Dense bf16 TFLOP/s per chip.
    pub peak_tflops: f64,
    /// HBM bandwidth, GB/s per chip.
    pub hbm_gbs: f64,
}

pub const CHIPS_AS_OF: &str = "2026-11";

const fn chip(name: &'static str, peak_tflops: f64, hbm_gbs: f64) -> ChipPeaks {
    ChipPeaks { name, peak_tflops, hbm_gbs }
}

/// Each chip by the substrings that name it in a device type, matched ignoring ASCII case; first match wins.
const CHIPS: &[(&[&str], ChipPeaks)] = &[
    (&["tpu7x", "tpu 7x", "ironwood"], chip("TPU7x (Ironwood)", 2307.0, 7370.0)),
    (&["tpu v6lite", "tpu v6 lite", "tpu v6e", "tpu v6 e", "trillium"], chip("TPU v6e (Trillium)", 918.0, 1640.0)),
    (&["tpu v5p"], chip("TPU v5p", 459.0, 2765.0)),
    (&["tpu v5lite", "tpu v5 lite", "tpu v5e", "tpu v5 e"], chip("TPU v5e", 197.0, 819.0)),
    (&["tpu v4"], chip("TPU v4", 275.0, 1228.0)),
    (&["b200"], chip("NVIDIA B200", 2250.0, 8000.0)),
    (&["h200"], chip("NVIDIA H200", 989.0, 4800.0)),
    (&["h100"], chip("NVIDIA H100 SXM", 989.0, 3350.0)),
    (&["a100"], chip("NVIDIA A100 80GB", 312.0, 2039.0)),
    (&["mi355", "gfx950"], chip("AMD MI355X", 2500.0, 8000.0)),
    (&["mi300x", "gfx942"], chip("AMD MI300X", 1307.0, 5300.0)),
];

/// Whether `hay` contains `needle` (lowercase ASCII) ignoring ASCII case.
fn contains_ignore_ascii_case(hay: &[u8], needle: &[u8]) -> bool {
    needle.len() <= hay.len() && hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

/// The peaks of the chip a device's type string names (TPU: device_type_string; GPU: the vendor's model name).
pub fn chip_peaks(device_type: &str) -> Option<ChipPeaks> {
    let hay = device_type.as_bytes();
    CHIPS.iter().find(|(alts, _)| alts.iter().any(|a| contains_ignore_ascii_case(hay, a.as_bytes()))).map(|(_, c)| *c)
}

/// "Compute" or "HBM" as xprof's bound_by reads. An op with neither FLOPs nor bytes the capture knows of (a
/// Pallas kernel: XLA has no cost model for tpu_custom_call) uses no resource at all: "Unknown".
pub fn bound_by(flops: f64, bytes: f64, peak_tflops: f64, hbm_gbs: f64) -> BoundBy {
    if bytes <= 0.0
        || peak_tflops <= 0.0
        || hbm_gbs <= 0.0
        || bytes.is_nan()
        || peak_tflops.is_nan()
        || hbm_gbs.is_nan()
    {
        return if flops > 0.0 {
            BoundBy::Compute
        } else if bytes > 0.0 {
            BoundBy::Hbm
        } else {
            BoundBy::Unknown
        };
    }
    let ridge = (peak_tflops * 1e12) / (hbm_gbs * 1e9);
    if flops / bytes >= ridge {
        BoundBy::Compute
    } else {
        BoundBy::Hbm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(t: &str) -> Option<&'static str> {
        chip_peaks(t).map(|c| c.name)
    }

    #[test]
    fn chips_by_type() {
        assert_eq!(name("TPU v6 Lite"), Some("TPU v6e (Trillium)"));
        assert_eq!(name("TPU v6lite"), Some("TPU v6e (Trillium)"));
        assert_eq!(name("tpu V6E"), Some("TPU v6e (Trillium)"));
        assert_eq!(name("TPU v5 lite"), Some("TPU v5e"));
        assert_eq!(name("TPU v5e"), Some("TPU v5e"));
        assert_eq!(name("TPU v5p"), Some("TPU v5p"));
        assert_eq!(name("TPU v5"), None);
        assert_eq!(name("TPU  v5e"), None);
        assert_eq!(name("TPU v4"), Some("TPU v4"));
        assert_eq!(name("TPU7x"), Some("TPU7x (Ironwood)"));
        assert_eq!(name("tpu 7X"), Some("TPU7x (Ironwood)"));
        assert_eq!(name("NVIDIA H100 80GB HBM3"), Some("NVIDIA H100 SXM"));
        assert_eq!(name("NVIDIA H200"), Some("NVIDIA H200"));
        assert_eq!(name("nvidia b200"), Some("NVIDIA B200"));
        assert_eq!(name("NVIDIA A100-SXM4-80GB"), Some("NVIDIA A100 80GB"));
        assert_eq!(name("AMD Instinct MI300X"), Some("AMD MI300X"));
        assert_eq!(name("gfx942"), Some("AMD MI300X"));
        assert_eq!(name("GFX950"), Some("AMD MI355X"));
        assert_eq!(name(""), None);
        // The first match wins: a name with two chips is the earlier row's.
        assert_eq!(name("H100 or B200"), Some("NVIDIA B200"));
        // Non-ASCII letters do not fold onto ASCII ones (U+0131 dotless i uppercases to I).
        assert_eq!(name("\u{0131}ronwood"), None);
        let c = chip_peaks("TPU v5 lite").unwrap();
        assert_eq!((c.peak_tflops, c.hbm_gbs), (197.0, 819.0));
    }

    #[test]
    fn bound_by_cases() {
        assert_eq!(bound_by(0.0, 0.0, 918.0, 1640.0), BoundBy::Unknown);
        assert_eq!(bound_by(10.0, 0.0, 918.0, 1640.0), BoundBy::Compute);
        assert_eq!(bound_by(0.0, 10.0, 0.0, 1640.0), BoundBy::Hbm);
        assert_eq!(bound_by(0.0, 10.0, 918.0, f64::NAN), BoundBy::Hbm);
        assert_eq!(bound_by(f64::NAN, f64::NAN, 918.0, 1640.0), BoundBy::Unknown);
        // Ridge of v6e: 918e12 / 1640e9 ≈ 559.76 FLOP/B.
        assert_eq!(bound_by(560.0, 1.0, 918.0, 1640.0), BoundBy::Compute);
        assert_eq!(bound_by(559.0, 1.0, 918.0, 1640.0), BoundBy::Hbm);
        // Exactly at the ridge: compute (>=). 2000e12 / 1000e9 = 2000.
        assert_eq!(bound_by(2000.0, 1.0, 2000.0, 1000.0), BoundBy::Compute);
        assert_eq!(bound_by(0.0, 1.0, 918.0, 1640.0), BoundBy::Hbm);
    }
}
