//! Where a capture's bytes come from: the whole file in memory (the native executable maps it), or a file read
//! piece by piece through a window (the WebAssembly build, whose host reads the file for it). The decoder asks
//! the window for the bytes of one plane or one line at a time, so the WebAssembly build holds a window of the
//! file (or its largest line), never all of it.

use crate::wire::{Corrupt, Kind};

/// What went wrong with a capture.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Its bytes are not an XSpace where it says.
    Corrupt(Corrupt),
    /// It could not be read: why, in words ("permission denied").
    Io(String),
    /// Anything else about it, in words.
    Say(String),
}

impl From<Corrupt> for Fault {
    fn from(c: Corrupt) -> Self {
        Fault::Corrupt(c)
    }
}

impl Fault {
    /// The sentence for the user, after `FILE: `, for a file of `size` bytes.
    pub fn describe(&self, size: usize) -> String {
        match self {
            Fault::Corrupt(c) => c.describe(size),
            Fault::Io(why) => format!("cannot read the capture: {why}"),
            Fault::Say(s) => s.clone(),
        }
    }
}

/// A file read at any offset (the host's file in the WebAssembly build).
pub trait ReadAt {
    fn size(&self) -> usize;
    /// Fills `buf` from file offset `off`; returns how many bytes it read (fewer only at the end of the file).
    fn read_at(&self, off: usize, buf: &mut [u8]) -> Result<usize, String>;
}

/// The bytes the decoder asks for, by file offset.
pub struct Window<'a> {
    whole: Option<&'a [u8]>,
    src: Option<&'a dyn ReadAt>,
    size: usize,
    /// Bytes [start, start + filled) of the file are in buf.
    buf: Vec<u8>,
    start: usize,
    filled: usize,
    cap: usize,
}

impl<'a> Window<'a> {
    /// Every byte of the file, in memory.
    pub fn whole(bytes: &'a [u8]) -> Self {
        Window { whole: Some(bytes), src: None, size: bytes.len(), buf: vec![], start: 0, filled: 0, cap: 0 }
    }

    /// The file read `cap` bytes at a time (more where one request is bigger).
    pub fn reading(src: &'a dyn ReadAt, cap: usize) -> Self {
        Window { whole: None, src: Some(src), size: src.size(), buf: vec![], start: 0, filled: 0, cap: cap.max(16) }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// The file's bytes [start, end), which must lie in the file (else a fault at `start`).
    pub fn get(&mut self, start: usize, end: usize) -> Result<&[u8], Fault> {
        if end > self.size || start > end {
            return Err(Fault::Corrupt(Corrupt { at: start, kind: Kind::PastEnd { end } }));
        }
        if let Some(b) = self.whole {
            return Ok(&b[start..end]);
        }
        if start < self.start || end > self.start + self.filled {
            self.fill(start, end)?;
        }
        Ok(&self.buf[start - self.start..end - self.start])
    }

    /// Up to `n` bytes from `start` (fewer at the end of the file).
    pub fn get_up_to(&mut self, start: usize, n: usize) -> Result<&[u8], Fault> {
        let end = start.saturating_add(n).min(self.size);
        self.get(start.min(end), end)
    }

    fn fill(&mut self, start: usize, end: usize) -> Result<(), Fault> {
        let Some(src) = self.src else { return Ok(()) };
        let n = (end - start).max(self.cap).min(self.size - start);
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        let mut done = 0;
        while done < n {
            let got = src.read_at(start + done, &mut self.buf[done..n]).map_err(Fault::Io)?;
            if got == 0 {
                break;
            }
            done += got;
        }
        self.start = start;
        self.filled = done;
        if start + done < end {
            // The file shrank while it was read.
            return Err(Fault::Corrupt(Corrupt { at: start, kind: Kind::PastEnd { end: self.size + 1 } }));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Bytes read through ReadAt, counting the reads.
    pub(crate) struct Bytes(pub Vec<u8>, pub std::cell::Cell<usize>);

    impl ReadAt for Bytes {
        fn size(&self) -> usize {
            self.0.len()
        }
        fn read_at(&self, off: usize, buf: &mut [u8]) -> Result<usize, String> {
            self.1.set(self.1.get() + 1);
            // Short reads (at most 1000 bytes): the window must go on reading.
            let n = buf.len().min(self.0.len() - off).min(1000);
            buf[..n].copy_from_slice(&self.0[off..off + n]);
            Ok(n)
        }
    }

    #[test]
    fn reads_a_window_and_keeps_it() {
        let src = Bytes((0..100u8).collect(), Default::default());
        let mut w = Window::reading(&src, 32);
        assert_eq!(w.get(10, 12).unwrap(), &[10, 11]);
        let reads = src.1.get();
        assert_eq!(w.get(20, 40).unwrap(), &(20..40).collect::<Vec<u8>>()[..]);
        assert_eq!(src.1.get(), reads, "within the window: no read");
        assert_eq!(w.get(50, 100).unwrap().len(), 50, "bigger than the window: read whole");
        assert_eq!(w.get_up_to(95, 10).unwrap(), &[95, 96, 97, 98, 99]);
        assert!(matches!(w.get(90, 101), Err(Fault::Corrupt(Corrupt { at: 90, kind: Kind::PastEnd { end: 101 } }))));
    }
}
