use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    v.mapv(|x| {
        let g = |t: f64| t * t;
        g(x)
    })
    .sum()
}

fn main() {}
