use linad::differentiable;
use linad::ndarray::Array2;
#[differentiable(wrt(main_params, extra_params), dump)]
pub fn lstm_objective(
    main_params: &Array2<f64>,
    extra_params: &Array2<f64>,
    state: &Array2<f64>,
    seq: &Array2<f64>,
) -> f64 {
    let l = state.nrows() / 2;
    let b = state.ncols();
    let c = seq.nrows();
    let mut st = state.clone();
    let mut total = 0.0;
    for t in 0..c - 1 {
        let mut x = Array2::from_shape_fn((1, b), |(_, j)| seq[[t, j]] * extra_params[[0, j]]);
        for i in 0..l {
            for j in 0..b {
                let h = st[[2 * i, j]];
                let fg = sigmoid(x[[0, j]] * main_params[[2 * i, j]] + main_params[[2 * i + 1, j]]);
                let ig = sigmoid(h * main_params[[2 * i, b + j]] + main_params[[2 * i + 1, b + j]]);
                let og = sigmoid(
                    x[[0, j]] * main_params[[2 * i, 2 * b + j]]
                        + main_params[[2 * i + 1, 2 * b + j]],
                );
                let cg = (h * main_params[[2 * i, 3 * b + j]]
                    + main_params[[2 * i + 1, 3 * b + j]])
                .tanh();
                let s = st[[2 * i + 1, j]] * fg + ig * cg;
                let h_new = og * s.tanh();
                st[[2 * i + 1, j]] = s;
                st[[2 * i, j]] = h_new;
                x[[0, j]] = h_new;
            }
        }
        let mut se = 0.0;
        for j in 0..b {
            se += (x[[0, j]] * extra_params[[1, j]] + extra_params[[2, j]]).exp();
        }
        let lse = (se + 2.0).ln();
        for j in 0..b {
            total +=
                seq[[t + 1, j]] * (x[[0, j]] * extra_params[[1, j]] + extra_params[[2, j]] - lse);
        }
    }
    -total / (((c - 1) * b) as f64)
}

/// The logistic function.
#[differentiable]
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn main() {
    println!("{}", lstm_objective_linad_dump());
}
