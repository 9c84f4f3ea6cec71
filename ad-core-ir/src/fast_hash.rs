//! Hash maps and sets with a fast deterministic hasher, for the compiler's
//! own tables (variables, names, counts).
//!
//! The standard `HashMap` hashes with SipHash, built to resist hash
//! flooding from untrusted keys; the compiler's keys are its own variables
//! and the user's names, and its tables are rebuilt many times per
//! function. In a proc macro built without optimisation (cargo's default
//! for `cargo check` and debug builds) SipHash was about a tenth of the
//! macro's time. [`FastHasher`] is the multiplicative hash of rustc's
//! `FxHasher`. Iteration order is deterministic but arbitrary: code whose
//! output depends on an order uses `BTreeMap` / `BTreeSet`.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`] (`FastMap::default()` makes one).
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A `HashSet` with [`FastHasher`] (`FastSet::default()` makes one).
pub type FastSet<T> = HashSet<T, BuildHasherDefault<FastHasher>>;

/// `h' = (rotl(h, 5) ^ word) * K` per machine word of the key, as rustc's
/// `FxHasher`.
#[derive(Clone, Copy, Default)]
pub struct FastHasher(u64);

const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        // The well-mixed high bits of the product to the low bits, which
        // pick the bucket (keys like aligned pointers have zero low bits).
        self.0.rotate_left(26)
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(w) ^ (rest.len() as u64) << 56);
        }
    }
    fn write_u8(&mut self, x: u8) {
        self.write_u64(u64::from(x));
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(K);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash>(t: &T) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(t)
    }

    #[test]
    fn equal_keys_hash_equal_and_different_ones_differ() {
        assert_eq!(
            hash(&"a_name_longer_than_eight"),
            hash(&"a_name_longer_than_eight")
        );
        assert_ne!(hash(&"ab"), hash(&"ab\0"));
        assert_ne!(hash(&1u32), hash(&2u32));
        let m: FastMap<String, usize> = [("x".to_string(), 1)].into_iter().collect();
        assert_eq!(m["x"], 1);
    }
}
