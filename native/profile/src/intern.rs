//! Interning of UTF-8 strings straight from the capture's bytes (a port of intern.ts's Utf8Interner): a
//! capture's strings repeat (each chip's plane names the same ops; hlo_op and hlo_module values repeat on every
//! event), so a string is decoded once, and a key (its index) names it across all the planes of the file, which
//! lets what is derived from a string be cached by key.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a over the bytes: short keys, hashed where they lie; no per-process random seed to pay for.
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf29ce484222325 } else { self.0 };
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        self.0 = h;
    }
}

pub type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

#[derive(Default)]
pub struct Interner {
    strings: Vec<String>,
    keys: FnvMap<Box<[u8]>, i32>,
}

impl Interner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The key of the UTF-8 bytes `b` (invalid sequences become U+FFFD; a leading BOM stays, as in the TS).
    pub fn intern(&mut self, b: &[u8]) -> i32 {
        if let Some(&k) = self.keys.get(b) {
            return k;
        }
        let k = self.strings.len() as i32;
        self.strings.push(String::from_utf8_lossy(b).into_owned());
        self.keys.insert(b.into(), k);
        k
    }

    pub fn intern_str(&mut self, s: &str) -> i32 {
        self.intern(s.as_bytes())
    }

    pub fn get(&self, key: i32) -> &str {
        &self.strings[key as usize]
    }

    pub fn strings(&self) -> &[String] {
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
