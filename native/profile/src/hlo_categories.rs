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

use std::sync::Arc;

use crate::wire::{varint_decimal, Corrupt, Reader};

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
pub type Categories = FastMap<Arc<str>, Arc<str>>;

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

impl From<Corrupt> for HloError {
    fn from(_: Corrupt) -> Self {
        HloError
    }
}

type R<T> = Result<T, HloError>;

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

impl HloDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Errs on corrupt input where the TS throws.
    pub fn decode(&mut self, bytes: &[u8]) -> R<HloProgram> {
        let mut r = Reader::new(bytes, 0, bytes.len());
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
                out.name = r.buffer_string()?;
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
                    varint_decimal(r.buf, at)?
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
