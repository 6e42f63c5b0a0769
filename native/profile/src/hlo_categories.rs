//! HLO op categories from a program's serialized xla.HloProto (a port of
//! extension/src/core/profiles/hlo-categories.ts), for captures whose ops carry no `hlo_category` stat (GPU:
//! kernels name their HLO op, and the /host:metadata plane holds each program's HLO). xprof categorizes such
//! ops with XLA's HloInstruction::ToCategory(); this applies the same rules to the instruction's opcode and
//! fusion kind.
//!
//! Field numbers from xla/service/hlo.proto: HloProto.hlo_module (1); HloModuleProto.name (1),
//! computations (3), id (5); HloComputationProto.instructions (2); HloInstructionProto.name (1), opcode (2),
//! fusion_kind (11).
//!
//! The wire reading mirrors protobufjs's Reader (which the TS uses) where input is corrupt: which truncations
//! fail, which are clamped (a string's length past the buffer), and which are read past a message's end.

use std::collections::HashMap;
use std::sync::Arc;

pub(crate) use crate::intern::FastMap;

/// XLA's elementwise opcodes (HloInstruction::IsElementwise for a non-fusion instruction).
const ELEMENTWISE: &[&str] = &[
    "abs",
    "add",
    "and",
    "atan2",
    "bitcast-convert",
    "cbrt",
    "ceil",
    "clamp",
    "clz",
    "compare",
    "complex",
    "convert",
    "cos",
    "divide",
    "erf",
    "exp",
    "exponential",
    "exponential-minus-one",
    "floor",
    "imag",
    "is-finite",
    "log",
    "log-plus-one",
    "logistic",
    "map",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "or",
    "popcnt",
    "power",
    "real",
    "reduce-precision",
    "remainder",
    "round-nearest-afz",
    "round-nearest-even",
    "rsqrt",
    "select",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "sign",
    "sine",
    "cosine",
    "sqrt",
    "stochastic-convert",
    "subtract",
    "tan",
    "tanh",
    "xor",
];

/// The category XLA gives an instruction of this opcode (and fusion kind, for a fusion).
pub fn hlo_category<'a>(opcode: &'a str, fusion_kind: &str) -> &'a str {
    if matches!(opcode, "transpose" | "copy" | "reshape" | "dynamic-reshape") {
        return "data formatting";
    }
    if ELEMENTWISE.contains(&opcode) {
        return "non-fusion elementwise";
    }
    if opcode == "fusion" {
        return match fusion_kind {
            "kLoop" => "loop fusion",
            "kInput" => "input fusion",
            "kOutput" => "output fusion",
            "kCustom" => "custom fusion",
            _ => "fusion",
        };
    }
    opcode
}

/// Category by instruction name.
pub type Categories = HashMap<Arc<str>, Arc<str>>;

/// One program's HLO: its id (exact decimal digits, "" if absent), name, and category by instruction name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HloProgram {
    pub id: String,
    pub name: String,
    pub categories: Categories,
}

/// Corrupt input (where the TS throws).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HloError;

type R<T> = Result<T, HloError>;

/// protobufjs's recursion limit for skipping groups.
const RECURSION_LIMIT: u32 = 100;

/// Absent field in an instruction (TS: key -1).
const NONE: u32 = u32::MAX;

/// Decodes what the op table needs of serialized HloProtos; anything else is skipped. One per analysis, for
/// every program it meets: instruction names and opcodes are interned from their bytes, so a name seen before
/// allocates nothing, and a (opcode, fusion kind) pair's category is worked out once.
#[derive(Default)]
pub struct HloDecoder {
    strings: Vec<Arc<str>>,
    index: FastMap<Box<[u8]>, u32>,
    /// Category by (opcode key, fusion kind key), NONE for absent.
    category_of: FastMap<(u32, u32), Arc<str>>,
}

/// A reader over one HloProto: the protobufjs Reader's position and limit (the whole buffer).
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    /// protobufjs Reader.uint32: up to 5 bytes, bits past 32 dropped; a 6th to 10th byte skipped unread.
    fn uint32(&mut self) -> R<u32> {
        let buf = self.buf;
        let len = buf.len();
        if len - self.pos < 5 {
            if self.pos >= len {
                return Err(HloError);
            }
            if buf[self.pos] >= 128 {
                // Near the end: at most four bytes, each checked.
                let mut value = 0u32;
                for i in 0..4 {
                    if self.pos >= len {
                        return Err(HloError);
                    }
                    let b = buf[self.pos];
                    self.pos += 1;
                    value |= ((b & 127) as u32) << (i * 7);
                    if b < 128 {
                        return Ok(value);
                    }
                }
                return Err(HloError);
            }
        }
        let mut value = 0u32;
        for i in 0..4 {
            let b = buf[self.pos];
            self.pos += 1;
            value |= ((b & 127) as u32) << (i * 7);
            if b < 128 {
                return Ok(value);
            }
        }
        let b = buf[self.pos];
        self.pos += 1;
        value |= ((b & 15) as u32) << 28;
        if b < 128 {
            return Ok(value);
        }
        self.pos += 5;
        if self.pos > len {
            self.pos = len;
            return Err(HloError);
        }
        Ok(value)
    }

    fn skip(&mut self, n: usize) -> R<()> {
        if self.pos + n > self.buf.len() {
            return Err(HloError);
        }
        self.pos += n;
        Ok(())
    }

    fn skip_varint(&mut self) -> R<()> {
        loop {
            if self.pos >= self.buf.len() {
                return Err(HloError);
            }
            let b = self.buf[self.pos];
            self.pos += 1;
            if b & 128 == 0 {
                return Ok(());
            }
        }
    }

    fn skip_type(&mut self, wire: u32, depth: u32) -> R<()> {
        if depth > RECURSION_LIMIT {
            return Err(HloError);
        }
        match wire {
            0 => self.skip_varint(),
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
            _ => Err(HloError),
        }
    }

    /// The end of the length-delimited field at pos (pos moves past its length).
    fn end(&mut self) -> R<usize> {
        let end = self.uint32()? as usize + self.pos;
        if end > self.buf.len() {
            return Err(HloError);
        }
        Ok(end)
    }

    /// protobufjs BufferReader.string: a length past the buffer is clamped to it, not an error; invalid
    /// UTF-8 becomes U+FFFD as Node's decoder makes it.
    fn string(&mut self) -> R<String> {
        let n = self.uint32()? as usize;
        let end = (self.pos + n).min(self.buf.len());
        let s = String::from_utf8_lossy(&self.buf[self.pos..end]).into_owned();
        self.pos = end;
        Ok(s)
    }

    /// xplane.ts varint64: the varint as a double, by the same operations (exact below 2^53; a ten-byte one
    /// at or past 2^63 is negative). A varint that runs off the buffer or past ten bytes fails.
    fn varint64(&mut self) -> R<f64> {
        let buf = self.buf;
        let mut pos = self.pos;
        let mut v = 0u32;
        for i in 0..4 {
            let b = *buf.get(pos).ok_or(HloError)?;
            pos += 1;
            v |= ((b & 0x7f) as u32) << (7 * i);
            if b < 0x80 {
                self.pos = pos;
                return Ok(v as f64);
            }
        }
        let mut result = v as f64;
        let mut scale = 268435456.0; // 2^28
        for i in 4..10 {
            let b = *buf.get(pos).ok_or(HloError)?;
            pos += 1;
            result += (b & 0x7f) as f64 * scale;
            if b < 0x80 {
                self.pos = pos;
                return Ok(if i == 9 && result >= 9223372036854775808.0 {
                    result - 18446744073709551616.0
                } else {
                    result
                });
            }
            scale *= 128.0;
        }
        Err(HloError)
    }
}

/// xplane.ts varintDecimalAt: the varint at buf[pos] as an unsigned decimal, exact to 64 bits.
fn varint_decimal_at(buf: &[u8], mut pos: usize) -> R<String> {
    let mut v: u128 = 0;
    let mut shift = 0;
    while shift < 70 {
        let b = *buf.get(pos).ok_or(HloError)?;
        pos += 1;
        v |= ((b & 0x7f) as u128) << shift;
        if b < 0x80 {
            return Ok((v as u64).to_string());
        }
        shift += 7;
    }
    Err(HloError)
}

impl HloDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Errs on corrupt input where the TS throws.
    pub fn decode(&mut self, bytes: &[u8]) -> R<HloProgram> {
        let mut r = Reader { buf: bytes, pos: 0 };
        let mut out = HloProgram::default();
        while r.pos < bytes.len() {
            let tag = r.uint32()?;
            if tag >> 3 == 1 && tag & 7 == 2 {
                let end = r.end()?;
                self.module(&mut r, end, &mut out)?;
            } else {
                r.skip_type(tag & 7, 0)?;
            }
        }
        Ok(out)
    }

    fn module(&mut self, r: &mut Reader, end: usize, out: &mut HloProgram) -> R<()> {
        while r.pos < end {
            let tag = r.uint32()?;
            let field = tag >> 3;
            if field == 1 && tag & 7 == 2 {
                out.name = r.string()?;
            } else if field == 3 && tag & 7 == 2 {
                let e = r.end()?;
                self.computation(r, e, out)?;
            } else if field == 5 && tag & 7 == 0 {
                let at = r.pos;
                let v = r.varint64()?;
                // Number.isSafeInteger(v) && v >= 0: past 2^53 a double is not the id, so its exact digits.
                out.id = if (0.0..=9007199254740991.0).contains(&v) && v.fract() == 0.0 {
                    (v as u64).to_string()
                } else {
                    varint_decimal_at(r.buf, at)?
                };
            } else {
                r.skip_type(tag & 7, 0)?;
            }
        }
        // A string clamped or a field read past the module's end: the TS goes back to the end all the same.
        r.pos = end;
        Ok(())
    }

    fn computation(&mut self, r: &mut Reader, end: usize, out: &mut HloProgram) -> R<()> {
        while r.pos < end {
            let tag = r.uint32()?;
            if tag >> 3 == 2 && tag & 7 == 2 {
                let e = r.end()?;
                self.instruction(r, e, out)?;
            } else {
                r.skip_type(tag & 7, 0)?;
            }
        }
        r.pos = end;
        Ok(())
    }

    fn intern(&mut self, b: &[u8]) -> u32 {
        if let Some(&k) = self.index.get(b) {
            return k;
        }
        let k = self.strings.len() as u32;
        self.strings.push(Arc::from(String::from_utf8_lossy(b).as_ref()));
        self.index.insert(b.into(), k);
        k
    }

    fn instruction(&mut self, r: &mut Reader, end: usize, out: &mut HloProgram) -> R<()> {
        let buf = r.buf;
        let len = buf.len();
        let (mut name, mut opcode, mut kind) = (NONE, NONE, NONE);
        // The TS reads one-byte tags, lengths and varints inline, bounded by the instruction's end; longer
        // ones and other wire types through the Reader, bounded by the buffer's.
        let mut pos = r.pos;
        while pos < end {
            let mut tag = buf[pos] as u32;
            pos += 1;
            if tag >= 0x80 {
                r.pos = pos - 1;
                tag = r.uint32()?;
                pos = r.pos;
            }
            let wire = tag & 7;
            if wire == 2 {
                if pos >= len {
                    // The TS reads the length as undefined and its position becomes NaN: interning a name,
                    // opcode or kind then throws, any other field ends the loop as if at the end.
                    if matches!(tag >> 3, 1 | 2 | 11) {
                        return Err(HloError);
                    }
                    pos = end;
                    break;
                }
                let mut n = buf[pos] as usize;
                pos += 1;
                if n >= 0x80 {
                    r.pos = pos - 1;
                    n = r.uint32()? as usize;
                    pos = r.pos;
                }
                let start = pos;
                pos += n;
                if pos > end {
                    break;
                }
                match tag >> 3 {
                    1 => name = self.intern(&buf[start..pos]),
                    2 => opcode = self.intern(&buf[start..pos]),
                    11 => kind = self.intern(&buf[start..pos]),
                    _ => {}
                }
            } else if wire == 0 {
                while pos < end && buf[pos] >= 0x80 {
                    pos += 1;
                }
                pos += 1;
            } else {
                r.pos = pos;
                r.skip_type(wire, 0)?;
                pos = r.pos;
            }
        }
        if pos > end {
            return Err(HloError);
        }
        r.pos = end;
        if name == NONE || self.strings[name as usize].is_empty() {
            return Ok(());
        }
        let category = match self.category_of.get(&(opcode, kind)) {
            Some(c) => c.clone(),
            None => {
                let op = if opcode == NONE { "" } else { &self.strings[opcode as usize] };
                let fk = if kind == NONE { "" } else { &self.strings[kind as usize] };
                let c: Arc<str> = Arc::from(hlo_category(op, fk));
                self.category_of.insert((opcode, kind), c.clone());
                c
            }
        };
        out.categories.insert(self.strings[name as usize].clone(), category);
        Ok(())
    }
}

/// One program's HLO, decoded on its own (an HloDecoder shares its strings across the programs it decodes).
pub fn decode_hlo_program(bytes: &[u8]) -> Result<HloProgram, HloError> {
    HloDecoder::new().decode(bytes)
}

#[cfg(test)]
pub(crate) mod tests;
