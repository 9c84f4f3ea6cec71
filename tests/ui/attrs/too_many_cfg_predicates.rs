use linad::differentiable;

#[differentiable]
fn f(x: f64) -> f64 {
    let mut y = x;
    #[cfg(test)]
    { y = y * 2.0; }
    #[cfg(debug_assertions)]
    { y = y * 3.0; }
    #[cfg(unix)]
    { y = y * 5.0; }
    #[cfg(windows)]
    { y = y * 7.0; }
    #[cfg(target_pointer_width = "64")]
    { y = y * 11.0; }
    y
}

fn main() {}
