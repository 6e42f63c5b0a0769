//! Protocol-buffer wire reading as the TypeScript decoder does it (protobufjs's Reader and xplane.ts's varint
//! helpers), so that the same bytes are accepted and rejected, and varints become the same doubles.
//!
//! Errors carry no detail: a capture this decoder rejects is handed to the node CLI, which words the message.

/// A capture that is truncated or corrupt somewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupt;

pub type Res<T> = Result<T, Corrupt>;

/// A varint as xplane.ts's varintAt reads it: exact below 2^53, above that a double; a ten-byte varint at or
/// past 2^63 is an int64's two's complement, made negative. Returns (value, end). Bounds are the caller's
/// (reads past `buf` end the varint, as `undefined` does in JS, then the caller's end check fails).
#[inline(always)]
pub fn varint_f64(buf: &[u8], pos: usize) -> Res<(f64, usize)> {
    // One byte (tags, lengths, small ids: most varints) first.
    if let Some(&b) = buf.get(pos) {
        if b < 0x80 {
            return Ok((b as f64, pos + 1));
        }
    }
    // Up to eight bytes below 2^53 (ids, lengths, picosecond times): every partial sum of the JS is exact there,
    // so the integer is the same double.
    if pos + 8 <= buf.len() {
        let mut v: u64 = 0;
        for i in 0..8 {
            let b = buf[pos + i];
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b < 0x80 {
                if v < 1 << 53 {
                    return Ok((v as f64, pos + i + 1));
                }
                break;
            }
        }
    }
    varint_f64_slow(buf, pos)
}

#[cold]
fn varint_f64_slow(buf: &[u8], pos: usize) -> Res<(f64, usize)> {
    let b = byte(buf, pos);
    if b < 0x80 {
        return Ok((b as f64, pos + 1));
    }
    let mut v: u32 = (b & 0x7f) as u32;
    let mut i = 1;
    while i < 4 {
        let b = byte(buf, pos + i);
        v |= ((b & 0x7f) as u32) << (7 * i);
        if b < 0x80 {
            return Ok((v as f64, pos + i + 1));
        }
        i += 1;
    }
    // Bytes 5 to 10 scaled as doubles, as the JS does (the same roundings above 2^53).
    let mut result = v as f64;
    let mut scale = 268435456.0; // 2^28
    for i in 4..10 {
        let b = byte(buf, pos + i);
        result += (b & 0x7f) as f64 * scale;
        if b < 0x80 {
            if i == 9 && result >= 9223372036854775808.0 {
                result -= 18446744073709551616.0;
            }
            return Ok((result, pos + i + 1));
        }
        scale *= 128.0;
    }
    Err(Corrupt)
}

/// JS reads past the end give `undefined`, whose `& 0x7f` is 0 and `< 0x80` false... except that `undefined <
/// 0x80` is false, so the varint goes on; the ten-byte limit then ends it. 0x80 reproduces that.
#[inline(always)]
fn byte(buf: &[u8], pos: usize) -> u8 {
    if pos < buf.len() {
        buf[pos]
    } else {
        0x80
    }
}

/// The varint at `pos` as exact unsigned 64-bit decimal digits (xplane.ts varintDecimalAt).
pub fn varint_decimal(buf: &[u8], mut pos: usize) -> Res<String> {
    let mut v: u128 = 0;
    let mut shift = 0;
    while shift < 70 {
        if pos >= buf.len() {
            return Err(Corrupt);
        }
        let b = buf[pos];
        pos += 1;
        v |= ((b & 0x7f) as u128) << shift;
        if b < 0x80 {
            return Ok(((v & 0xffff_ffff_ffff_ffff) as u64).to_string());
        }
        shift += 7;
    }
    Err(Corrupt)
}

/// Whether a double is a "safe integer" (Number.isSafeInteger).
#[inline(always)]
pub fn is_safe_integer(x: f64) -> bool {
    x.is_finite() && x.trunc() == x && x.abs() <= 9007199254740991.0
}

/// protobufjs's Reader over buf[..len]: position, end, and its reads.
pub struct Reader<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    pub len: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], pos: usize, len: usize) -> Self {
        Reader { buf, pos, len }
    }

    /// Reader.uint32: a varint as an unsigned 32-bit value (a longer one's high bits dropped; up to ten bytes).
    pub fn uint32(&mut self) -> Res<u32> {
        let buf = self.buf;
        if self.len - self.pos.min(self.len) < 5 {
            if self.pos >= self.len {
                return Err(Corrupt);
            }
            if buf[self.pos] >= 128 {
                return self.uint32_near_end();
            }
        }
        let mut value: u32 = 0;
        for i in 0..4 {
            let b = buf[self.pos];
            value |= ((b & 127) as u32) << (7 * i);
            self.pos += 1;
            if b < 128 {
                return Ok(value);
            }
        }
        let b = buf[self.pos];
        value |= ((b & 15) as u32) << 28;
        self.pos += 1;
        if b < 128 {
            return Ok(value);
        }
        self.pos += 5;
        if self.pos > self.len {
            self.pos = self.len;
            return Err(Corrupt);
        }
        Ok(value)
    }

    /// protobufjs's readVarint32NearEnd path: byte by byte, checked against len.
    fn uint32_near_end(&mut self) -> Res<u32> {
        let mut value: u32 = 0;
        let mut i = 0;
        while i < 10 {
            if self.pos >= self.len {
                return Err(Corrupt);
            }
            let b = self.buf[self.pos];
            self.pos += 1;
            if i < 5 {
                value |= ((b & 127) as u32).wrapping_shl(7 * i);
            }
            if b < 128 {
                return Ok(value);
            }
            i += 1;
        }
        Err(Corrupt)
    }

    /// xplane.ts varint64: a 64-bit varint as a double, past len an error.
    pub fn varint64(&mut self) -> Res<f64> {
        let (v, end) = varint_f64(self.buf, self.pos)?;
        if end > self.len {
            return Err(Corrupt);
        }
        self.pos = end;
        Ok(v)
    }

    pub fn double(&mut self) -> Res<f64> {
        if self.pos + 8 > self.len {
            return Err(Corrupt);
        }
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.buf[self.pos..self.pos + 8]);
        self.pos += 8;
        Ok(f64::from_le_bytes(b))
    }

    /// Reader.bytes: a length-delimited payload's range, checked against len.
    pub fn bytes(&mut self) -> Res<(usize, usize)> {
        let n = self.uint32()? as usize;
        let start = self.pos;
        let end = start + n;
        if end > self.len {
            return Err(Corrupt);
        }
        self.pos = end;
        Ok((start, end))
    }

    /// A Node Buffer reader's string(): a length that runs past the end is cut short there, not an error.
    pub fn buffer_string_range(&mut self) -> Res<(usize, usize)> {
        let n = self.uint32()? as usize;
        let start = self.pos;
        let end = (start + n).min(self.len);
        self.pos = end;
        Ok((start, end))
    }

    /// The end of the length-delimited field whose length is at pos (pos moves past the length); past len an error.
    pub fn end(&mut self) -> Res<usize> {
        let end = self.uint32()? as usize + self.pos;
        if end > self.len {
            return Err(Corrupt);
        }
        Ok(end)
    }

    /// A Node Buffer reader's string(): cut short at len, not an error; invalid UTF-8 becomes U+FFFD.
    pub fn buffer_string(&mut self) -> Res<String> {
        let (a, b) = self.buffer_string_range()?;
        Ok(utf8(&self.buf[a..b]))
    }

    pub fn skip(&mut self, n: usize) -> Res<()> {
        if self.pos + n > self.len {
            return Err(Corrupt);
        }
        self.pos += n;
        Ok(())
    }

    /// Reader.skipType, groups included.
    pub fn skip_type(&mut self, wire: u32, depth: u32) -> Res<()> {
        if depth > 100 {
            return Err(Corrupt);
        }
        match wire {
            0 => loop {
                if self.pos >= self.len {
                    return Err(Corrupt);
                }
                let b = self.buf[self.pos];
                self.pos += 1;
                if b & 128 == 0 {
                    return Ok(());
                }
            },
            1 => self.skip(8),
            2 => {
                let n = self.uint32()? as usize;
                self.skip(n)
            }
            3 => loop {
                let w = self.uint32()? & 7;
                if w == 4 {
                    return Ok(());
                }
                self.skip_type(w, depth + 1)?;
            },
            5 => self.skip(4),
            _ => Err(Corrupt),
        }
    }
}

/// UTF-8 bytes to a string as Node decodes them (invalid sequences become U+FFFD; a BOM is kept).
pub fn utf8(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// TextDecoder's default: as utf8(), with a leading BOM dropped.
pub fn utf8_no_bom(b: &[u8]) -> String {
    let b = b.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(b);
    utf8(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_as_the_js_reads_them() {
        assert_eq!(varint_f64(&[0x96, 0x01], 0).unwrap(), (150.0, 2));
        // 2^53 + 1 cannot be a double: rounds as the JS sum does.
        let mut b = vec![];
        let mut x: u64 = (1 << 53) + 1;
        while x >= 0x80 {
            b.push((x as u8) | 0x80);
            x >>= 7;
        }
        b.push(x as u8);
        let (v, _) = varint_f64(&b, 0).unwrap();
        assert_eq!(v, 9007199254740992.0);
        assert!(!is_safe_integer(v) || v == 9007199254740992.0);
        assert_eq!(varint_decimal(&b, 0).unwrap(), "9007199254740993");
        // int64 -2: ten bytes.
        let neg = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(varint_f64(&neg, 0).unwrap().0, 0.0); // 2^64 - 2 rounds to 2^64 as a double, less 2^64
        assert_eq!(varint_decimal(&neg, 0).unwrap(), "18446744073709551614");
        assert!(varint_f64(&[0x80, 0x80], 0).is_err());
    }

    #[test]
    fn reader_uint32_and_skips() {
        let b = [0x08, 0x96, 0x01, 0x12, 0x02, 0x61, 0x62];
        let mut r = Reader::new(&b, 0, b.len());
        assert_eq!(r.uint32().unwrap(), 8);
        r.skip_type(0, 0).unwrap();
        assert_eq!(r.uint32().unwrap(), 0x12);
        assert_eq!(r.bytes().unwrap(), (5, 7));
        assert!(r.uint32().is_err());
        let mut r = Reader::new(&b, 3, 6);
        r.uint32().unwrap();
        assert_eq!(r.buffer_string_range().unwrap(), (5, 6));
    }
}
