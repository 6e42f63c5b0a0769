//! Interning of UTF-8 strings straight from the capture's bytes: a capture's strings repeat (each chip's plane
//! names the same ops; hlo_op and hlo_module values repeat on every event), so a string is decoded once, and a key
//! (its index) names it across all the planes of the file, which lets what is derived from a string be cached by
//! key.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A multiply-rotate hasher (FxHash) for the analysis's maps keyed by small integers and short strings:
/// std's SipHash costs several times more per lookup, and nothing here hashes untrusted keys for a server.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, x: u8) {
        self.add(x as u64);
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.add(x as u64);
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.add(x);
    }
    #[inline]
    fn write_i64(&mut self, x: i64) {
        self.add(x as u64);
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.add(x as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[derive(Default)]
pub struct Interner {
    strings: Vec<Arc<str>>,
    keys: FastMap<Box<[u8]>, i32>,
}

impl Interner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The key of the UTF-8 bytes `b` (invalid sequences become U+FFFD).
    pub fn intern(&mut self, b: &[u8]) -> i32 {
        if let Some(&k) = self.keys.get(b) {
            return k;
        }
        let k = self.strings.len() as i32;
        self.strings.push(Arc::from(String::from_utf8_lossy(b).as_ref()));
        self.keys.insert(b.into(), k);
        k
    }

    pub fn intern_str(&mut self, s: &str) -> i32 {
        self.intern(s.as_bytes())
    }

    pub fn get(&self, key: i32) -> &str {
        &self.strings[key as usize]
    }

    /// The string of `key`, shared.
    pub fn shared(&self, key: i32) -> Arc<str> {
        self.strings[key as usize].clone()
    }

    pub fn strings(&self) -> &[Arc<str>] {
        &self.strings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_same_key() {
        let mut i = Interner::new();
        let a = i.intern(b"fusion.1");
        let b = i.intern(b"fusion.2");
        assert_ne!(a, b);
        assert_eq!(i.intern_str("fusion.1"), a);
        assert_eq!(i.get(b), "fusion.2");
        let k = i.intern(&[0xff]);
        assert_eq!(i.get(k), "\u{fffd}");
    }
}
