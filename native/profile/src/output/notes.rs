//! The sentences `tpw profile` and the run view both show where a capture has no steps or leaves kernels out of
//! its op table, and how both write a time.

use super::types::{StepSource, UnattributedKernels};

/// µs as the CLI and the notes write it: seconds, milliseconds or µs, to 2, 2 and 1 decimals.
pub fn us(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} s", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.2} ms", x / 1e3)
    } else {
        format!("{x:.1} µs")
    }
}

/// Why a capture has no steps: the three sources the analysis looks for, none found.
pub const NO_STEPS_NOTE: &str =
    "No steps: no device has a Steps line, and no step annotation (jax.profiler.StepTraceAnnotation, \
     tf.profiler.experimental.Trace with step_num and _r=1, torch_xla's StepTrace) groups the device's work or, in a \
     capture with no device, host work, and torch.profiler marked no step (ProfilerStep#N: it does with a \
     schedule, at each prof.step()).";

/// Where the steps came from, as a phrase ("… steps (from PHRASE)"); where there are none, why.
pub fn steps_note(source: StepSource) -> String {
    match source {
        StepSource::Device => "the devices' Steps lines",
        StepSource::Annotations => "step annotations: the device work under each, as xprof groups it",
        StepSource::Host => "the host's step annotations (no device: XLA on CPU), as xprof groups them",
        StepSource::Profiler => "torch.profiler's step annotations (ProfilerStep#N)",
        StepSource::None => NO_STEPS_NOTE,
    }
    .to_string()
}

/// What became of kernels that no op was charged for, and how to see them per op; '' when there were none.
pub fn unattributed_note(u: &UnattributedKernels) -> String {
    if u.count == 0 {
        return String::new();
    }
    let mut names: Vec<&(String, u64)> = u.names.0.iter().collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.1));
    let listed: Vec<String> = names.iter().take(3).map(|(n, c)| format!("{n} ×{c}")).collect();
    let listed = listed.join(", ") + if names.len() > 3 { ", …" } else { "" };
    let mut s = format!(
        "{} kernels ({}) named an HLO op that their program's HLO does not hold ({listed}), so, as in xprof, no op is \
         charged for them.",
        u.count,
        us(u.self_us),
    );
    if names.iter().any(|(n, _)| n.starts_with("command_buffer")) {
        s.push_str(
            " XLA ran them inside CUDA command buffers (CUDA graphs), and the capture names the buffer, not the ops in \
             it. For per-op statistics, profile with XLA_FLAGS=--xla_gpu_enable_command_buffer= (each kernel then \
             launched on its own).",
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::json::Counts;

    #[test]
    fn notes() {
        assert_eq!((us(999.94), us(1234.5), us(2.5e6)), ("999.9 µs".into(), "1.23 ms".into(), "2.50 s".into()));
        assert_eq!(unattributed_note(&UnattributedKernels::default()), "");
        let u = UnattributedKernels {
            count: 7,
            self_us: 1500.0,
            names: Counts(vec![("a".into(), 1), ("command_buffer_1".into(), 3), ("b".into(), 2), ("c".into(), 1)]),
        };
        let n = unattributed_note(&u);
        assert!(n.starts_with("7 kernels (1.50 ms) named an HLO op that their program's HLO does not hold (command_buffer_1 ×3, b ×2, a ×1, …), so, as in xprof, no op is charged for them. XLA ran them inside CUDA command buffers"), "{n}");
        assert!(steps_note(StepSource::None).starts_with("No steps: "));
    }
}
