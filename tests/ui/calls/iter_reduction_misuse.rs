use linad::differentiable;
use linad::ndarray::Array1;

#[differentiable]
fn f(v: &Array1<f64>) -> f64 {
    let m = v.iter().copied().reduce(f64::max);
    let a = m.unwrap_or(0.0);
    let b = v
        .iter()
        .copied()
        .max_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal))
        .unwrap();
    let c = v
        .iter()
        .copied()
        .filter(|x| *x > 0.0)
        .min_by(f64::total_cmp)
        .unwrap();
    let d = *v.iter().min().unwrap();
    a + b + c + d
}

fn main() {}
