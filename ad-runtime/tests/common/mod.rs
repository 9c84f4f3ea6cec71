//! Shared helpers for the ad-runtime tests: deterministic random inputs,
//! thread pools, bit-level comparison.
#![allow(dead_code)]

use ndarray::{Array, Array1, Array2, Array3, Dimension};

/// Make every kernel parallel whenever its input can be split.
pub fn low_threshold() {
    ad_runtime::set_par_threshold(1);
}

/// xorshift64* stream of floats in [-1, 1).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

pub fn vec1(n: usize, seed: u64) -> Array1<f64> {
    let mut r = Rng::new(seed);
    Array1::from_shape_fn(n, |_| r.f64())
}

pub fn mat(m: usize, n: usize, seed: u64) -> Array2<f64> {
    let mut r = Rng::new(seed);
    Array2::from_shape_fn((m, n), |_| r.f64())
}

pub fn arr3(a: usize, b: usize, c: usize, seed: u64) -> Array3<f64> {
    let mut r = Rng::new(seed);
    Array3::from_shape_fn((a, b, c), |_| r.f64())
}

pub fn indices(n: usize, len: usize, seed: u64) -> Array1<usize> {
    let mut r = Rng::new(seed);
    Array1::from_shape_fn(n, |_| r.below(len))
}

/// Run `f` on a fresh pool of `threads` threads.
pub fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// Bit patterns of a result, for exact comparison.
pub trait Bits {
    fn bits(&self) -> Vec<u64>;
}

impl Bits for f64 {
    fn bits(&self) -> Vec<u64> {
        vec![self.to_bits()]
    }
}

impl Bits for usize {
    fn bits(&self) -> Vec<u64> {
        vec![*self as u64]
    }
}

impl<D: Dimension> Bits for Array<f64, D> {
    fn bits(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.shape().iter().map(|&n| n as u64).collect();
        v.extend(self.iter().map(|x| x.to_bits()));
        v
    }
}

impl<D: Dimension> Bits for Array<usize, D> {
    fn bits(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.shape().iter().map(|&n| n as u64).collect();
        v.extend(self.iter().map(|&x| x as u64));
        v
    }
}

impl<A: Bits, B: Bits> Bits for (A, B) {
    fn bits(&self) -> Vec<u64> {
        let mut v = self.0.bits();
        v.extend(self.1.bits());
        v
    }
}

/// Run `f` on pools of 1, 2 and 4 threads (twice each) and assert the
/// results are bit-identical; return the result.
pub fn same_bits<R: Bits + Send>(name: &str, f: impl Fn() -> R + Sync) -> R {
    low_threshold();
    let reference = in_pool(1, &f);
    let rb = reference.bits();
    for t in [1, 2, 4, 2] {
        let b = in_pool(t, &f).bits();
        assert!(
            b == rb,
            "{name}: result with {t} threads differs from 1 thread"
        );
    }
    reference
}

/// `|a - b| <= tol · (1 + |b|)`, elementwise.
#[track_caller]
pub fn close<D: Dimension>(a: &Array<f64, D>, b: &Array<f64, D>, tol: f64) {
    assert_eq!(a.shape(), b.shape());
    for (i, (&x, &y)) in a.iter().zip(b.iter()).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "element {i}: {x} vs {y}"
        );
    }
}

#[track_caller]
pub fn close1(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{a} vs {b}");
}

/// Reference of `Note [lane order]`: chunks of 8192, 8 lanes, fixed tree,
/// chunk results added left to right starting from the first.
pub fn lane_sum(xs: &[f64]) -> f64 {
    let mut total: Option<f64> = None;
    for c in xs.chunks(8192) {
        let mut l = [0.0f64; 8];
        for (k, &x) in c.iter().enumerate() {
            l[k % 8] += x;
        }
        let p = (((l[0] + l[4]) + (l[1] + l[5])) + (l[2] + l[6])) + (l[3] + l[7]);
        total = Some(total.map_or(p, |t| t + p));
    }
    total.unwrap_or(0.0)
}
