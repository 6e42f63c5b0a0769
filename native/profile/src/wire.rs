//! Protocol-buffer wire reading with the capture's byte offsets kept: a reader over some bytes of the file
//! knows where they start in it (`base`), so a fault names the byte it is at.

/// What is wrong at a place in the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A length or value runs past `end` (a file offset): past the end of its message, or of the file.
    PastEnd { end: usize },
    /// A tag with field number 0, or a wire type that does not exist (groups are not used by XSpace).
    BadTag(u64),
    /// Ten bytes without the end of a varint.
    BadVarint,
    /// A value no serializer writes (a metadata id that is not a whole number, a line bigger than memory).
    BadValue(&'static str),
}

/// The capture is truncated or corrupt at file offset `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt {
    pub at: usize,
    pub kind: Kind,
}

impl Corrupt {
    /// The sentence for the user (after `FILE: `), for a file of `size` bytes.
    pub fn describe(&self, size: usize) -> String {
        let at = self.at;
        match self.kind {
            Kind::PastEnd { end } if end > size => format!(
                "the profile is truncated or corrupt: a field at byte {at} runs past the end of the file ({size} bytes)"
            ),
            Kind::PastEnd { .. } => {
                format!("the profile is truncated or corrupt: a field at byte {at} runs past the end of its message")
            }
            Kind::BadTag(t) => format!("not a valid XSpace profile: invalid field tag {t} at byte {at}"),
            Kind::BadVarint => format!("not a valid XSpace profile: invalid varint at byte {at}"),
            Kind::BadValue(what) => format!("not a valid XSpace profile: {what} at byte {at}"),
        }
    }
}

pub type Res<T> = Result<T, Corrupt>;

/// A varint at buf[pos..] that must end before `end`: its value and where it ends. The error's place is `pos`
/// (relative, for the caller to make absolute).
#[inline(always)]
pub fn varint_at(buf: &[u8], pos: usize, end: usize) -> Result<(u64, usize), Kind> {
    if pos < end {
        let x = buf[pos];
        if x < 0x80 {
            return Ok((x as u64, pos + 1));
        }
        // Away from the end of the bytes (nearly always), ten can be read without a check each; where the varint
        // ends is checked against `end` after.
        if pos + 10 <= buf.len() {
            let b = &buf[pos..pos + 10];
            let mut v: u64 = (x & 0x7f) as u64;
            for (i, &x) in b.iter().enumerate().skip(1) {
                v |= ((x & 0x7f) as u64) << (7 * i);
                if x < 0x80 {
                    return if pos + i < end { Ok((v, pos + i + 1)) } else { Err(Kind::PastEnd { end: end + 1 }) };
                }
            }
            return Err(Kind::BadVarint);
        }
    }
    varint_slow(buf, pos, end)
}

#[cold]
fn varint_slow(buf: &[u8], pos: usize, end: usize) -> Result<(u64, usize), Kind> {
    let mut v: u64 = 0;
    for i in 0..10 {
        if pos + i >= end {
            return Err(Kind::PastEnd { end: end + 1 });
        }
        let b = buf[pos + i];
        v |= ((b & 0x7f) as u64).wrapping_shl(7 * i as u32);
        if b < 0x80 {
            return Ok((v, pos + i + 1));
        }
    }
    Err(Kind::BadVarint)
}

/// Reads the bytes buf[pos..end), which are the capture's bytes from file offset `base + 0`.
pub struct Reader<'a> {
    pub buf: &'a [u8],
    pub base: usize,
    pub pos: usize,
    pub end: usize,
    /// Where the field being read began (its tag): the place its faults are reported at.
    field: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], base: usize, pos: usize, end: usize) -> Self {
        Reader { buf, base, pos, end, field: pos }
    }

    /// The same bytes, from pos to end.
    pub fn sub(&self, pos: usize, end: usize) -> Reader<'a> {
        Reader::new(self.buf, self.base, pos, end)
    }

    pub fn more(&self) -> bool {
        self.pos < self.end
    }

    /// A fault of the field being read.
    pub fn fault(&self, kind: Kind) -> Corrupt {
        Corrupt { at: self.base + self.field, kind: absolute(kind, self.base) }
    }

    /// A fault at relative position `pos`.
    pub fn fault_at(&self, pos: usize, kind: Kind) -> Corrupt {
        Corrupt { at: self.base + pos, kind: absolute(kind, self.base) }
    }

    #[inline]
    pub fn varint(&mut self) -> Res<u64> {
        let (v, after) = varint_at(self.buf, self.pos, self.end).map_err(|k| self.fault(k))?;
        self.pos = after;
        Ok(v)
    }

    /// The next field's number and wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
    #[inline]
    pub fn tag(&mut self) -> Res<(u64, u8)> {
        self.field = self.pos;
        let t = self.varint()?;
        let (field, wire) = (t >> 3, (t & 7) as u8);
        if field == 0 || !matches!(wire, 0 | 1 | 2 | 5) {
            return Err(self.fault(Kind::BadTag(t)));
        }
        Ok((field, wire))
    }

    /// A length-delimited payload: its range [start, end) in buf.
    pub fn bytes(&mut self) -> Res<(usize, usize)> {
        let n = self.varint()?;
        let start = self.pos;
        let end = start.saturating_add(usize::try_from(n).unwrap_or(usize::MAX));
        if end > self.end {
            return Err(self.fault(Kind::PastEnd { end }));
        }
        self.pos = end;
        Ok((start, end))
    }

    /// The next length-delimited field numbered `field` (others are skipped): its payload's range; None at the end.
    pub fn next_bytes(&mut self, field: u64) -> Res<Option<(usize, usize)>> {
        while self.more() {
            let (f, wire) = self.tag()?;
            if (f, wire) == (field, 2) {
                return self.bytes().map(Some);
            }
            self.skip(wire)?;
        }
        Ok(None)
    }

    /// The next message in field `field` (others are skipped), to read; None at the end.
    pub fn next_message(&mut self, field: u64) -> Res<Option<Reader<'a>>> {
        Ok(self.next_bytes(field)?.map(|(s, e)| self.sub(s, e)))
    }

    /// A length-delimited payload as text (invalid UTF-8 becomes U+FFFD).
    pub fn string(&mut self) -> Res<String> {
        let (a, b) = self.bytes()?;
        Ok(utf8(&self.buf[a..b]))
    }

    fn fixed(&mut self, n: usize) -> Res<&'a [u8]> {
        if self.pos + n > self.end {
            return Err(self.fault(Kind::PastEnd { end: self.pos + n }));
        }
        let b = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    pub fn double(&mut self) -> Res<f64> {
        let b = self.fixed(8)?;
        Ok(f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// Skips a value of wire type `wire`.
    pub fn skip(&mut self, wire: u8) -> Res<()> {
        match wire {
            0 => self.varint().map(|_| ()),
            1 => self.fixed(8).map(|_| ()),
            2 => self.bytes().map(|_| ()),
            5 => self.fixed(4).map(|_| ()),
            _ => Err(self.fault(Kind::BadTag(wire as u64))),
        }
    }
}

/// A kind with its relative end made a file offset.
fn absolute(kind: Kind, base: usize) -> Kind {
    match kind {
        Kind::PastEnd { end } => Kind::PastEnd { end: base + end },
        k => k,
    }
}

/// UTF-8 bytes to text (invalid sequences become U+FFFD).
pub fn utf8(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        assert_eq!(varint_at(&[0x96, 0x01], 0, 2), Ok((150, 2)));
        let neg = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(varint_at(&neg, 0, 10).map(|(v, _)| v as i64), Ok(-2));
        assert_eq!(varint_at(&[0x80, 0x80], 0, 2), Err(Kind::PastEnd { end: 3 }));
        assert_eq!(varint_at(&[0x80; 11], 0, 11), Err(Kind::BadVarint));
    }

    #[test]
    fn faults_name_file_offsets() {
        // A string field (tag 0x12) claiming 5 bytes where 2 follow, in bytes that start at file offset 100.
        let b = [0x08, 0x96, 0x01, 0x12, 0x05, 0x61, 0x62];
        let mut r = Reader::new(&b, 100, 0, b.len());
        assert_eq!(r.tag().unwrap(), (1, 0));
        assert_eq!(r.varint().unwrap(), 150);
        assert_eq!(r.tag().unwrap(), (2, 2));
        let e = r.bytes().unwrap_err();
        assert_eq!(e, Corrupt { at: 103, kind: Kind::PastEnd { end: 110 } });
        assert_eq!(
            e.describe(107),
            "the profile is truncated or corrupt: a field at byte 103 runs past the end of the file (107 bytes)"
        );
        assert_eq!(
            e.describe(200),
            "the profile is truncated or corrupt: a field at byte 103 runs past the end of its message"
        );
        let mut r = Reader::new(&[0x0f], 7, 0, 1);
        assert_eq!(r.tag().unwrap_err().describe(8), "not a valid XSpace profile: invalid field tag 15 at byte 7");
    }
}
