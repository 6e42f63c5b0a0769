//! dist/tpw-profile: `tpw profile` as a native executable. bin/tpw runs it for `tpw profile` with the whole argv
//! (`profile …`), because node's own start is longer than reading most captures. It hands the invocation,
//! unchanged, to the node CLI (bin/tpw.js beside dist/) only where the command table answers: --help and flags
//! that `tpw profile` does not take.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{exit, Command};
use tpw_profile::cli::profile_main;
use tpw_profile::native::NativeFiles;

extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
    fn raise(sig: i32) -> i32;
}
const SIG_DFL: usize = 0;

/// bin/tpw.js beside this executable's folder.
fn node_cli() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().unwrap_or(Path::new("/"));
    dir.parent().unwrap_or(Path::new("/")).join("bin").join("tpw.js")
}

/// Runs the node CLI on `args`, passing this terminal on: its exit status. TPW_NODE names the node to use (tests,
/// and machines where it is not on the PATH).
fn run_node(args: &[OsString]) -> i32 {
    let node = std::env::var_os("TPW_NODE").filter(|n| !n.is_empty()).unwrap_or_else(|| "node".into());
    let Ok(status) = Command::new(node).arg(node_cli()).args(args).status() else {
        let line: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let msg =
            format!("tpw: `tpw {}` needs node, which was not found (set TPW_NODE to its path).\n", line.join(" "));
        write_or_exit(&mut io::stderr().lock(), &msg);
        return 1;
    };
    if let Some(code) = status.code() {
        return code;
    }
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        // Die of the same signal, as a shell would see node die (Rust ignores SIGPIPE: restore its default first).
        unsafe {
            signal(sig, SIG_DFL);
            raise(sig);
        }
    }
    1
}

/// Writes all of `s`; a reader that closed its end (`tpw profile … | head -1`) has all it wanted: exit 0.
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
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    // An argument that is not UTF-8 is node's to read.
    let argv: Option<Vec<String>> = args.iter().map(|a| a.to_str().map(str::to_owned)).collect();
    let answer = match &argv {
        Some(argv) if argv.first().is_some_and(|a| a == "profile") => profile_main(&argv[1..], &NativeFiles),
        _ => None,
    };
    let code = match answer {
        Some(o) => {
            write_or_exit(&mut io::stdout().lock(), &o.out);
            write_or_exit(&mut io::stderr().lock(), &o.err);
            o.code
        }
        None => run_node(&args),
    };
    exit(code);
}
