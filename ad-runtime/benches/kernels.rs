//! Each kernel against a plain sequential loop (and matrix products against
//! ndarray's `dot`) at 1e3, 1e5 and 1e7 elements.
//!
//! Run: `cargo bench -p ad-runtime --bench kernels`; criterion writes the
//! estimates to `target/criterion/<group>/<ours|plain|ndarray>/<n>/`.

use ad_runtime as ad;
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use ndarray::{Array1, Array2};
use std::hint::black_box;
use std::time::Duration;

const SIZES: [usize; 3] = [1_000, 100_000, 10_000_000];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

fn vector(n: usize, seed: u64) -> Array1<f64> {
    let mut r = Rng(seed | 1);
    Array1::from_shape_fn(n, |_| r.f64())
}

fn square(n: usize, seed: u64) -> Array2<f64> {
    let side = (n as f64).sqrt().round() as usize;
    let mut r = Rng(seed | 1);
    Array2::from_shape_fn((side, side), |_| r.f64())
}

fn indices(n: usize, len: usize, seed: u64) -> Array1<usize> {
    let mut r = Rng(seed | 1);
    Array1::from_shape_fn(n, |_| (r.next() % len as u64) as usize)
}

fn group<'a>(c: &'a mut Criterion, name: &str, n: usize) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_millis(if n >= 10_000_000 {
        1500
    } else {
        700
    }));
    g.sample_size(10);
    g
}

/// Bench `ours` and `plain` on the same input size under `name`.
fn pair<A, B>(c: &mut Criterion, name: &str, n: usize, mut ours: A, mut plain: B)
where
    A: FnMut(),
    B: FnMut(),
{
    let mut g = group(c, name, n);
    g.bench_function(BenchmarkId::new("ours", n), |b| b.iter(&mut ours));
    g.bench_function(BenchmarkId::new("plain", n), |b| b.iter(&mut plain));
    g.finish();
}

fn elementwise(c: &mut Criterion) {
    for n in SIZES {
        let x = vector(n, 1);
        let y = vector(n, 2);
        let (xs, ys) = (x.as_slice().unwrap(), y.as_slice().unwrap());
        pair(
            c,
            "map",
            n,
            || {
                black_box(ad::map(&x, |v| v * 2.0 + 1.0));
            },
            || {
                black_box(xs.iter().map(|&v| v * 2.0 + 1.0).collect::<Vec<f64>>());
            },
        );
        pair(
            c,
            "zip_map",
            n,
            || {
                black_box(ad::zip_map(&x, &y, |a, b| a * b + a));
            },
            || {
                black_box(
                    xs.iter()
                        .zip(ys)
                        .map(|(&a, &b)| a * b + a)
                        .collect::<Vec<f64>>(),
                );
            },
        );
        pair(
            c,
            "build",
            n,
            || {
                black_box(ad::build(n, |i| (i as f64).sqrt()));
            },
            || {
                black_box((0..n).map(|i| (i as f64).sqrt()).collect::<Vec<f64>>());
            },
        );
        let mut acc = vector(n, 3);
        let mut acc2 = acc.clone();
        pair(
            c,
            "add_scaled",
            n,
            || ad::add_scaled(&mut acc, 0.5, &x),
            || {
                for (a, &v) in acc2.as_slice_mut().unwrap().iter_mut().zip(xs) {
                    *a += 0.5 * v;
                }
            },
        );
        let side = (n as f64).sqrt().round() as usize;
        let u = vector(side, 4);
        let w = vector(side, 5);
        pair(
            c,
            "outer",
            n,
            || {
                black_box(ad::outer(&u, &w));
            },
            || {
                let mut out = Vec::with_capacity(side * side);
                for &a in &u {
                    for &b in &w {
                        out.push(a * b);
                    }
                }
                black_box(out);
            },
        );
    }
}

fn reductions(c: &mut Criterion) {
    for n in SIZES {
        let x = vector(n, 1);
        let xs = x.as_slice().unwrap();
        pair(
            c,
            "sum",
            n,
            || {
                black_box(ad::sum(&x));
            },
            || {
                black_box(xs.iter().sum::<f64>());
            },
        );
        let p = x.mapv(|v| 1.0 + 1e-6 * v);
        let ps = p.as_slice().unwrap();
        pair(
            c,
            "product",
            n,
            || {
                black_box(ad::product(&p));
            },
            || {
                let (mut prod, mut zeros) = (1.0, 0usize);
                for &v in ps {
                    if v == 0.0 {
                        zeros += 1;
                    } else {
                        prod *= v;
                    }
                }
                black_box((prod, zeros));
            },
        );
        pair(
            c,
            "max_arg",
            n,
            || {
                black_box(ad::max_arg(&x));
            },
            || {
                let (mut best, mut at) = (xs[0], 0);
                for (i, &v) in xs.iter().enumerate() {
                    if v > best {
                        best = v;
                        at = i;
                    }
                }
                black_box((best, at));
            },
        );
        pair(
            c,
            "logsumexp",
            n,
            || {
                black_box(ad::logsumexp(&x));
            },
            || {
                let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                black_box(m + xs.iter().map(|&v| (v - m).exp()).sum::<f64>().ln());
            },
        );
        let a = square(n, 6);
        let (r, k) = a.dim();
        let asl = a.as_slice().unwrap();
        pair(
            c,
            "sum_axis0",
            n,
            || {
                black_box(ad::sum_axis(&a, 0));
            },
            || {
                let mut out = vec![0.0; k];
                for row in asl.chunks(k) {
                    for (o, &v) in out.iter_mut().zip(row) {
                        *o += v;
                    }
                }
                black_box(out);
            },
        );
        pair(
            c,
            "sum_axis1",
            n,
            || {
                black_box(ad::sum_axis(&a, 1));
            },
            || {
                black_box(
                    asl.chunks(k)
                        .map(|row| row.iter().sum::<f64>())
                        .collect::<Vec<f64>>(),
                );
            },
        );
        let _ = r;
    }
}

fn scans(c: &mut Criterion) {
    for n in SIZES {
        let x = vector(n, 1);
        let xs = x.as_slice().unwrap();
        pair(
            c,
            "scan_inclusive",
            n,
            || {
                black_box(ad::scan_inclusive(&x));
            },
            || {
                let mut s = 0.0;
                black_box(
                    xs.iter()
                        .map(|&v| {
                            s += v;
                            s
                        })
                        .collect::<Vec<f64>>(),
                );
            },
        );
        pair(
            c,
            "scan_reverse",
            n,
            || {
                black_box(ad::scan_reverse(&x));
            },
            || {
                let mut out = vec![0.0; xs.len()];
                let mut s = 0.0;
                for (o, &v) in out.iter_mut().zip(xs).rev() {
                    s += v;
                    *o = s;
                }
                black_box(out);
            },
        );
    }
}

fn indexing(c: &mut Criterion) {
    for n in SIZES {
        let x = vector(n, 1);
        let xs = x.as_slice().unwrap();
        let idx = indices(n, n, 2);
        let is = idx.as_slice().unwrap();
        pair(
            c,
            "gather",
            n,
            || {
                black_box(ad::gather(&x, &idx));
            },
            || {
                black_box(is.iter().map(|&j| xs[j]).collect::<Vec<f64>>());
            },
        );
        let plain_scatter = |is: &[usize], len: usize| {
            let mut out = vec![0.0; len];
            for (&j, &v) in is.iter().zip(xs) {
                out[j] += v;
            }
            out
        };
        pair(
            c,
            "scatter_add",
            n,
            || {
                black_box(ad::scatter_add(&x, &idx, n));
            },
            || {
                black_box(plain_scatter(is, n));
            },
        );
        let bins = indices(n, 100, 3);
        let bs = bins.as_slice().unwrap();
        pair(
            c,
            "scatter_add_100bins",
            n,
            || {
                black_box(ad::scatter_add(&x, &bins, 100));
            },
            || {
                black_box(plain_scatter(bs, 100));
            },
        );
    }
}

fn products(c: &mut Criterion) {
    for n in SIZES {
        let x = vector(n, 1);
        let y = vector(n, 2);
        let (xs, ys) = (x.as_slice().unwrap(), y.as_slice().unwrap());
        pair(
            c,
            "dot",
            n,
            || {
                black_box(ad::dot(&x, &y));
            },
            || {
                black_box(xs.iter().zip(ys).map(|(a, b)| a * b).sum::<f64>());
            },
        );
        let a = square(n, 3);
        let k = a.ncols();
        let v = vector(k, 4);
        let asl = a.as_slice().unwrap();
        let vs = v.as_slice().unwrap();
        let mut g = group(c, "matvec", n);
        g.bench_function(BenchmarkId::new("ours", n), |b| {
            b.iter(|| black_box(ad::matvec(&a, &v)))
        });
        g.bench_function(BenchmarkId::new("plain", n), |b| {
            b.iter(|| {
                black_box(
                    asl.chunks(k)
                        .map(|row| row.iter().zip(vs).map(|(a, b)| a * b).sum::<f64>())
                        .collect::<Vec<f64>>(),
                )
            })
        });
        g.bench_function(BenchmarkId::new("ndarray", n), |b| {
            b.iter(|| black_box(a.dot(&v)))
        });
        g.finish();
        let mut g = group(c, "matvec_t", n);
        g.bench_function(BenchmarkId::new("ours", n), |b| {
            b.iter(|| black_box(ad::matvec_t(&a, &v)))
        });
        g.bench_function(BenchmarkId::new("plain", n), |b| {
            b.iter(|| {
                let mut out = vec![0.0; k];
                for (row, &s) in asl.chunks(k).zip(vs) {
                    for (o, &x) in out.iter_mut().zip(row) {
                        *o += s * x;
                    }
                }
                black_box(out)
            })
        });
        g.bench_function(BenchmarkId::new("ndarray", n), |b| {
            b.iter(|| black_box(a.t().dot(&v)))
        });
        g.finish();
    }
}

fn matmul(c: &mut Criterion) {
    for side in [256usize, 1024] {
        let a = square(side * side, 1);
        let b = square(side * side, 2);
        let mut g = c.benchmark_group("matmul");
        g.warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(if side > 500 { 4 } else { 1 }));
        g.sample_size(10);
        g.bench_function(BenchmarkId::new("ours", side), |bn| {
            bn.iter(|| black_box(ad::matmul(&a, &b)))
        });
        g.bench_function(BenchmarkId::new("ndarray", side), |bn| {
            bn.iter(|| black_box(a.dot(&b)))
        });
        g.bench_function(BenchmarkId::new("ours_tn", side), |bn| {
            bn.iter(|| black_box(ad::matmul_tn(&a, &b)))
        });
        g.bench_function(BenchmarkId::new("ndarray_tn", side), |bn| {
            bn.iter(|| black_box(a.t().dot(&b)))
        });
        g.finish();
    }
}

criterion_group!(
    benches,
    elementwise,
    reductions,
    scans,
    indexing,
    products,
    matmul
);
criterion_main!(benches);
