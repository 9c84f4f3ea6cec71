use linad::differentiable;

#[differentiable(wrt(flag))]
fn f(x: f64, flag: bool) -> f64 {
    if flag { x } else { -x }
}

fn main() {}
