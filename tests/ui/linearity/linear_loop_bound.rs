#![allow(unused_imports)]
use linad::linear;
use linad::ndarray::{Array1, Array2};

#[linear(x)]
fn f(x: f64) -> f64 {
    let mut s = x;
    for _ in 0..(x as usize) {
        s = s * 2.0;
    }
    s
}

fn main() {}
