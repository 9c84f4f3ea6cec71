#![allow(unused_imports)]
use linad::custom_jvp;
use linad::ndarray::Array1;

fn g(x: f64, y: f64) -> f64 {
    x * y
}

#[custom_jvp(g)]
fn g_rule(x: f64, d_x: f64) -> (f64, f64) {
    (g(x, 1.0), d_x)
}

fn main() {}
