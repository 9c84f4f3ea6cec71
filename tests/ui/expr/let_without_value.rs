use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(x: f64, v: &Array1<f64>) -> f64 {
    // a pattern other than names: refused
    let [a, b]: [f64; 2];
    a = x;
    b = x * x;
    // an array: no zero to start from
    let w: Array1<f64>;
    if x > 0.0 {
        w = v.mapv(|e| e * x);
    } else {
        w = v.to_owned();
    }
    // a value whose type the syntax does not show
    let y;
    y = v.sum();
    a + b + w.sum() + y
}

fn main() {}
