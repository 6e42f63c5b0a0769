//! HLO op categories from a program's serialized xla.HloProto, for captures whose ops carry no `hlo_category`
//! stat (GPU: kernels name their HLO op, and the /host:metadata plane holds each program's HLO). xprof
//! categorizes such ops with XLA's HloInstruction::ToCategory(); this applies the same rules to the instruction's
//! opcode and fusion kind.
//!
//! Field numbers from xla/service/hlo.proto: HloProto.hlo_module (1); HloModuleProto.name (1),
//! computations (3), id (5); HloComputationProto.instructions (2); HloInstructionProto.name (1), opcode (2),
//! fusion_kind (11).

use std::sync::Arc;

use crate::wire::{Corrupt, Reader};

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

/// A program's HLO that cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HloError;

impl From<Corrupt> for HloError {
    fn from(_: Corrupt) -> Self {
        HloError
    }
}

type R<T> = Result<T, HloError>;

/// Absent field in an instruction.
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

    /// One program's HLO; corrupt bytes are an error.
    #[inline(never)] // kept small: lib.rs, "Function size"
    pub fn decode(&mut self, bytes: &[u8]) -> R<HloProgram> {
        let mut r = Reader::new(bytes, 0, 0, bytes.len());
        let mut out = HloProgram::default();
        while let Some(mut module) = r.next_message(1)? {
            self.module(&mut module, &mut out)?;
        }
        Ok(out)
    }

    fn module(&mut self, r: &mut Reader, out: &mut HloProgram) -> R<()> {
        while r.more() {
            match r.tag()? {
                (1, 2) => out.name = r.string()?,
                (3, 2) => {
                    let (s, e) = r.bytes()?;
                    self.computation(&mut r.sub(s, e), out)?;
                }
                (5, 0) => out.id = r.varint()?.to_string(),
                (_, wire) => r.skip(wire)?,
            }
        }
        Ok(())
    }

    fn computation(&mut self, r: &mut Reader, out: &mut HloProgram) -> R<()> {
        while let Some(mut instruction) = r.next_message(2)? {
            self.instruction(&mut instruction, out)?;
        }
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

    fn instruction(&mut self, r: &mut Reader, out: &mut HloProgram) -> R<()> {
        let (mut name, mut opcode, mut kind) = (NONE, NONE, NONE);
        while r.more() {
            match r.tag()? {
                (f @ (1 | 2 | 11), 2) => {
                    let (a, b) = r.bytes()?;
                    let k = self.intern(&r.buf[a..b]);
                    match f {
                        1 => name = k,
                        2 => opcode = k,
                        _ => kind = k,
                    }
                }
                (_, wire) => r.skip(wire)?,
            }
        }
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
#[cfg(test)]
pub fn decode_hlo_program(bytes: &[u8]) -> Result<HloProgram, HloError> {
    HloDecoder::new().decode(bytes)
}

#[cfg(test)]
pub(crate) mod tests;
