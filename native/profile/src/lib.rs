//! `tpw profile` as a native executable. Modules are ports of extension/src/core/profiles (the run view's
//! analysis) and extension/src/cli/profile-command.ts; test/unit/cli-profile-native.test.ts holds the two to the
//! same bytes on every capture.
pub mod view;
