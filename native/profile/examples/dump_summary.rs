//! Prints a capture's summary as JSON with the run view's (camelCase) keys and Rust's shortest round-trip
//! floats, for comparing field by field with the TypeScript analysis (test/bench and ad-hoc checks).
use tpw_profile::analyze::analyze_file;
use tpw_profile::view::*;

fn f(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else {
        "null".into()
    }
}
fn s(x: &str) -> String {
    let mut o = String::from("\"");
    for c in x.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o + "\""
}
fn step(x: &StepBreakdown) -> String {
    format!("{{\"index\":{},\"startUs\":{},\"totalUs\":{},\"compileUs\":{},\"executeUs\":{},\"transferUs\":{},\"hostUs\":{},\"otherUs\":{}}}",
        x.index, f(x.start_us), f(x.total_us), f(x.compile_us), f(x.execute_us), f(x.transfer_us), f(x.host_us), f(x.other_us))
}
fn op(o: &OpRow) -> String {
    format!("{{\"program\":{},\"name\":{},\"category\":{},\"module\":{},\"count\":{},\"selfUs\":{},\"totalUs\":{},\"flops\":{},\"bytes\":{},\"intensity\":{},\"boundBy\":{}}}",
        s(&o.program), s(&o.name), s(&o.category), s(&o.module), f(o.count), f(o.self_us), f(o.total_us), f(o.flops), f(o.bytes), f(o.intensity), s(o.bound_by))
}
fn main() {
    let file = std::env::args().nth(1).expect("FILE");
    let r = match analyze_file(&file) {
        Ok(r) => r,
        Err(e) => {
            println!("{{\"error\":{}}}", s(&format!("{e:?}")));
            return;
        }
    };
    let v = &r.overview;
    let names: Vec<String> = r.unattributed_kernels.names.iter().map(|(k, c)| format!("{}:{}", s(k), f(*c))).collect();
    println!("{{\"hosts\":[{}],\"planes\":[{}],\"eventCount\":{},\"spanUs\":{},\"steps\":[{}],\"ops\":[{}],\"unattributedKernels\":{{\"count\":{},\"selfUs\":{},\"names\":{{{}}}}},\"overview\":{{\"hardware\":{},\"deviceType\":{},\"deviceCount\":{},\"hostCount\":{},\"peakTflops\":{},\"hbmGBs\":{},\"busyUs\":{},\"activeUs\":{},\"idlePercent\":{},\"stepSource\":{}}},\"warnings\":[{}]}}",
        r.hosts.iter().map(|h| s(h)).collect::<Vec<_>>().join(","),
        r.planes.iter().map(|p| format!("{{\"name\":{},\"lines\":{},\"events\":{}}}", s(&p.name), p.lines, p.events)).collect::<Vec<_>>().join(","),
        r.event_count, f(r.span_us),
        r.steps.iter().map(step).collect::<Vec<_>>().join(","),
        r.ops.iter().map(op).collect::<Vec<_>>().join(","),
        f(r.unattributed_kernels.count), f(r.unattributed_kernels.self_us), names.join(","),
        s(v.hardware), s(&v.device_type), v.device_count, v.host_count, f(v.peak_tflops), f(v.hbm_gbs), f(v.busy_us), f(v.active_us), f(v.idle_percent), s(v.step_source),
        r.warnings.iter().map(|h| s(h)).collect::<Vec<_>>().join(","));
}
