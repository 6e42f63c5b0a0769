//! merge_ops: the op table of several OpStats partials.

use super::{category_from_name, exact_total, OpPartial, ACC_STRIDE};
use crate::hlo_categories::{Categories, FastMap};
use crate::output::types::{OpRow, UnattributedKernels};

/// The op table of several partials (threads, or the captures of one host): rows merged by (program, name),
/// categories and module names resolved from any partial's HLO, host rows kept only when no device ran an op.
/// bound_by and intensity are left for the devices' roofline.
pub fn merge_ops(parts: &[&OpPartial], mut unattributed: Option<&mut UnattributedKernels>) -> Vec<OpRow> {
    let mut hlo: FastMap<&str, &Categories> = FastMap::default();
    let mut modules: FastMap<&str, &str> = FastMap::default();
    for p in parts {
        // A later partial's program wins; a module name: the first.
        for (k, v) in &p.hlo {
            hlo.insert(k, v);
        }
        for (k, v) in &p.modules {
            modules.entry(k).or_insert(v);
        }
    }
    let any_device = parts.iter().any(|p| p.rows.iter().any(|r| !r.host));
    let mut out: Vec<OpRow> = Vec::new();
    let mut index: FastMap<String, usize> = FastMap::default();
    let mut key = String::new();
    // Exact sums (add_exact) of the parts' exact sums, made µs once at the end, so that the table does not depend
    // on how the planes were split between threads: total ps, self ps, flops, bytes, a hi/lo pair each.
    let mut sums: Vec<f64> = Vec::new();
    let mut unattributed_ps = [0.0; 2];
    const S: usize = ACC_STRIDE;
    for p in parts {
        let a = &p.acc;
        for (k, r) in p.rows.iter().enumerate() {
            if r.host && any_device {
                continue;
            }
            let program = hlo.get(r.program.as_str());
            if r.kernel && program.is_some_and(|c| !c.contains_key(r.name.as_str())) {
                if let Some(u) = unattributed.as_deref_mut() {
                    u.count += a[S * k] as u64;
                    unattributed_ps[0] += a[S * k + 3];
                    unattributed_ps[1] += a[S * k + 4];
                    u.names.add(&r.name, a[S * k] as u64);
                }
                continue;
            }
            key.clear();
            key.push_str(&r.program);
            key.push('\0');
            key.push_str(&r.name);
            let j = match index.get(key.as_str()) {
                Some(&j) => j,
                None => {
                    let category = if !r.category.is_empty() {
                        r.category.clone()
                    } else {
                        match program.and_then(|c| c.get(r.name.as_str())).filter(|c| !c.is_empty()) {
                            Some(c) => c.to_string(),
                            None => category_from_name(&r.name),
                        }
                    };
                    let module = if !r.module.is_empty() {
                        r.module.clone()
                    } else {
                        modules.get(r.program.as_str()).map_or(String::new(), |m| m.to_string())
                    };
                    out.push(OpRow {
                        program: r.program.clone(),
                        name: r.name.clone(),
                        module,
                        category,
                        ..OpRow::default()
                    });
                    index.insert(key.clone(), out.len() - 1);
                    sums.extend_from_slice(&[0.0; 8]);
                    out.len() - 1
                }
            };
            let row = &mut out[j];
            row.count += a[S * k] as u64;
            for m in 0..8 {
                sums[8 * j + m] += a[S * k + 1 + m];
            }
        }
    }
    for (j, row) in out.iter_mut().enumerate() {
        row.total_us = exact_total(&sums, 8 * j) / 1e6;
        row.self_us = exact_total(&sums, 8 * j + 2) / 1e6;
        row.flops = exact_total(&sums, 8 * j + 4);
        row.bytes = exact_total(&sums, 8 * j + 6);
    }
    if let Some(u) = unattributed {
        u.self_us += exact_total(&unattributed_ps, 0) / 1e6;
    }
    // Stable, by descending self time.
    out.sort_by(|a, b| b.self_us.total_cmp(&a.self_us));
    out
}
