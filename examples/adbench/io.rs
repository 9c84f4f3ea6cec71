//! Shared input readers and helpers for the ADBench examples (FORMATS.md).

use std::time::{Duration, Instant};

/// A whitespace tokenizer over a whole file: ADBench's GMM, BA and LSTM files
/// are plain sequences of numbers (FORMATS.md, "General conventions").
pub struct Tokens<'a> {
    it: std::str::SplitAsciiWhitespace<'a>,
    what: &'a str,
}

impl<'a> Tokens<'a> {
    /// Tokens of `text`; `what` names the file in error messages.
    pub fn new(text: &'a str, what: &'a str) -> Tokens<'a> {
        Tokens {
            it: text.split_ascii_whitespace(),
            what,
        }
    }

    /// The next number.
    pub fn f64(&mut self) -> Result<f64, String> {
        let t = self
            .it
            .next()
            .ok_or_else(|| format!("{}: unexpected end of file", self.what))?;
        t.parse::<f64>()
            .map_err(|e| format!("{}: bad number {t:?}: {e}", self.what))
    }

    /// The next number as a count or index.
    pub fn usize(&mut self) -> Result<usize, String> {
        let v = self.f64()?;
        if v < 0.0 || v.fract() != 0.0 {
            return Err(format!("{}: expected a count, got {v}", self.what));
        }
        Ok(v as usize)
    }

    /// Whether every token was consumed.
    pub fn is_done(&mut self) -> bool {
        self.it.next().is_none()
    }
}

/// Reads a file to a string, naming it in the error.
pub fn read_text(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

/// `|a - b| / max(1, |a| + |b|)`: ADBench's comparison (FORMATS.md).
pub fn rho(a: f64, b: f64) -> f64 {
    (a - b).abs() / (a.abs() + b.abs()).max(1.0)
}

/// The derivative of `f` at 0 by the 4th-order central difference
/// `(-f(2h) + 8 f(h) - 8 f(-h) + f(-2h)) / 12h`.
pub fn five_point(f: impl Fn(f64) -> f64, h: f64) -> f64 {
    (-f(2.0 * h) + 8.0 * f(h) - 8.0 * f(-h) + f(-2.0 * h)) / (12.0 * h)
}

/// `count` indices spread over `0..len` (deterministic).
pub fn sample_indices(len: usize, count: usize, salt: usize) -> Vec<usize> {
    (0..count.min(len))
        .map(|s| (s * 7919 + 13 * salt + s * s * 31) % len)
        .collect()
}

/// Times of `f`: warm-up calls, then at least `min_runs` calls and at least
/// `min_secs` seconds of calls (at most 1000); returns the sorted times.
pub fn timed_runs<T>(min_runs: usize, min_secs: f64, mut f: impl FnMut() -> T) -> Vec<Duration> {
    for _ in 0..2 {
        std::hint::black_box(f());
    }
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < 1000 && (times.len() < min_runs || start.elapsed().as_secs_f64() < min_secs)
    {
        let t0 = Instant::now();
        std::hint::black_box(f());
        times.push(t0.elapsed());
    }
    times.sort();
    times
}

/// The median of sorted times, in seconds.
pub fn median_secs(sorted: &[Duration]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2].as_secs_f64()
    } else {
        0.5 * (sorted[n / 2 - 1].as_secs_f64() + sorted[n / 2].as_secs_f64())
    }
}
