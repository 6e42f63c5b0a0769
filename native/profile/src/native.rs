//! How the native executable reaches files: the OS, a capture mapped into memory and split over threads.

use crate::analyze::analyze_bytes;
use crate::cli::{Entry, Files};
use crate::mapped::Capture;
use crate::output::types::ProfileSummary;
use std::fs;

/// How many threads analyze a capture of `size` bytes: TPW_THREADS when set (tests, benches), else the cores
/// this process may use, at most one per 2 MiB and at most 8.
pub fn threads_for(size: usize) -> usize {
    let set = std::env::var("TPW_THREADS").ok().and_then(|v| v.parse::<usize>().ok()).filter(|&n| n > 0);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    set.unwrap_or_else(|| cores.min(8).min(size / (2 << 20)).max(1))
}

/// An OS error in the words both builds use (the WebAssembly host maps node's error codes to the same).
pub fn io_words(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        NotFound => "no such file".into(),
        PermissionDenied => "permission denied".into(),
        IsADirectory => "it is a directory".into(),
        _ => format!("error {}", e.raw_os_error().unwrap_or(0)),
    }
}

fn entry(t: fs::FileType) -> Entry {
    if t.is_dir() {
        Entry::Dir
    } else if t.is_file() {
        Entry::File
    } else {
        Entry::Other
    }
}

pub struct NativeFiles;

impl Files for NativeFiles {
    fn kind(&self, path: &str) -> Option<Entry> {
        fs::metadata(path).ok().map(|m| entry(m.file_type()))
    }

    fn list(&self, dir: &str) -> Result<Vec<(String, Entry)>, String> {
        let mut out = vec![];
        for e in fs::read_dir(dir).map_err(|e| io_words(&e))? {
            let e = e.map_err(|e| io_words(&e))?;
            let kind = e.file_type().map(entry).unwrap_or(Entry::Other);
            out.push((e.file_name().to_string_lossy().into_owned(), kind));
        }
        Ok(out)
    }

    fn analyze(&self, path: &str) -> Result<ProfileSummary, String> {
        let capture = Capture::open(path).map_err(|e| format!("{path}: cannot read the capture: {}", io_words(&e)))?;
        let buf = capture.bytes();
        analyze_bytes(buf, threads_for(buf.len()), &|s, e| capture.release(s, e))
            .map_err(|f| format!("{path}: {}", f.describe(buf.len())))
    }
}
