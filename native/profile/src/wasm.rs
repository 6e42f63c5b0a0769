//! The WebAssembly build's interface (`wasm32-unknown-unknown`, dist/profile.wasm): what its host (node: the
//! extension's profile worker, and `node bin/tpw.js profile`) calls, and what it calls back for files, since a
//! WebAssembly module has none. extension/src/core/profiles/wasm-host.ts is the other side.
//!
//! Strings cross as (pointer, length) of UTF-8 in this module's memory. Each call leaves its answer (JSON, text)
//! in an output buffer (`out_ptr`, `out_len`), and `tpw profile`'s standard error in a second one.

use crate::analyze::{analyze_reader, DECODE_WINDOW};
use crate::cli::{profile_main, Entry, Files};
use crate::hosts::{hosts_message, HostProfile};
use crate::output::json::{to_json, Json, ToJson};
use crate::output::types::ProfileSummary;
use crate::source::{Fault, ReadAt};
use crate::timeline::TimelineSink;
use crate::trace::{export_trace, Out};
use std::cell::RefCell;

#[link(wasm_import_module = "tpw")]
extern "C" {
    /// A file opened for reading: its descriptor, or a negative error code (see io_words).
    fn open(path: *const u8, len: usize) -> i32;
    fn close(fd: i32);
    fn file_size(fd: i32) -> f64;
    /// Bytes read into ptr, or a negative error code.
    fn read_at(fd: i32, offset: f64, ptr: *mut u8, len: usize) -> i32;
    /// What is at a path: -1 nothing, 0 a file, 1 a directory, 2 something else.
    fn kind(path: *const u8, len: usize) -> i32;
    /// Lists a directory into the host's staging buffer ("KIND NAME\0" per entry): its length, or a negative code.
    fn list(path: *const u8, len: usize) -> i32;
    /// Copies the staging buffer to ptr.
    fn take(ptr: *mut u8);
    /// Writes to a descriptor the host opened for writing: 0, or a negative code.
    fn write(fd: i32, ptr: *const u8, len: usize) -> i32;
    fn timeline_line(
        plane: *const u8,
        plane_len: usize,
        name: *const u8,
        name_len: usize,
        start: *const f64,
        dur: *const f64,
        name_id: *const i32,
        depth: *const u8,
        n: usize,
    );
    fn timeline_drop();
}

/// A negative code from the host, in the words the native build uses for the same OS error.
fn io_words(code: i32) -> String {
    match code {
        -1 => "no such file".into(),
        -2 => "permission denied".into(),
        -3 => "it is a directory".into(),
        c => format!("error {}", -c - 100),
    }
}

thread_local! {
    static OUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static ERR: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn answer(out: &str, err: &str) {
    OUT.with(|o| *o.borrow_mut() = out.as_bytes().to_vec());
    ERR.with(|e| *e.borrow_mut() = err.as_bytes().to_vec());
}

#[no_mangle]
pub extern "C" fn out_ptr() -> *const u8 {
    OUT.with(|o| o.borrow().as_ptr())
}
#[no_mangle]
pub extern "C" fn out_len() -> usize {
    OUT.with(|o| o.borrow().len())
}
#[no_mangle]
pub extern "C" fn err_ptr() -> *const u8 {
    ERR.with(|e| e.borrow().as_ptr())
}
#[no_mangle]
pub extern "C" fn err_len() -> usize {
    ERR.with(|e| e.borrow().len())
}

/// Memory for the host to write an argument into (freed by `free`).
#[no_mangle]
pub extern "C" fn alloc(len: usize) -> *mut u8 {
    let mut v = Vec::<u8>::with_capacity(len.max(1));
    let p = v.as_mut_ptr();
    std::mem::forget(v);
    p
}

/// # Safety
/// `ptr` and `len` as `alloc` gave and was asked for.
#[no_mangle]
pub unsafe extern "C" fn free(ptr: *mut u8, len: usize) {
    drop(Vec::from_raw_parts(ptr, 0, len.max(1)));
}

/// # Safety
/// `ptr` points at `len` bytes the host wrote.
unsafe fn text<'a>(ptr: *const u8, len: usize) -> &'a str {
    std::str::from_utf8(std::slice::from_raw_parts(ptr, len)).unwrap_or("")
}

struct HostFile {
    fd: i32,
    size: usize,
}

impl HostFile {
    fn open(path: &str) -> Result<HostFile, String> {
        let fd = unsafe { open(path.as_ptr(), path.len()) };
        if fd < 0 {
            return Err(io_words(fd));
        }
        Ok(HostFile { fd, size: unsafe { file_size(fd) } as usize })
    }
}

impl Drop for HostFile {
    fn drop(&mut self) {
        unsafe { close(self.fd) };
    }
}

impl ReadAt for HostFile {
    fn size(&self) -> usize {
        self.size
    }
    fn read_at(&self, off: usize, buf: &mut [u8]) -> Result<usize, String> {
        let n = unsafe { read_at(self.fd, off as f64, buf.as_mut_ptr(), buf.len()) };
        usize::try_from(n).map_err(|_| io_words(n))
    }
}

/// Hands each timeline line to the host as it is made.
struct HostTimeline;

impl TimelineSink for HostTimeline {
    fn line(&mut self, plane: &str, name: &str, start: &[f64], dur: &[f64], name_id: &[i32], depth: &[u8]) {
        unsafe {
            let n = start.len();
            let (p, l) = (plane.as_ptr(), plane.len());
            timeline_line(
                p,
                l,
                name.as_ptr(),
                name.len(),
                start.as_ptr(),
                dur.as_ptr(),
                name_id.as_ptr(),
                depth.as_ptr(),
                n,
            )
        }
    }
    fn drop_all(&mut self) {
        unsafe { timeline_drop() }
    }
}

/// The capture's summary, or the sentence saying why not (naming the file).
fn summary_of(path: &str, timeline: Option<&mut dyn TimelineSink>) -> Result<(ProfileSummary, f64), String> {
    let f = HostFile::open(path).map_err(|why| format!("{path}: {}", Fault::Io(why).describe(0)))?;
    analyze_reader(&f, timeline, DECODE_WINDOW).map_err(|e| format!("{path}: {}", e.describe(f.size)))
}

/// Leaves the run view's answer for one capture in the output buffer: `{"t0": µs, "summary": ProfileSummary}`
/// (the timeline's lines went to `timeline_line`, their starts absolute: t0 is what to subtract) and 0, or the
/// sentence saying why not and 1.
fn answer_summary(result: Result<(ProfileSummary, f64), String>) -> i32 {
    match result {
        Ok((summary, t0)) => {
            struct Answer<'a>(f64, &'a ProfileSummary);
            impl ToJson for Answer<'_> {
                fn write(&self, j: &mut Json) {
                    j.begin('{');
                    j.field("t0", &self.0);
                    j.field("summary", self.1);
                    j.end('}');
                }
            }
            answer(&to_json(&Answer(t0, &summary), 0), "");
            0
        }
        Err(e) => {
            answer(&e, "");
            1
        }
    }
}

/// The run view's analysis of one capture (see answer_summary).
///
/// # Safety
/// `path` points at `len` bytes of UTF-8.
#[no_mangle]
pub unsafe extern "C" fn analyze(path: *const u8, len: usize, timeline: i32) -> i32 {
    let mut sink = HostTimeline;
    let sink: Option<&mut dyn TimelineSink> = if timeline != 0 { Some(&mut sink) } else { None };
    answer_summary(summary_of(text(path, len), sink))
}

/// Several hosts' captures side by side (ProfileHosts JSON); `paths` are NUL-separated. A capture that cannot be
/// read is named in `errors`, not fatal.
///
/// # Safety
/// `paths` points at `len` bytes of UTF-8.
#[no_mangle]
pub unsafe extern "C" fn hosts(paths: *const u8, len: usize) -> i32 {
    let (mut ok, mut errors) = (vec![], vec![]);
    for path in text(paths, len).split('\0').filter(|p| !p.is_empty()) {
        match summary_of(path, None) {
            Ok((summary, _)) => ok.push(HostProfile { file: path.to_string(), summary }),
            Err(e) => errors.push(e),
        }
    }
    answer(&to_json(&hosts_message(&ok, errors), 0), "");
    0
}

struct HostOut(i32);

impl Out for HostOut {
    fn write(&mut self, b: &[u8]) -> Result<(), String> {
        let r = unsafe { write(self.0, b.as_ptr(), b.len()) };
        if r < 0 {
            Err(io_words(r))
        } else {
            Ok(())
        }
    }
}

/// The capture as Chrome trace JSON, written to the host's descriptor `out`: the event count is the output (0),
/// or the error (1).
///
/// # Safety
/// `path` points at `len` bytes of UTF-8.
#[no_mangle]
pub unsafe extern "C" fn trace(path: *const u8, len: usize, out: i32) -> i32 {
    let path = text(path, len);
    let result = HostFile::open(path)
        .map_err(|why| format!("{path}: {}", Fault::Io(why).describe(0)))
        .and_then(|f| export_trace(&f, &mut HostOut(out)).map_err(|e| format!("{path}: {}", e.describe(f.size))));
    match result {
        Ok(n) => {
            answer(&n.to_string(), "");
            0
        }
        Err(e) => {
            answer(&e, "");
            1
        }
    }
}

/// Files through the host.
struct HostFiles;

impl Files for HostFiles {
    fn kind(&self, path: &str) -> Option<Entry> {
        match unsafe { kind(path.as_ptr(), path.len()) } {
            0 => Some(Entry::File),
            1 => Some(Entry::Dir),
            2 => Some(Entry::Other),
            _ => None,
        }
    }

    fn list(&self, dir: &str) -> Result<Vec<(String, Entry)>, String> {
        let n = unsafe { list(dir.as_ptr(), dir.len()) };
        let n = usize::try_from(n).map_err(|_| io_words(n))?;
        let mut buf = vec![0u8; n];
        unsafe { take(buf.as_mut_ptr()) };
        let listing = String::from_utf8_lossy(&buf).into_owned();
        Ok(listing
            .split('\0')
            .filter_map(|e| {
                let (k, name) = e.split_once(' ')?;
                let kind = match k {
                    "0" => Entry::File,
                    "1" => Entry::Dir,
                    _ => Entry::Other,
                };
                Some((name.to_string(), kind))
            })
            .collect())
    }

    fn analyze(&self, path: &str) -> Result<ProfileSummary, String> {
        summary_of(path, None).map(|(s, _)| s)
    }
}

/// `tpw profile ARGV` (NUL-separated): its exit status, with its standard output and error in the two output
/// buffers; -1 where the full CLI answers (--help, a flag it does not take).
///
/// # Safety
/// `argv` points at `len` bytes of UTF-8.
#[no_mangle]
pub unsafe extern "C" fn cli(argv: *const u8, len: usize) -> i32 {
    let s = text(argv, len);
    let argv: Vec<String> = if s.is_empty() { vec![] } else { s.split('\0').map(str::to_string).collect() };
    match profile_main(&argv, &HostFiles) {
        Some(o) => {
            answer(&o.out, &o.err);
            o.code
        }
        None => -1,
    }
}

/// The sample capture (sample.rs) in its `form`-th form (of `sample::FORMS`, taken modulo their number) analyzed
/// and answered as `analyze` answers for a file, timeline and all: what the profile worker runs when it starts, so
/// that the functions a click calls are compiled, and the hot ones optimized, before the first capture a user opens.
#[no_mangle]
pub extern "C" fn warm(form: u32) -> i32 {
    let form = crate::sample::FORMS[form as usize % crate::sample::FORMS.len()];
    answer_summary(crate::sample::analyze_sample(form, Some(&mut HostTimeline)).map_err(|e| e.describe(0)))
}

/// How many forms the sample capture has (what `warm` and `sample_capture` take, modulo).
#[no_mangle]
pub extern "C" fn sample_forms() -> u32 {
    crate::sample::FORMS.len() as u32
}

/// The sample capture's bytes in its `form`-th form, in the output buffer (the host writes them to a file and
/// analyzes that, so that its warm-up runs a click's path, file reads included): their length.
#[no_mangle]
pub extern "C" fn sample_capture(form: u32) -> usize {
    let form = crate::sample::FORMS[form as usize % crate::sample::FORMS.len()];
    OUT.with(|o| {
        *o.borrow_mut() = crate::sample::capture(form);
        o.borrow().len()
    })
}
