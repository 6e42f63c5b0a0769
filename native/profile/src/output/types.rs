//! The records the analysis hands the run view (its messages: a capture's summary, hosts side by side), declared
//! once here: their JSON is written from these declarations, and so is their TypeScript
//! (protocol/profile-summary.generated.ts, which the extension and the webview import).

use super::json::{literals, record, Counts, Declared, Json, ToJson, Ts};

literals! {
    /// What ran the ops.
    Hardware { Cpu = "CPU", Tpu = "TPU", Gpu = "GPU" }
}

literals! {
    /// Where the steps came from: a device's Steps line, the device work that step annotations group (xprof's
    /// step grouping), in a capture with no device the host work that step annotations group,
    /// torch.profiler's step annotations (`ProfilerStep#N`, in its Chrome trace), or nowhere.
    StepSource { None = "none", Device = "device", Annotations = "annotations", Host = "host", Profiler = "profiler" }
}

literals! {
    /// As xprof's bound_by ('Unknown': the op has neither FLOPs nor bytes); '' where there is no roofline (no TPU).
    BoundBy { None = "", Compute = "Compute", Hbm = "HBM", Unknown = "Unknown" }
}

record! {
    /// One step of the capture, and where its time went.
    StepBreakdown {
        /// 1-based index of the step within the capture.
        index: usize = "index",
        /// µs from the capture's first event.
        start_us: f64 = "startUs" | "start_us",
        total_us: f64 = "totalUs" | "total_us",
        compile_us: f64 = "compileUs" | "compile_us",
        execute_us: f64 = "executeUs" | "execute_us",
        transfer_us: f64 = "transferUs" | "transfer_us",
        /// Host work in torch_xla that is none of the above (lazy tracing, graph building).
        host_us: f64 = "hostUs" | "host_us",
        /// The rest of the step: the Python thread outside torch_xla (data loading, logging, idle).
        other_us: f64 = "otherUs" | "other_us",
    }
}

record! {
    /// One HLO op of one program, over the capture (a row of xprof's hlo_stats).
    OpRow {
        /// The XLA program's id (exact decimal digits; '' when the capture names none).
        program: String = "program",
        name: String = "name",
        category: String = "category",
        module: String = "module",
        count: u64 = "count",
        self_us: f64 = "selfUs",
        total_us: f64 = "totalUs",
        flops: f64 = "flops",
        bytes: f64 = "bytes",
        /// FLOPs per byte of memory traffic (0 when the capture gives no bytes).
        intensity: f64 = "intensity",
        bound_by: BoundBy = "boundBy",
    }
}

record! {
    /// What ran where: the devices of the capture and how busy they were.
    ProfileOverview {
        hardware: Hardware = "hardware",
        /// As xprof's overview names it ('TPU v6 Lite', 'Nvidia GPU (Hopper)', 'AMD GPU - gfx942'); '' on CPU.
        device_type: String = "deviceType",
        device_count: usize = "deviceCount",
        host_count: usize = "hostCount",
        /// Peak dense TFLOP/s of one chip (the capture's figure, else the chip table's); 0: unknown.
        peak_tflops: f64 = "peakTflops",
        /// HBM GB/s of one chip, likewise.
        hbm_gbs: f64 = "hbmGBs",
        /// Summed over devices: time an op ran.
        busy_us: f64 = "busyUs",
        /// Summed over devices: the span from each device's first op to its last.
        active_us: f64 = "activeUs",
        /// 100 × (1 − busy ÷ active); 0 when nothing ran.
        idle_percent: f64 = "idlePercent",
        step_source: StepSource = "stepSource",
    }
}

record! {
    /// Device kernels that named an HLO op their program's HLO does not hold, left out of the op table as xprof
    /// leaves them out: XLA names the CUDA command buffer (`command_buffer_1`) on every kernel it ran inside one.
    UnattributedKernels {
        count: u64 = "count",
        self_us: f64 = "selfUs",
        /// The op names they gave, with the number of kernels under each.
        names: Counts = "names",
    }
}

record! {
    /// A plane of the capture.
    PlaneSummary {
        name: String = "name",
        lines: usize = "lines",
        events: usize = "events",
    }
}

record! {
    /// The sentences the run view and `tpw profile` both show about the capture.
    ProfileNotes {
        /// Where the steps came from, as a phrase ("the devices' Steps lines"); when there are none, why.
        steps: String = "steps",
        /// What became of kernels no op was charged for, and how to see them per op; '' when there were none.
        unattributed: String = "unattributed",
    }
}

/// The timeline's names; its lines' columns travel beside the JSON (see TIMELINE_LINE).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub names: Vec<String>,
}

impl ToJson for Timeline {
    fn write(&self, j: &mut Json) {
        j.begin('{');
        j.field("names", &self.names);
        j.field("lines", &Vec::<f64>::new());
        j.end('}');
    }
}

impl Ts for Timeline {
    fn ts() -> String {
        "{ names: string[]; lines: TimelineLine[] }".into()
    }
}

/// The TypeScript of one timeline line as the run view receives it: its columns are typed arrays, which the
/// analysis hands over beside the JSON (see wasm.rs), one line at a time.
pub const TIMELINE_LINE: &str = "/** One line of the timeline: its events, sorted by start, as columns. */
export interface TimelineLine {
  plane: string;
  name: string;
  /** µs from the capture's first event. */
  start: Float64Array;
  dur: Float64Array;
  /** Index into ProfileSummary.timeline.names. */
  name_: Int32Array;
  /** Nesting depth (0 = outermost), for drawing nested events as rows. */
  depth: Uint8Array;
}
";

record! {
    /// A capture's analysis, as the run view shows it.
    ProfileSummary {
        hosts: Vec<String> = "hosts",
        planes: Vec<PlaneSummary> = "planes",
        event_count: usize = "eventCount",
        span_us: f64 = "spanUs",
        steps: Vec<StepBreakdown> = "steps",
        ops: Vec<OpRow> = "ops",
        unattributed_kernels: UnattributedKernels = "unattributedKernels",
        overview: ProfileOverview = "overview",
        notes: ProfileNotes = "notes",
        timeline: Timeline = "timeline",
        warnings: Vec<String> = "warnings",
    }
}

record! {
    /// One host of a run, beside the others.
    HostRow {
        host: String = "host",
        /// Where its capture is, for display.
        location: String = "location",
        steps: usize = "steps",
        avg_step_us: f64 = "avgStepUs",
        idle_percent: f64 = "idlePercent",
        busy_us: f64 = "busyUs",
    }
}

record! {
    /// Several hosts' captures side by side: each host's steps and idle share, the slowest, the ops of all combined.
    ProfileHosts {
        hosts: Vec<HostRow> = "hosts",
        /// The host with the longest average step (when more than one has steps).
        slowest: Option<String> = "slowest",
        /// The 200 ops with the most self time, rows of the same program and op summed over the hosts.
        ops: Vec<OpRow> = "ops",
        /// Captures that could not be read, each with why.
        errors: Vec<String> = "errors",
    }
}

/// protocol/profile-summary.generated.ts: every record above, in TypeScript.
pub fn typescript() -> String {
    let mut s = String::from(
        "// Generated from native/profile/src/output/types.rs (the analysis's output, declared once, in Rust): do not\n\
         // edit. Regenerate: TPW_WRITE_TYPES=1 npm run test:native -- output::types\n\n",
    );
    for (name, union) in [("Hardware", Hardware::ts()), ("StepSource", StepSource::ts()), ("BoundBy", BoundBy::ts())] {
        s.push_str(&format!("export type {name} = {union};\n"));
    }
    for d in [
        StepBreakdown::declaration(),
        OpRow::declaration(),
        ProfileOverview::declaration(),
        UnattributedKernels::declaration(),
        PlaneSummary::declaration(),
        ProfileNotes::declaration(),
        TIMELINE_LINE.to_string(),
        ProfileSummary::declaration(),
        HostRow::declaration(),
        ProfileHosts::declaration(),
    ] {
        s.push('\n');
        s.push_str(&d);
    }
    // The unions by name where a record uses them.
    for (name, union) in [("Hardware", Hardware::ts()), ("StepSource", StepSource::ts()), ("BoundBy", BoundBy::ts())] {
        s = s.replace(&format!(": {union};"), &format!(": {name};"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated TypeScript is what these declarations say (TPW_WRITE_TYPES=1 writes it).
    #[test]
    fn generated_typescript_is_current() {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../protocol/profile-summary.generated.ts");
        let want = typescript();
        if std::env::var_os("TPW_WRITE_TYPES").is_some() {
            std::fs::write(&file, &want).expect("write protocol/profile-summary.generated.ts");
        }
        let have = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            have == want,
            "protocol/profile-summary.generated.ts is stale: TPW_WRITE_TYPES=1 npm run test:native -- output::types"
        );
    }
}
