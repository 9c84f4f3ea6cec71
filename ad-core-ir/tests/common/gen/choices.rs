//! The choice streams: the raw input of a case ([`Choices`]), how the
//! generator reads decisions from them ([`Src`]), and the proptest strategy
//! whose value tree shrinks them ([`ChoiceStrategy`], [`ChoiceTree`]).

use proptest::prelude::Rng as _;
use proptest::strategy::{NewTree, Strategy, ValueTree};
use proptest::test_runner::TestRunner;

/// Reads decisions from a byte sequence; past its end every byte is 0.
pub struct Src<'a> {
    data: &'a [u8],
    /// Bytes read so far.
    pub pos: usize,
}

impl<'a> Src<'a> {
    /// A source over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Src { data, pos: 0 }
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// Uniform in `0..n` (0 for `n <= 1`).
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        if n <= 64 {
            self.byte() as usize % n
        } else {
            ((self.byte() as usize) << 8 | self.byte() as usize) % n
        }
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi + 1 - lo)
    }

    /// True with probability about `p` (a 0 byte gives false).
    pub fn chance(&mut self, p: f64) -> bool {
        let b = self.byte();
        (255 - b) as f64 + 0.5 < p * 256.0
    }

    /// An index drawn with the given weights (a 0 byte gives the first
    /// non-zero weight). All weights zero: 0.
    pub fn weighted(&mut self, ws: &[u32]) -> usize {
        let total: u32 = ws.iter().sum();
        if total == 0 {
            return 0;
        }
        let r = ((((self.byte() as u32) << 8) | self.byte() as u32) * total) >> 16;
        let mut acc = 0;
        for (k, w) in ws.iter().enumerate() {
            acc += w;
            if r < acc {
                return k;
            }
        }
        ws.len() - 1
    }
}

/// The raw input of one case: independent choice streams (entry function,
/// helper count, each helper) and a seed for argument values. Separate
/// streams keep the entry's decisions in place when a helper shrinks away.
#[derive(Clone, Debug)]
pub struct Choices {
    /// The decision streams: `[entry, helper count, h0, h1]`.
    pub streams: Vec<Vec<u8>>,
    /// Seed of the argument values.
    pub seed: u64,
}

/// Number of streams of [`Choices`].
pub const STREAMS: usize = 4;

/// A strategy of choice streams of `len` random bytes each, shrinking
/// towards short, zero-filled streams.
#[derive(Clone, Debug)]
pub struct ChoiceStrategy {
    /// Length of fresh streams (more than any function reads).
    pub len: usize,
}

impl Strategy for ChoiceStrategy {
    type Tree = ChoiceTree;
    type Value = Choices;
    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        let rng = runner.rng();
        let streams = (0..STREAMS)
            .map(|_| {
                let mut bytes = vec![0u8; self.len];
                rng.fill_bytes(&mut bytes);
                bytes
            })
            .collect();
        let seed = rng.next_u64();
        Ok(ChoiceTree::new(Choices { streams, seed }))
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// Binary search of the shortest failing prefix: `lo..hi` unknown, `hi` fails.
    Truncate { lo: usize },
    /// Delete `SIZES[size]` bytes at `pos`.
    Delete { size: usize, pos: usize },
    /// Zero the byte at `pos`.
    Zero { pos: usize },
    /// Halve, then decrement, the byte at `pos`.
    Halve { pos: usize, dec: bool },
}

/// Chunk sizes tried by deletion (statements read a few bytes to a few dozen).
const SIZES: [usize; 11] = [32, 24, 16, 12, 8, 6, 5, 4, 3, 2, 1];

/// The value tree of [`ChoiceStrategy`]: a small Hypothesis-like shrinker
/// working on one stream at a time.
pub struct ChoiceTree {
    base: Choices,
    cur: Choices,
    stream: usize,
    step: Option<Step>,
    /// Whether any candidate was accepted in this round.
    progress: bool,
    rounds: usize,
}

impl ChoiceTree {
    /// A tree whose initial value is `c`.
    pub fn new(c: Choices) -> Self {
        ChoiceTree {
            base: c.clone(),
            cur: c,
            stream: 0,
            step: Some(Step::Truncate { lo: 0 }),
            progress: false,
            rounds: 0,
        }
    }

    /// Moves to the next candidate from the current step on; sets `cur`.
    fn next_candidate(&mut self) -> bool {
        loop {
            let Some(step) = self.step else {
                // Next stream, or next round, or done.
                if self.stream + 1 < self.base.streams.len() {
                    self.stream += 1;
                    self.step = Some(Step::Truncate { lo: 0 });
                    continue;
                }
                if self.progress && self.rounds < 3 {
                    self.rounds += 1;
                    self.progress = false;
                    self.stream = 0;
                    self.step = Some(Step::Truncate { lo: 0 });
                    continue;
                }
                self.cur = self.base.clone();
                return false;
            };
            let bytes = &self.base.streams[self.stream];
            let n = bytes.len();
            let mut cand = bytes.clone();
            match step {
                Step::Truncate { lo } => {
                    if lo >= n {
                        self.step = Some(Step::Delete { size: 0, pos: 0 });
                        continue;
                    }
                    cand.truncate((lo + n) / 2);
                }
                Step::Delete { size, pos } => {
                    if size >= SIZES.len() {
                        self.step = Some(Step::Zero { pos: 0 });
                        continue;
                    }
                    if pos + SIZES[size] > n {
                        self.step = Some(Step::Delete {
                            size: size + 1,
                            pos: 0,
                        });
                        continue;
                    }
                    cand.drain(pos..pos + SIZES[size]);
                }
                Step::Zero { pos } => {
                    if pos >= n {
                        self.step = Some(Step::Halve { pos: 0, dec: false });
                        continue;
                    }
                    if cand[pos] == 0 {
                        self.step = Some(Step::Zero { pos: pos + 1 });
                        continue;
                    }
                    cand[pos] = 0;
                }
                Step::Halve { pos, dec } => {
                    if pos >= n {
                        self.step = None;
                        continue;
                    }
                    if cand[pos] <= 1 {
                        self.step = Some(Step::Halve {
                            pos: pos + 1,
                            dec: false,
                        });
                        continue;
                    }
                    cand[pos] = if dec { cand[pos] - 1 } else { cand[pos] / 2 };
                }
            }
            let mut c = self.base.clone();
            c.streams[self.stream] = cand;
            self.cur = c;
            return true;
        }
    }

    /// The current candidate passed: step forward from `base`.
    fn rejected(&mut self) {
        let len = self.cur.streams[self.stream].len();
        self.step = self.step.map(|s| match s {
            // `cur` (length (lo+n)/2) passed: the answer is above it.
            Step::Truncate { .. } => Step::Truncate { lo: len + 1 },
            Step::Delete { size, pos } => Step::Delete { size, pos: pos + 1 },
            Step::Zero { pos } => Step::Zero { pos: pos + 1 },
            Step::Halve { pos, dec: false } => Step::Halve { pos, dec: true },
            Step::Halve { pos, dec: true } => Step::Halve {
                pos: pos + 1,
                dec: false,
            },
        });
    }
}

impl ValueTree for ChoiceTree {
    type Value = Choices;
    fn current(&self) -> Choices {
        self.cur.clone()
    }
    fn simplify(&mut self) -> bool {
        // `cur` failed (or this is the first call, `cur == base`): accept it.
        if self.cur.streams != self.base.streams {
            self.base = self.cur.clone();
            self.progress = true;
            if let Some(Step::Truncate { .. }) = self.step {
                self.step = Some(Step::Truncate { lo: 0 });
            }
        }
        self.next_candidate()
    }
    fn complicate(&mut self) -> bool {
        self.cur = self.base.clone();
        self.rejected();
        self.next_candidate()
    }
}
