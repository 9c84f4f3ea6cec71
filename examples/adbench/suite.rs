//! The suite: which input files, the checks on them, and the timings.

use super::ba::{BaInput, SparseJacobian};
use super::gmm::GmmInput;
use super::hand::HandInput;
use super::io::{five_point, median_secs, rho, sample_indices, timed_runs};
use super::lstm::LstmInput;

/// The input files bundled with the repository (small ones; the layout of
/// ADBench's `data/` folder).
pub const BUNDLED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/adbench/data");

/// `rel` under `data_dir`, else under the bundled data, else (GMM) the
/// file of the same name in `examples/data/`; `None` if none exists.
pub fn resolve(data_dir: &str, rel: &str) -> Option<String> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    [
        format!("{data_dir}/{rel}"),
        format!("{BUNDLED}/{rel}"),
        format!("{}/examples/data/{name}", env!("CARGO_MANIFEST_DIR")),
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).is_file())
}

/// The default data directory: `../shared/adbench` next to the repository
/// when present, else the bundled data.
pub fn default_data_dir() -> String {
    let shared = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/adbench");
    if std::path::Path::new(shared).is_dir() {
        shared.to_string()
    } else {
        BUNDLED.to_string()
    }
}

/// The hand model directory for a problem file `.../hand/<x>/file.txt` or
/// `.../hand/file.txt`.
pub fn hand_model_dir(problem: &str) -> String {
    let p = std::path::Path::new(problem);
    let mut dir = p.parent().unwrap_or(p);
    if !dir.join("model").is_dir() {
        dir = dir.parent().unwrap_or(dir);
    }
    dir.join("model").to_string_lossy().into_owned()
}

/// GMM: the vjp against the hand-written gradient and sampled central
/// finite differences; returns the worst finite-difference error (rho).
pub fn check_gmm(input: &GmmInput, samples: usize) -> Result<f64, String> {
    let f = input.objective();
    let (fv, g) = input.gradient();
    let (fh, h) = input.gradient_hand();
    if f.to_bits() != fv.to_bits() {
        return Err("GMM: the vjp's primal differs from the objective".into());
    }
    if rho(f, fh) > 1e-12 {
        return Err(format!("GMM: objective {f:e}, hand-written {fh:e}"));
    }
    for (q, (a, b)) in g.iter().zip(&h).enumerate() {
        if rho(*a, *b) > 1e-9 {
            return Err(format!("GMM: component {q}: vjp {a:e}, hand-written {b:e}"));
        }
    }
    let mut worst: f64 = 0.0;
    for idx in sample_indices(g.len(), samples, 3) {
        let fd = five_point(|d| input.objective_moved(idx, d), 1e-3);
        let e = rho(g[idx], fd);
        worst = worst.max(e);
        if e > 1e-6 {
            return Err(format!(
                "GMM: component {idx}: vjp {:e}, finite differences {fd:e}",
                g[idx]
            ));
        }
    }
    Ok(worst)
}

/// One checked case: a label and its input file relative to the data folder.
pub const CHECKS: &[(&str, &str)] = &[
    ("gmm", "gmm/test.txt"),
    ("gmm", "gmm/1k/gmm_d10_K25.txt"),
    ("ba", "ba/test.txt"),
    ("ba", "ba/ba1_n49_m7776_p31843.txt"),
    ("lstm", "lstm/lstm_l2_c1024.txt"),
    ("hand", "hand/test.txt"),
    ("hand", "hand/hand_complicated.txt"),
    ("hand", "hand/simple_small/hand1_t26_c100.txt"),
    ("hand", "hand/complicated_small/hand1_t26_c100.txt"),
];

/// Runs the check of `problem` on `path`; returns a one-line summary.
pub fn check(problem: &str, path: &str) -> Result<String, String> {
    match problem {
        "gmm" => {
            let input = GmmInput::read(path)?;
            let worst = check_gmm(&input, 12)?;
            Ok(format!(
                "gradient ({} components) ok, fd rho {worst:.1e}",
                input.gradient().1.len()
            ))
        }
        "ba" => {
            let input = BaInput::read(path)?;
            let worst = input.check(8)?;
            Ok(format!(
                "sparse Jacobian ({} obs.): reverse = forward = hand-written, identities ok, fd rho {worst:.1e}",
                input.p()
            ))
        }
        "lstm" => {
            let input = LstmInput::read(path)?;
            let worst = input.check(12)?;
            Ok(format!(
                "gradient ({} components) ok, fd rho {worst:.1e}",
                input.gradient().1.len()
            ))
        }
        "hand" => {
            let input = HandInput::read(path, &hand_model_dir(path))?;
            let worst = input.check(6)?;
            let jac = input.jacobian();
            Ok(format!(
                "{} Jacobian {}x{} ok, fd rho {worst:.1e}",
                if input.u.is_some() {
                    "complicated"
                } else {
                    "simple"
                },
                jac.nrows(),
                jac.ncols()
            ))
        }
        _ => Err(format!("unknown problem {problem:?} (gmm, ba, lstm, hand)")),
    }
}

/// `(primal, derivative, hand-written)` median seconds.
pub type Timing = (f64, f64, Option<f64>);

/// Median times (seconds) of one case: `(primal, derivative, hand-written)`,
/// and the sum of the absolute values of the derivative's entries (to compare
/// with other systems). `kind`: `gmm`, `ba-rev`, `ba-fwd`, `lstm`, `hand` (the
/// NumPy-style GMM: `examples/gmm.rs`'s `time-np`).
pub fn time(
    kind: &str,
    path: &str,
    min_runs: usize,
    min_secs: f64,
) -> Result<(Timing, f64), String> {
    let med = |t: Vec<std::time::Duration>| median_secs(&t);
    let abs_sum = |v: &mut dyn Iterator<Item = f64>| v.map(f64::abs).sum::<f64>();
    let checksum = match kind {
        "gmm" => abs_sum(&mut GmmInput::read(path)?.gradient().1.into_iter()),
        "ba-rev" | "ba-fwd" => {
            abs_sum(&mut BaInput::read(path)?.jacobian_reverse().vals.into_iter())
        }
        "lstm" => abs_sum(&mut LstmInput::read(path)?.gradient().1.into_iter()),
        "hand" => abs_sum(
            &mut HandInput::read(path, &hand_model_dir(path))?
                .jacobian()
                .into_iter(),
        ),
        _ => 0.0,
    };
    let times = match kind {
        "gmm" => {
            let i = GmmInput::read(path)?;
            let p = med(timed_runs(min_runs, min_secs, || i.objective()));
            let d = med(timed_runs(min_runs, min_secs, || i.gradient()));
            let h = med(timed_runs(min_runs, min_secs, || i.gradient_hand()));
            (p, d, Some(h))
        }
        "ba-rev" | "ba-fwd" => {
            let i = BaInput::read(path)?;
            let p = med(timed_runs(min_runs, min_secs, || i.objective()));
            // Into one Jacobian reused across runs, as a solver would (and
            // as JAX's allocator reuses its buffers): a fresh 15 MB one per
            // run would time the kernel's page faults as much as the
            // derivatives.
            let mut jac = SparseJacobian::default();
            let d = if kind == "ba-rev" {
                med(timed_runs(min_runs, min_secs, || {
                    i.jacobian_reverse_into(&mut jac)
                }))
            } else {
                med(timed_runs(min_runs, min_secs, || {
                    i.jacobian_forward_into(&mut jac)
                }))
            };
            let h = med(timed_runs(min_runs, min_secs, || {
                i.jacobian_hand_into(&mut jac)
            }));
            (p, d, Some(h))
        }
        "lstm" => {
            let i = LstmInput::read(path)?;
            let p = med(timed_runs(min_runs, min_secs, || i.objective()));
            let d = med(timed_runs(min_runs, min_secs, || i.gradient()));
            (p, d, None)
        }
        "hand" => {
            let i = HandInput::read(path, &hand_model_dir(path))?;
            let p = med(timed_runs(min_runs, min_secs, || i.objective()));
            let d = med(timed_runs(min_runs, min_secs, || i.jacobian()));
            (p, d, None)
        }
        _ => return Err(format!("unknown case kind {kind:?}")),
    };
    Ok((times, checksum))
}
