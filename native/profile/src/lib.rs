//! `tpw profile` as a native executable. Modules are ports of extension/src/core/profiles (the run view's
//! analysis) and extension/src/cli/profile-command.ts; test/unit/cli-profile-native.test.ts holds the two to the
//! same bytes on every capture.
// Loops index several columns at once, and `!(a < b)` is how the TypeScript treats NaN: both on purpose.
#![allow(clippy::needless_range_loop, clippy::neg_cmp_op_on_partial_ord)]
pub mod analyze;
pub mod chips;
pub mod cli;
pub mod decode;
pub mod devices;
pub mod hlo_categories;
pub mod hosts;
pub mod intern;
pub mod intervals;
pub mod jsfmt;
pub mod jsmath;
pub mod mapped;
pub mod op_stats;
pub mod step_groups;
pub mod steps;
pub mod view;
pub mod windows;
pub mod wire;
