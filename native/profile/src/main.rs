//! dist/tpw-profile: `tpw profile` as a native executable (a port of extension/src/cli/profile-native.ts). bin/tpw
//! runs it for `tpw profile` with the whole argv (`profile …`), because node's own start is longer than reading
//! most captures.
//!
//! It hands the invocation, unchanged, to the node CLI (bin/tpw.js beside dist/) where node answers better:
//! anything that is not `tpw profile` as the command table declares it (--help, an unknown flag), a directory it
//! cannot read, and a capture it cannot analyze (node words that error as the full CLI does).

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{exit, Command};
use tpw_profile::cli::{profile_main, Answer};

extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
    fn raise(sig: i32) -> i32;
}
const SIG_DFL: usize = 0;

/// bin/tpw.js beside this executable's folder (path.join(dirname(execPath), '..', 'bin', 'tpw.js')).
fn node_cli() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().unwrap_or(Path::new("/"));
    dir.parent().unwrap_or(Path::new("/")).join("bin").join("tpw.js")
}

/// Runs the node CLI on `args`, passing this terminal on; its exit status, or None where node could not be
/// started. TPW_NODE names the node to use (tests, and machines where it is not on the PATH).
fn run_node(args: &[OsString]) -> Option<i32> {
    let node = std::env::var_os("TPW_NODE").filter(|n| !n.is_empty()).unwrap_or_else(|| "node".into());
    let status = Command::new(node).arg(node_cli()).args(args).status().ok()?;
    if let Some(code) = status.code() {
        return Some(code);
    }
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        // Die of the same signal, as a shell would see node die (Rust ignores SIGPIPE: restore its default first).
        unsafe {
            signal(sig, SIG_DFL);
            raise(sig);
        }
    }
    Some(1)
}

fn no_node(args: &[OsString]) -> i32 {
    let line: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    write_or_exit(
        &mut io::stderr().lock(),
        &format!("tpw: `tpw {}` needs node, which was not found (set TPW_NODE to its path).\n", line.join(" ")),
    );
    1
}

/// Writes all of `s`; a reader that closed its end (`tpw profile … | head -1`) has all it wanted: exit 0, as the
/// node CLI does (closed-pipe.ts).
fn write_or_exit(w: &mut dyn Write, s: &str) {
    if let Err(e) = w.write_all(s.as_bytes()).and_then(|_| w.flush()) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            exit(0);
        }
        let _ = writeln!(io::stderr(), "tpw: {e}");
        exit(1);
    }
}

fn main() {
    // A panic while analyzing hands the capture to node (analyze.rs), which answers it: no trace on stderr then,
    // unless TPW_NATIVE_DEBUG asks for one.
    if std::env::var_os("TPW_NATIVE_DEBUG").is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    // An argument that is not UTF-8 is node's to read (it would decode it its own way).
    let argv: Option<Vec<String>> = args.iter().map(|a| a.to_str().map(str::to_owned)).collect();
    let code = match argv {
        Some(argv) if argv.first().is_some_and(|a| a == "profile") => {
            let (mut out, mut err) = (String::new(), String::new());
            match profile_main(&argv[1..], tpw_profile::analyze::analyze_file, &mut out, &mut err) {
                Answer::Exit(code) => {
                    write_or_exit(&mut io::stdout().lock(), &out);
                    write_or_exit(&mut io::stderr().lock(), &err);
                    code
                }
                Answer::ToNode => run_node(&args).unwrap_or_else(|| no_node(&args)),
                Answer::AnalysisFailed(line) => run_node(&args).unwrap_or_else(|| {
                    write_or_exit(&mut io::stderr().lock(), &format!("{line}\n"));
                    1
                }),
            }
        }
        _ => run_node(&args).unwrap_or_else(|| no_node(&args)),
    };
    exit(code);
}
