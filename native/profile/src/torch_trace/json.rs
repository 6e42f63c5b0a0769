//! A JSON reader over a capture's window, a piece at a time: a trace of hundreds of MB is never one string, and
//! the WebAssembly build holds a piece of it, not the file. It reads only what the trace analysis asks for and
//! skips every other value without building it.

use crate::source::{Fault, Window};

/// How much of the file is copied out of the window at a time; under test a few bytes, so that the tests split
/// every kind of token across two pieces somewhere.
const PIECE: usize = if cfg!(test) { 61 } else { 1 << 20 };

pub struct Cursor<'w, 'a> {
    win: &'w mut Window<'a>,
    buf: Vec<u8>,
    /// File offset of buf[0].
    base: usize,
    i: usize,
    text: Vec<u8>,
}

/// A fault in the JSON at byte `at`.
pub fn fault(at: usize, what: &str) -> Fault {
    Fault::Say(format!("not valid Chrome trace JSON: {what} at byte {at}"))
}

impl<'w, 'a> Cursor<'w, 'a> {
    pub fn new(win: &'w mut Window<'a>) -> Self {
        Cursor { win, buf: vec![], base: 0, i: 0, text: vec![] }
    }

    pub fn at(&self) -> usize {
        self.base + self.i
    }

    #[cold]
    fn fill(&mut self) -> Result<bool, Fault> {
        let next = self.base + self.buf.len();
        let piece = self.win.get_up_to(next, PIECE)?;
        if piece.is_empty() {
            return Ok(false);
        }
        self.buf.clear();
        self.buf.extend_from_slice(piece);
        self.base = next;
        self.i = 0;
        Ok(true)
    }

    #[inline]
    pub fn peek(&mut self) -> Result<Option<u8>, Fault> {
        if self.i < self.buf.len() || self.fill()? {
            Ok(Some(self.buf[self.i]))
        } else {
            Ok(None)
        }
    }

    /// The next byte, which must be there (else the trace ends early: `what` was expected).
    #[inline]
    fn next(&mut self, what: &str) -> Result<u8, Fault> {
        match self.peek()? {
            Some(b) => {
                self.i += 1;
                Ok(b)
            }
            None => Err(self.truncated(what)),
        }
    }

    fn truncated(&self, what: &str) -> Fault {
        Fault::Say(format!("the trace is truncated: its JSON ends at byte {} before {what}", self.at()))
    }

    /// The next byte after white space (not consumed); None at the end.
    pub fn ws(&mut self) -> Result<Option<u8>, Fault> {
        while let Some(b) = self.peek()? {
            if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                return Ok(Some(b));
            }
            self.i += 1;
        }
        Ok(None)
    }

    pub fn expect(&mut self, want: u8, what: &str) -> Result<(), Fault> {
        match self.ws()? {
            Some(b) if b == want => {
                self.i += 1;
                Ok(())
            }
            Some(_) => Err(fault(self.at(), &format!("expected {what}"))),
            None => Err(self.truncated(what)),
        }
    }

    /// After an item of an object or array: true where another follows (a comma), false at `close`.
    pub fn more(&mut self, close: u8) -> Result<bool, Fault> {
        match self.ws()? {
            Some(b',') => {
                self.i += 1;
                Ok(true)
            }
            Some(b) if b == close => {
                self.i += 1;
                Ok(false)
            }
            Some(_) => Err(fault(self.at(), &format!("expected ',' or '{}'", close as char))),
            None => Err(self.truncated(&format!("'{}'", close as char))),
        }
    }

    /// Opens an object or array: false where it is empty (and closed already).
    pub fn open(&mut self, open: u8, close: u8) -> Result<bool, Fault> {
        self.expect(open, &format!("'{}'", open as char))?;
        if self.ws()? == Some(close) {
            self.i += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// An object's key and the colon after it.
    pub fn key(&mut self, out: &mut String) -> Result<(), Fault> {
        self.string(out)?;
        self.expect(b':', "':'")
    }

    /// A string value into `out` (escapes decoded; bytes that are not UTF-8 replaced).
    pub fn string(&mut self, out: &mut String) -> Result<(), Fault> {
        self.expect(b'"', "a string")?;
        self.text.clear();
        loop {
            // The plain run up to a quote or backslash, at once.
            let start = self.i;
            while self.i < self.buf.len() && !matches!(self.buf[self.i], b'"' | b'\\') {
                self.i += 1;
            }
            let run = &self.buf[start..self.i];
            self.text.extend_from_slice(run);
            match self.next("the end of a string")? {
                b'"' => break,
                b'\\' => self.escape()?,
                b => self.text.push(b),
            }
        }
        out.clear();
        out.push_str(&String::from_utf8_lossy(&self.text));
        Ok(())
    }

    fn escape(&mut self) -> Result<(), Fault> {
        let c = match self.next("an escape")? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&hi) && self.peek()? == Some(b'\\') {
                    self.i += 1;
                    if self.next("an escape")? != b'u' {
                        return Err(fault(self.at() - 1, "a lone surrogate escape"));
                    }
                    let lo = self.hex4()?;
                    0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF)
                } else {
                    hi
                };
                char::from_u32(code).unwrap_or('\u{FFFD}')
            }
            _ => return Err(fault(self.at() - 1, "an invalid escape")),
        };
        let mut b = [0u8; 4];
        self.text.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, Fault> {
        let mut v = 0;
        for _ in 0..4 {
            let d = self.next("an escape")?;
            let x = (d as char).to_digit(16).ok_or_else(|| fault(self.at() - 1, "an invalid \\u escape"))?;
            v = v * 16 + x;
        }
        Ok(v)
    }

    /// A number; its text is left in `raw` (a pid's text, exactly as written).
    pub fn number(&mut self, raw: &mut String) -> Result<f64, Fault> {
        self.ws()?;
        let at = self.at();
        raw.clear();
        while let Some(b) = self.peek()? {
            if !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                break;
            }
            raw.push(b as char);
            self.i += 1;
        }
        raw.parse::<f64>().map_err(|_| fault(at, "expected a number"))
    }

    /// A number, or null / any other value as NaN (skipped).
    pub fn number_or_nan(&mut self, raw: &mut String) -> Result<f64, Fault> {
        match self.ws()? {
            Some(b'-' | b'0'..=b'9') => self.number(raw),
            _ => {
                self.skip()?;
                Ok(f64::NAN)
            }
        }
    }

    /// A number or a string, as text ("19359", "Spans"); other values skipped ('').
    pub fn name_like(&mut self, out: &mut String) -> Result<(), Fault> {
        match self.ws()? {
            Some(b'"') => self.string(out),
            Some(b'-' | b'0'..=b'9') => {
                let mut raw = String::new();
                self.number(&mut raw)?;
                *out = raw;
                Ok(())
            }
            _ => {
                out.clear();
                self.skip()
            }
        }
    }

    /// Skips one value of any kind (nested to any depth, without recursion).
    pub fn skip(&mut self) -> Result<(), Fault> {
        let mut depth = 0usize;
        let mut scratch = String::new();
        loop {
            match self.ws()? {
                None => return Err(self.truncated("a value")),
                Some(b'"') => self.string(&mut scratch)?,
                Some(b'{' | b'[') => {
                    self.i += 1;
                    depth += 1;
                    // An object's first key is a value to skip like any other; the colon after it is skipped below.
                    continue;
                }
                Some(b'}' | b']') => {
                    if depth == 0 {
                        return Err(fault(self.at(), "expected a value"));
                    }
                    self.i += 1;
                    depth -= 1;
                }
                Some(b't' | b'f' | b'n') => {
                    let at = self.at();
                    let word = match self.peek()? {
                        Some(b't') => "true",
                        Some(b'f') => "false",
                        _ => "null",
                    };
                    for w in word.bytes() {
                        if self.next(word)? != w {
                            return Err(fault(at, "expected a value"));
                        }
                    }
                }
                Some(b'-' | b'0'..=b'9') => {
                    self.number(&mut scratch)?;
                }
                Some(b',' | b':') if depth > 0 => {
                    self.i += 1;
                    continue;
                }
                Some(_) => return Err(fault(self.at(), "expected a value")),
            }
            if depth == 0 {
                return Ok(());
            }
        }
    }
}
