#![allow(unused_imports)]
use linad::custom_jvp;
use linad::ndarray::Array1;

fn g(x: f64) -> f64 {
    x
}

#[custom_jvp(g)]
fn g_rule(x: f64, d_x: &Array1<f64>) -> (f64, f64) {
    (g(x), d_x.sum())
}

fn main() {}
