//! ADBench LSTM (FORMATS.md §3): a diagonal (element-wise) LSTM text model;
//! the gradient of its objective w.r.t. the main and the extra parameters.

use super::io::{read_text, Tokens};
use linad::differentiable;
use linad::ndarray::Array2;

/// The LSTM objective. `main_params` is `2l x 4b` (per layer a weight row and
/// a bias row, each `[forget | input | output | change]`), `extra_params` is
/// `3 x b` (input weight, output weight, output bias), `state` is `2l x b`
/// (per layer hidden then cell), `seq` is `c x b` (bits).
#[differentiable(wrt(main_params, extra_params))]
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

/// One ADBench LSTM input (FORMATS.md §3.1).
pub struct LstmInput {
    /// `2l x 4b`.
    pub main_params: Array2<f64>,
    /// `3 x b`.
    pub extra_params: Array2<f64>,
    /// `2l x b`.
    pub state: Array2<f64>,
    /// `c x b`.
    pub seq: Array2<f64>,
}

impl LstmInput {
    /// Parses the text of an ADBench LSTM file.
    pub fn parse(text: &str, what: &str) -> Result<LstmInput, String> {
        let mut t = Tokens::new(text, what);
        let (l, c, b) = (t.usize()?, t.usize()?, t.usize()?);
        let mut take = |r: usize, k: usize| -> Result<Array2<f64>, String> {
            let mut a = Array2::zeros((r, k));
            for v in a.iter_mut() {
                *v = t.f64()?;
            }
            Ok(a)
        };
        Ok(LstmInput {
            main_params: take(2 * l, 4 * b)?,
            extra_params: take(3, b)?,
            state: take(2 * l, b)?,
            seq: take(c, b)?,
        })
    }

    /// Reads and parses a file.
    pub fn read(path: &str) -> Result<LstmInput, String> {
        LstmInput::parse(&read_text(path)?, path)
    }

    /// The objective.
    pub fn objective(&self) -> f64 {
        lstm_objective(
            &self.main_params,
            &self.extra_params,
            &self.state,
            &self.seq,
        )
    }

    /// The objective with parameters `(main, extra)`.
    pub fn objective_at(&self, main: &Array2<f64>, extra: &Array2<f64>) -> f64 {
        lstm_objective(main, extra, &self.state, &self.seq)
    }

    /// The objective and its gradient `[main (row-major) | extra (row-major)]`.
    pub fn gradient(&self) -> (f64, Vec<f64>) {
        let (f, (gm, ge)) = lstm_objective_vjp(
            &self.main_params,
            &self.extra_params,
            &self.state,
            &self.seq,
            1.0,
        );
        (f, gm.iter().chain(ge.iter()).copied().collect())
    }

    /// The objective with gradient component `idx` moved by `delta`.
    pub fn objective_moved(&self, idx: usize, delta: f64) -> f64 {
        let (mut m, mut e) = (self.main_params.clone(), self.extra_params.clone());
        let nm = m.len();
        if idx < nm {
            let k = m.ncols();
            m[[idx / k, idx % k]] += delta;
        } else {
            let k = e.ncols();
            e[[(idx - nm) / k, (idx - nm) % k]] += delta;
        }
        self.objective_at(&m, &e)
    }
}

impl LstmInput {
    /// Checks the gradient against central finite differences on sampled
    /// components and the exact zeros FORMATS.md §3.3 predicts (bits that
    /// are 0 in every character); returns the worst error (rho).
    pub fn check(&self, samples: usize) -> Result<f64, String> {
        let (f, g) = self.gradient();
        if f.to_bits() != self.objective().to_bits() {
            return Err("LSTM: the vjp's primal differs from the objective".into());
        }
        let (b, nm) = (self.extra_params.ncols(), self.main_params.len());
        if g.len() != nm + 3 * b {
            return Err(format!("LSTM: gradient has {} components", g.len()));
        }
        // Bits that are 0 in every character: d/d in_w[j] and layer 0's
        // forget and output-gate weights for bit j are exactly 0.
        for j in 0..b {
            if self.seq.column(j).iter().all(|&v| v == 0.0) {
                for idx in [nm + j, j, 2 * b + j] {
                    if g[idx] != 0.0 {
                        return Err(format!(
                            "LSTM: component {idx} should be 0, is {:e}",
                            g[idx]
                        ));
                    }
                }
            }
        }
        let mut worst: f64 = 0.0;
        for idx in super::io::sample_indices(g.len(), samples, 2) {
            let fd = super::io::five_point(|d| self.objective_moved(idx, d), 1e-3);
            let e = super::io::rho(g[idx], fd);
            worst = worst.max(e);
            if e > 1e-6 {
                return Err(format!(
                    "LSTM: component {idx}: vjp {:e}, finite differences {fd:e}",
                    g[idx]
                ));
            }
        }
        Ok(worst)
    }
}
