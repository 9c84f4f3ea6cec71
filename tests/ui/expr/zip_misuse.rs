use linad::differentiable;
use linad::ndarray::{Array1, Array2, Zip};

// A `Zip` is consumed where it is built.
#[differentiable]
fn stored(x: &Array1<f64>, y: &Array1<f64>) -> f64 {
    let _z = Zip::from(x).and(y);
    x.sum()
}

fn add(acc: f64, a: &f64) -> f64 {
    acc + a
}

// `fold` and `for_each` take closures written in place.
#[differentiable]
fn not_a_closure(x: &Array1<f64>) -> f64 {
    Zip::from(x).fold(0.0, add)
}

// `map_collect` reads its arrays.
#[differentiable]
fn collect_into_mutable(x: &Array1<f64>) -> f64 {
    let mut y: Array1<f64> = Array1::zeros(x.len());
    Zip::from(&mut y).and(x).map_collect(|a: &mut f64, &b| *a + b).sum()
}

// The producers are arrays (not their rows).
#[differentiable]
fn rows(m: &Array2<f64>, v: &Array1<f64>) -> f64 {
    Zip::from(m.rows()).and(v).fold(0.0, |acc, r, &b| acc + r.sum() * b)
}

// The element of a mutable array is a name, used as `*name`.
#[differentiable]
fn mutable_pattern(x: &Array1<f64>) -> f64 {
    let mut y = Array1::zeros(x.len());
    Zip::from(&mut y).and(x).for_each(|&mut a, &b| {
        let _ = a + b;
    });
    y.sum()
}

fn main() {}
