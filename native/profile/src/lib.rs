//! The profile analysis of TPU Workbench, the only one it has: an XSpace capture (`*.xplane.pb`) to its op table
//! (xprof's hlo_stats), steps, overview, hosts side by side, the run view's timeline and a Chrome trace. Built
//! natively for `tpw profile` (dist/tpw-profile) and as WebAssembly (dist/profile.wasm) for the extension's
//! profile worker and `node bin/tpw.js profile`: one implementation, two targets.
//!
//! Function size: the steps run once per plane or per line (a plane's metadata, a line's decode, each collector's
//! `line`, the summary's step finders) are kept out of line (`#[inline(never)]`, marked "kept small"). Inlined,
//! they made WebAssembly functions of 20–33 KB, and V8's optimizing compiler, which the extension's profile worker
//! runs on the hot functions as it warms up, holds memory in proportion to a function's size (12.7 MB for the
//! 33 KB plane decoder) for each of the several it compiles at once: the worker's peak was ~20 MB higher
//! (BENCHMARKS.md, `profiles-wasm`). The calls are per line or plane, never per event.
// Loops index several columns at once.
#![allow(clippy::needless_range_loop)]
pub mod analyze;
pub mod chips;
pub mod cli;
pub mod decode;
pub mod devices;
pub mod hlo_categories;
pub mod hosts;
pub mod intern;
pub mod intervals;
#[cfg(unix)]
pub mod mapped;
#[cfg(unix)]
pub mod native;
pub mod op_stats;
pub mod output;
pub mod sample;
pub mod source;
pub mod step_groups;
pub mod steps;
pub mod timeline;
pub mod torch_trace;
pub mod trace;
pub mod view;
#[cfg(target_arch = "wasm32")]
pub mod wasm;
pub mod windows;
pub mod wire;
