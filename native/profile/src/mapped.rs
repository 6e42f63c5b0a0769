//! A capture's bytes, mapped from the file rather than read into memory: reading 200 MB into a buffer cost a
//! third of the analysis (the kernel zeroes the buffer's pages, then copies the page cache into them), and
//! the mapping lets the pages of planes already analyzed be dropped (`release`), so that memory holds one
//! plane at a time rather than the whole file. Linux and macOS take the same calls; elsewhere, or when the
//! file cannot be mapped (a pipe, an empty file), its bytes are read.

use std::fs::File;
use std::io::Read;

pub struct Capture {
    map: Option<(*mut u8, usize)>,
    owned: Vec<u8>,
}

#[cfg(unix)]
mod sys {
    use std::os::raw::{c_int, c_long, c_void};
    extern "C" {
        pub fn mmap(addr: *mut c_void, len: usize, prot: c_int, flags: c_int, fd: c_int, off: c_long) -> *mut c_void;
        pub fn munmap(addr: *mut c_void, len: usize) -> c_int;
        pub fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
        pub fn sysconf(name: c_int) -> c_long;
    }
    pub const PROT_READ: c_int = 1;
    pub const MAP_PRIVATE: c_int = 2;
    pub const MADV_SEQUENTIAL: c_int = 2;
    pub const MADV_DONTNEED: c_int = 4;
    #[cfg(target_os = "linux")]
    pub const SC_PAGESIZE: c_int = 30;
    #[cfg(not(target_os = "linux"))]
    pub const SC_PAGESIZE: c_int = 29;
}

// SAFETY: the mapping is read-only and lives as long as the Capture; release() only tells the kernel it may drop
// pages (they read back from the file if touched again), so threads may share it.
unsafe impl Sync for Capture {}
unsafe impl Send for Capture {}

impl Capture {
    pub fn open(path: &str) -> std::io::Result<Capture> {
        let mut f = File::open(path)?;
        let len = f.metadata()?.len() as usize;
        #[cfg(unix)]
        if len > 0 && f.metadata()?.is_file() {
            use std::os::fd::AsRawFd;
            // SAFETY: a read-only private mapping of a file we hold open; the slice handed out lives no longer
            // than the Capture, which unmaps it on drop.
            let p = unsafe { sys::mmap(std::ptr::null_mut(), len, sys::PROT_READ, sys::MAP_PRIVATE, f.as_raw_fd(), 0) };
            if p as isize != -1 {
                unsafe { sys::madvise(p, len, sys::MADV_SEQUENTIAL) };
                return Ok(Capture { map: Some((p as *mut u8, len)), owned: Vec::new() });
            }
        }
        let mut owned = Vec::with_capacity(len);
        f.read_to_end(&mut owned)?;
        Ok(Capture { map: None, owned })
    }

    pub fn bytes(&self) -> &[u8] {
        match self.map {
            // SAFETY: see open().
            Some((p, len)) => unsafe { std::slice::from_raw_parts(p, len) },
            None => &self.owned,
        }
    }

    /// Drops the pages wholly inside [start, end) from memory (they are read again, from the file, if touched).
    pub fn release(&self, start: usize, end: usize) {
        #[cfg(unix)]
        if let Some((p, len)) = self.map {
            let page = unsafe { sys::sysconf(sys::SC_PAGESIZE) }.max(4096) as usize;
            let a = start.div_ceil(page) * page;
            let b = (end.min(len) / page) * page;
            if b > a {
                unsafe { sys::madvise(p.add(a) as *mut _, b - a, sys::MADV_DONTNEED) };
            }
        }
        let _ = (start, end);
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some((p, len)) = self.map {
            unsafe { sys::munmap(p as *mut _, len) };
        }
    }
}
