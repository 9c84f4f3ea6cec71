use linad::differentiable;
use linad::ndarray::Array1;

// `push` in a loop nested in the pushing loop: no bound on the pushes.
#[differentiable]
fn nested(x: &Array1<f64>) -> f64 {
    let mut v = Vec::new();
    for i in 0..x.len() {
        for j in 0..i {
            v.push(x[j]);
        }
    }
    v.iter().sum()
}

// Read while it grows.
#[differentiable]
fn read_while_growing(x: &Array1<f64>) -> f64 {
    let mut v = Vec::with_capacity(x.len());
    for i in 0..x.len() {
        if v.len() < 2 {
            v.push(x[i]);
        }
    }
    v.iter().sum()
}

// Pushed again after the loop.
#[differentiable]
fn pushed_after(x: f64) -> f64 {
    let mut v = vec![];
    for i in 0..3 {
        v.push(x * i as f64);
    }
    v.push(x);
    v.iter().sum()
}

fn main() {}
