//! The ADBench suite (`examples/adbench/`) on the bundled small inputs: every
//! derivative checked against central finite differences on sampled
//! components (and, for GMM and BA, against a hand-written derivative; for BA
//! forward against reverse mode and the identities of ADBench's FORMATS.md).

#[path = "../examples/adbench/ba.rs"]
#[allow(dead_code)]
mod ba;
#[path = "../examples/gmm.rs"]
#[allow(dead_code)]
mod gmm;
#[path = "../examples/adbench/hand.rs"]
#[allow(dead_code)]
mod hand;
#[path = "../examples/adbench/io.rs"]
#[allow(dead_code)]
mod io;
#[path = "../examples/adbench/lstm.rs"]
#[allow(dead_code)]
mod lstm;
#[path = "../examples/adbench/suite.rs"]
#[allow(dead_code)]
mod suite;

fn check(problem: &str, rel: &str) {
    let path =
        suite::resolve(suite::BUNDLED, rel).unwrap_or_else(|| panic!("{rel} is not bundled"));
    match suite::check(problem, &path) {
        Ok(msg) => println!("{rel}: {msg}"),
        Err(e) => panic!("{rel}: {e}"),
    }
}

#[test]
fn gmm_test_input() {
    check("gmm", "gmm/test.txt");
}

#[test]
fn gmm_d10_k25() {
    check("gmm", "gmm/1k/gmm_d10_K25.txt");
}

#[test]
fn ba_test_input() {
    check("ba", "ba/test.txt");
}

#[test]
fn ba1_sparse_jacobian() {
    check("ba", "ba/ba1_n49_m7776_p31843.txt");
}

#[test]
fn ba_jacobian_layout() {
    // ADBench's test.txt: 30 x 62, nnz = 31 p (FORMATS.md §2.3).
    let input = ba::BaInput::read(&format!("{}/ba/test.txt", suite::BUNDLED)).unwrap();
    let jac = input.jacobian_reverse();
    assert_eq!((jac.nrows, jac.ncols), (30, 62));
    assert_eq!(jac.rows.len(), 31);
    assert_eq!(jac.cols.len(), 310);
    // Observation 3 uses camera 1 and point 3.
    let row = &jac.cols[jac.rows[6]..jac.rows[7]];
    let expect: Vec<usize> = (11..22)
        .chain(22 + 9..22 + 12)
        .chain([22 + 30 + 3])
        .collect();
    assert_eq!(row, &expect[..]);
}

#[test]
fn lstm_l2_c1024() {
    check("lstm", "lstm/lstm_l2_c1024.txt");
}

#[test]
fn hand_simple_test_input() {
    check("hand", "hand/test.txt");
}

#[test]
fn hand_complicated_test_input() {
    check("hand", "hand/hand_complicated.txt");
}

#[test]
fn hand_simple_small() {
    check("hand", "hand/simple_small/hand1_t26_c100.txt");
}

#[test]
fn hand_complicated_small() {
    check("hand", "hand/complicated_small/hand1_t26_c100.txt");
}
