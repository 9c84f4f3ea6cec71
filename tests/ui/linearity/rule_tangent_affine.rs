#![allow(unused_imports)]
use linad::custom_jvp;
use linad::ndarray::Array1;

fn g(x: f64) -> f64 {
    x * x
}

#[custom_jvp(g)]
fn g_rule(x: f64, d_x: f64) -> (f64, f64) {
    (g(x), 2.0 * x * d_x + 1e-12)
}

fn main() {}
