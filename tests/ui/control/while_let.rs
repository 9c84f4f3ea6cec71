use linad::differentiable;

#[differentiable]
fn f(x: f64, n: usize) -> f64 {
    let mut k = n;
    let mut y = x;
    while let Some(j) = k.checked_sub(1) {
        k = j;
        y = y * x;
    }
    y
}

fn main() {}
