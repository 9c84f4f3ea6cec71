//! The parser of the printed form of [`crate::pretty`]: a hand-written
//! tokenizer and a recursive-descent parser. The grammar is in the module doc of
//! [`crate::pretty`].
//!
//! `parse_func(&func_to_string(f), prog) == Ok(f)` for every well-formed
//! function whose [`VarTable`] has no entries the function never mentions (and
//! with [`crate::pretty::func_to_string_exact`], for every such function).
//! Variables keep the index they are printed with; table entries the text never
//! mentions are filled with dummies (empty name, type `()`, non-linear).
//!
//! The parser never panics: malformed input gives a [`ParseError`] with the line
//! and column (1-based, in characters) of the offending token. Nesting deeper
//! than [`MAX_DEPTH`] and variable indices above [`MAX_VAR_INDEX`] are refused.
//! Besides the printed form it accepts blank lines and `//` comments to the end
//! of a line, so that tests can write IR by hand.

use crate::ir::*;
use crate::types::Ty;
use std::collections::BTreeMap;
use std::fmt;

/// Deepest nesting of blocks, types or shapes the parser accepts.
pub const MAX_DEPTH: usize = 100;

/// Largest variable index the parser accepts (the table is allocated up to it).
pub const MAX_VAR_INDEX: u32 = 1 << 21;

/// A syntax error, at a 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, counted in characters.
    pub col: usize,
    /// What was wrong.
    pub msg: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.msg)
    }
}

impl std::error::Error for ParseError {}

type PResult<T> = Result<T, ParseError>;

// ---------------------------------------------------------------------------
// Tokens

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// `[A-Za-z_][A-Za-z0-9_]*`, or `-inf` / `-NaN`.
    Ident(String),
    /// A quoted string not followed by `_N`.
    Str(String),
    /// A quoted name followed by `_N`: `"x.1"_4`.
    QVar(String, String),
    /// A number literal's text (sign included).
    Num(String),
    /// `#N`.
    Src(String),
    /// Punctuation: `( ) [ ] { } , ; : = += @ | -> ?`.
    P(&'static str),
    /// One or more line breaks.
    Newline,
    /// End of input.
    Eof,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
    col: usize,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Str(s) => format!("string {s:?}"),
        Tok::QVar(s, n) => format!("`{s:?}_{n}`"),
        Tok::Num(s) => format!("number `{s}`"),
        Tok::Src(s) => format!("`#{s}`"),
        Tok::P(p) => format!("`{p}`"),
        Tok::Newline => "end of line".to_string(),
        Tok::Eof => "end of input".to_string(),
    }
}

struct Lexer {
    chars: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
}

impl Lexer {
    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.i).copied()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn err(&self, line: usize, col: usize, msg: impl Into<String>) -> ParseError {
        ParseError {
            line,
            col,
            msg: msg.into(),
        }
    }

    fn ident(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek(0) {
            if c.is_ascii_alphanumeric() || c == '_' {
                s.push(c);
                self.bump();
            } else {
                break;
            }
        }
        s
    }

    fn digits(&mut self, s: &mut String) {
        while let Some(c) = self.peek(0).filter(char::is_ascii_digit) {
            s.push(c);
            self.bump();
        }
    }

    /// A quoted string with Rust escapes (those `{:?}` produces).
    fn string(&mut self, line: usize, col: usize) -> PResult<String> {
        self.bump(); // opening quote
        let mut s = String::new();
        loop {
            let Some(c) = self.bump() else {
                return Err(self.err(line, col, "unterminated string"));
            };
            match c {
                '"' => return Ok(s),
                '\n' => return Err(self.err(line, col, "unterminated string")),
                '\\' => {
                    let (l, k) = (self.line, self.col);
                    let e = self.bump();
                    match e {
                        Some('n') => s.push('\n'),
                        Some('r') => s.push('\r'),
                        Some('t') => s.push('\t'),
                        Some('0') => s.push('\0'),
                        Some('\\') => s.push('\\'),
                        Some('"') => s.push('"'),
                        Some('\'') => s.push('\''),
                        Some('u') => {
                            if self.bump() != Some('{') {
                                return Err(self.err(l, k, "bad \\u escape"));
                            }
                            let mut hex = String::new();
                            while let Some(h) = self.peek(0).filter(char::is_ascii_hexdigit) {
                                hex.push(h);
                                self.bump();
                            }
                            if self.bump() != Some('}') || hex.is_empty() || hex.len() > 6 {
                                return Err(self.err(l, k, "bad \\u escape"));
                            }
                            let ch = u32::from_str_radix(&hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .ok_or_else(|| self.err(l, k, "bad \\u escape"))?;
                            s.push(ch);
                        }
                        _ => return Err(self.err(l, k, "unknown escape in string")),
                    }
                }
                c => s.push(c),
            }
        }
    }

    fn run(mut self) -> PResult<Vec<Token>> {
        let mut out: Vec<Token> = vec![];
        loop {
            let (line, col) = (self.line, self.col);
            let Some(c) = self.peek(0) else {
                out.push(Token {
                    tok: Tok::Eof,
                    line,
                    col,
                });
                return Ok(out);
            };
            let tok = match c {
                '\n' => {
                    self.bump();
                    if out.last().is_none_or(|t| t.tok == Tok::Newline) {
                        continue;
                    }
                    Tok::Newline
                }
                c if c.is_whitespace() => {
                    self.bump();
                    continue;
                }
                '/' if self.peek(1) == Some('/') => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                    continue;
                }
                '"' => {
                    let s = self.string(line, col)?;
                    if self.peek(0) == Some('_') && self.peek(1).is_some_and(|c| c.is_ascii_digit())
                    {
                        self.bump();
                        let mut n = String::new();
                        self.digits(&mut n);
                        if self
                            .peek(0)
                            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                        {
                            return Err(self.err(line, col, "malformed quoted variable"));
                        }
                        Tok::QVar(s, n)
                    } else {
                        Tok::Str(s)
                    }
                }
                '#' => {
                    self.bump();
                    let mut n = String::new();
                    self.digits(&mut n);
                    if n.is_empty() {
                        return Err(self.err(line, col, "expected a number after `#`"));
                    }
                    Tok::Src(n)
                }
                '-' if self.peek(1) == Some('>') => {
                    self.bump();
                    self.bump();
                    Tok::P("->")
                }
                '-' if self.peek(1).is_some_and(|c| c.is_ascii_alphabetic()) => {
                    self.bump();
                    Tok::Ident(format!("-{}", self.ident()))
                }
                '-' | '0'..='9' => {
                    let mut s = String::new();
                    if c == '-' {
                        s.push('-');
                        self.bump();
                        if !self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                            return Err(self.err(line, col, "unexpected `-`"));
                        }
                    }
                    self.digits(&mut s);
                    if self.peek(0) == Some('.') && self.peek(1).is_some_and(|c| c.is_ascii_digit())
                    {
                        s.push('.');
                        self.bump();
                        self.digits(&mut s);
                    }
                    if matches!(self.peek(0), Some('e' | 'E')) {
                        let k = if matches!(self.peek(1), Some('+' | '-')) {
                            2
                        } else {
                            1
                        };
                        if self.peek(k).is_some_and(|c| c.is_ascii_digit()) {
                            for _ in 0..k {
                                s.push(self.bump().unwrap_or('e'));
                            }
                            self.digits(&mut s);
                        }
                    }
                    if self
                        .peek(0)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        return Err(self.err(line, col, "malformed number"));
                    }
                    Tok::Num(s)
                }
                c if c.is_ascii_alphabetic() || c == '_' => Tok::Ident(self.ident()),
                '+' if self.peek(1) == Some('=') => {
                    self.bump();
                    self.bump();
                    Tok::P("+=")
                }
                _ => {
                    let p = match c {
                        '(' => "(",
                        ')' => ")",
                        '[' => "[",
                        ']' => "]",
                        '{' => "{",
                        '}' => "}",
                        ',' => ",",
                        ';' => ";",
                        ':' => ":",
                        '=' => "=",
                        '@' => "@",
                        '|' => "|",
                        '?' => "?",
                        _ => {
                            return Err(self.err(line, col, format!("unexpected character {c:?}")))
                        }
                    };
                    self.bump();
                    Tok::P(p)
                }
            };
            out.push(Token { tok, line, col });
        }
    }
}

fn lex(s: &str) -> PResult<Vec<Token>> {
    Lexer {
        chars: s.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
    }
    .run()
}

/// `name_N` split into `(name, N)` if the identifier has that form.
fn split_var(s: &str) -> Option<(&str, &str)> {
    let k = s.rfind('_')?;
    let d = &s[k + 1..];
    (!d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())).then(|| (&s[..k], d))
}

fn is_var_tok(t: &Tok) -> bool {
    match t {
        Tok::Ident(s) => !s.starts_with('-') && split_var(s).is_some(),
        Tok::QVar(..) => true,
        _ => false,
    }
}

fn prim_by_name(s: &str) -> Option<Prim> {
    Prim::ALL.iter().copied().find(|p| p.name() == s)
}

/// One array operation of each kind (and each reduction operator), with
/// placeholder operands: the parser finds the kind a keyword names by
/// [`ArrayOp::name`], then reads that kind's operands (`Parser::array_op`,
/// an exhaustive match: a new kind is a compile error there, and must be
/// added here to be parsed).
const ARRAY_OPS: [ArrayOp; 18] = {
    let a = Atom::I64(0);
    [
        ArrayOp::Index {
            arr: a,
            idx: Vec::new(),
        },
        ArrayOp::Update {
            arr: a,
            idx: Vec::new(),
            val: a,
            add: false,
        },
        ArrayOp::Gather { arr: a, idx: a },
        ArrayOp::ScatterAdd {
            len: a,
            idx: a,
            vals: a,
        },
        ArrayOp::Reduce {
            op: ReduceOp::Sum,
            arr: a,
            axis: None,
        },
        ArrayOp::Reduce {
            op: ReduceOp::Prod,
            arr: a,
            axis: None,
        },
        ArrayOp::Reduce {
            op: ReduceOp::Max,
            arr: a,
            axis: None,
        },
        ArrayOp::Reduce {
            op: ReduceOp::Min,
            arr: a,
            axis: None,
        },
        ArrayOp::ArgReduce {
            op: ReduceOp::Sum,
            arr: a,
            axis: None,
        },
        ArrayOp::ArgReduce {
            op: ReduceOp::Prod,
            arr: a,
            axis: None,
        },
        ArrayOp::ArgReduce {
            op: ReduceOp::Max,
            arr: a,
            axis: None,
        },
        ArrayOp::ArgReduce {
            op: ReduceOp::Min,
            arr: a,
            axis: None,
        },
        ArrayOp::Scan {
            arr: a,
            reverse: false,
        },
        ArrayOp::MatMul { a, b: a },
        ArrayOp::Transpose { arr: a },
        ArrayOp::Broadcast {
            arr: a,
            shape: Vec::new(),
            axes: Vec::new(),
        },
        ArrayOp::Shape { arr: a, axis: 0 },
        ArrayOp::Stride { arr: a, axis: 0 },
    ]
};

/// One linear operation of each kind, with placeholder operands: the parser
/// finds the kind a keyword names by [`LinOp::name`], then reads its
/// operands (`Parser::lin_op`, as for [`ARRAY_OPS`]).
const LIN_OPS: [LinOp; 20] = {
    let (a, x) = (Atom::I64(0), Var(0));
    [
        LinOp::Zero(ShapeTree::Scalar),
        LinOp::Add(x, x),
        LinOp::Neg(x),
        LinOp::Scale { s: a, x },
        LinOp::Dup(x),
        LinOp::Drop(x),
        LinOp::Tuple(Vec::new()),
        LinOp::Untuple(x),
        LinOp::Index { x, idx: Vec::new() },
        LinOp::Update {
            x,
            idx: Vec::new(),
            val: x,
            add: false,
        },
        LinOp::Take {
            x,
            idx: Vec::new(),
            zero: false,
        },
        LinOp::Gather { x, idx: a },
        LinOp::ScatterAdd { len: a, idx: a, x },
        LinOp::Sum { x, axis: None },
        LinOp::Broadcast {
            x,
            shape: Vec::new(),
            axes: Vec::new(),
        },
        LinOp::SumTo {
            x,
            shape: Vec::new(),
        },
        LinOp::Transpose(x),
        LinOp::MatMul {
            a,
            x,
            lin_left: false,
        },
        LinOp::Outer {
            x,
            b: a,
            lin_left: false,
        },
        LinOp::Scan { x, reverse: false },
    ]
};

// ---------------------------------------------------------------------------
// Parser

/// What the text says about one variable index.
#[derive(Default)]
struct Slot {
    /// Declared (name, type, linear), with where.
    decl: Option<VarInfo>,
    /// Name of the first use before any declaration, with its position.
    used_as: Option<(String, usize, usize)>,
}

struct Parser<'k> {
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
    vars: BTreeMap<u32, Slot>,
    /// Callees named by `call`, with their positions.
    calls: Vec<(String, usize, usize)>,
    known: &'k dyn Fn(&str) -> bool,
}

/// A lambda's `|..|` parameters.
type Params = (Vec<Var>, Vec<Var>);

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].tok
    }

    fn here(&self) -> (usize, usize) {
        let t = &self.toks[self.pos.min(self.toks.len() - 1)];
        (t.line, t.col)
    }

    fn next(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn err<T>(&self, msg: impl Into<String>) -> PResult<T> {
        let (line, col) = self.here();
        Err(ParseError {
            line,
            col,
            msg: msg.into(),
        })
    }

    fn unexpected<T>(&self, what: &str) -> PResult<T> {
        self.err(format!("expected {what}, found {}", describe(self.peek())))
    }

    fn is_p(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::P(q) if *q == p)
    }

    fn is_kw(&self, k: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == k)
    }

    fn eat_p(&mut self, p: &str) -> bool {
        let yes = self.is_p(p);
        if yes {
            self.next();
        }
        yes
    }

    fn eat_kw(&mut self, k: &str) -> bool {
        let yes = self.is_kw(k);
        if yes {
            self.next();
        }
        yes
    }

    fn expect_p(&mut self, p: &str) -> PResult<()> {
        if self.eat_p(p) {
            Ok(())
        } else {
            self.unexpected(&format!("`{p}`"))
        }
    }

    fn expect_kw(&mut self, k: &str) -> PResult<()> {
        if self.eat_kw(k) {
            Ok(())
        } else {
            self.unexpected(&format!("`{k}`"))
        }
    }

    fn expect_newline(&mut self) -> PResult<()> {
        match self.peek() {
            Tok::Newline => {
                self.next();
                Ok(())
            }
            Tok::Eof => Ok(()),
            _ => self.unexpected("end of line"),
        }
    }

    fn skip_newlines(&mut self) {
        while *self.peek() == Tok::Newline {
            self.next();
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err(format!("nesting deeper than {MAX_DEPTH}"));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // --- lists ------------------------------------------------------------

    /// `a, .. ; b, ..` up to (not including) a token satisfying `end`.
    fn split_list<A, B>(
        &mut self,
        end: fn(&Tok) -> bool,
        what: &str,
        nl: fn(&mut Self) -> PResult<A>,
        lin: fn(&mut Self) -> PResult<B>,
    ) -> PResult<(Vec<A>, Vec<B>)> {
        let mut a = vec![];
        let mut b = vec![];
        if !end(self.peek()) && !self.is_p(";") {
            loop {
                a.push(nl(self)?);
                if !self.eat_p(",") {
                    break;
                }
            }
        }
        if self.eat_p(";") && !end(self.peek()) {
            loop {
                b.push(lin(self)?);
                if !self.eat_p(",") {
                    break;
                }
            }
        }
        if end(self.peek()) {
            Ok((a, b))
        } else {
            self.unexpected(&format!("`,`, `;` or {what}"))
        }
    }

    /// `a, b, ..` (at least one) of one kind.
    fn list1<A>(&mut self, item: fn(&mut Self) -> PResult<A>) -> PResult<Vec<A>> {
        let mut out = vec![item(self)?];
        while self.eat_p(",") {
            out.push(item(self)?);
        }
        Ok(out)
    }

    /// `[a, ..]` (possibly empty).
    fn bracket_list<A>(&mut self, item: fn(&mut Self) -> PResult<A>) -> PResult<Vec<A>> {
        self.expect_p("[")?;
        let out = if self.is_p("]") {
            vec![]
        } else {
            self.list1(item)?
        };
        self.expect_p("]")?;
        Ok(out)
    }

    /// Items to the end of the statement (possibly none).
    fn list_to_eol<A>(&mut self, item: fn(&mut Self) -> PResult<A>) -> PResult<Vec<A>> {
        if matches!(self.peek(), Tok::Newline | Tok::Eof | Tok::Src(_)) {
            Ok(vec![])
        } else {
            self.list1(item)
        }
    }

    // --- atoms, variables, types, shapes ------------------------------------

    fn usize_lit(&mut self) -> PResult<usize> {
        match self.peek().clone() {
            Tok::Num(s) => match s.parse::<usize>() {
                Ok(n) => {
                    self.next();
                    Ok(n)
                }
                Err(_) => self.err(format!("expected a non-negative integer, found `{s}`")),
            },
            _ => self.unexpected("a non-negative integer"),
        }
    }

    /// A variable token: `(name, index)`.
    fn var_name(&mut self) -> PResult<(String, u32)> {
        let (name, digits) = match self.peek() {
            Tok::Ident(s) if is_var_tok(self.peek()) => {
                let (n, d) = split_var(s).unwrap_or_default();
                (n.to_string(), d.to_string())
            }
            Tok::QVar(n, d) => (n.clone(), d.clone()),
            _ => return self.unexpected("a variable (`name_N`)"),
        };
        match digits.parse::<u32>() {
            Ok(i) if i <= MAX_VAR_INDEX => {
                self.next();
                Ok((name, i))
            }
            _ => self.err(format!(
                "variable index `{digits}` is larger than {MAX_VAR_INDEX}"
            )),
        }
    }

    /// A use of a variable.
    fn var_ref(&mut self) -> PResult<Var> {
        let (line, col) = self.here();
        let (name, i) = self.var_name()?;
        let slot = self.vars.entry(i).or_default();
        if let Some(d) = &slot.decl {
            if d.name != name {
                let msg = format!("variable {i} is declared as `{}`, used as `{name}`", d.name);
                return Err(ParseError { line, col, msg });
            }
        } else if slot.used_as.is_none() {
            slot.used_as = Some((name, line, col));
        }
        Ok(Var(i))
    }

    /// A binder `name_N: ty`.
    fn var_decl(&mut self, linear: bool) -> PResult<Var> {
        let (line, col) = self.here();
        let (name, i) = self.var_name()?;
        self.expect_p(":")?;
        let ty = self.ty()?;
        let info = VarInfo { name, ty, linear };
        let slot = self.vars.entry(i).or_default();
        match &slot.decl {
            Some(d) if *d != info => Err(ParseError {
                line,
                col,
                msg: format!("variable {i} declared twice, differently"),
            }),
            _ => {
                slot.decl = Some(info);
                Ok(Var(i))
            }
        }
    }

    fn nl_decl(&mut self) -> PResult<Var> {
        self.var_decl(false)
    }

    fn lin_decl(&mut self) -> PResult<Var> {
        self.var_decl(true)
    }

    fn atom(&mut self) -> PResult<Atom> {
        let t = self.peek().clone();
        if is_var_tok(&t) {
            return Ok(Atom::Var(self.var_ref()?));
        }
        let a = match &t {
            Tok::Num(s) => {
                if s.contains(['.', 'e', 'E']) {
                    match s.parse::<f64>() {
                        Ok(x) => Atom::F64(x),
                        Err(_) => return self.err(format!("malformed f64 `{s}`")),
                    }
                } else {
                    match s.parse::<i64>() {
                        Ok(x) => Atom::I64(x),
                        Err(_) => return self.err(format!("i64 literal `{s}` out of range")),
                    }
                }
            }
            Tok::Ident(s) => match s.as_str() {
                "true" => Atom::Bool(true),
                "false" => Atom::Bool(false),
                "inf" => Atom::F64(f64::INFINITY),
                "-inf" => Atom::F64(f64::NEG_INFINITY),
                "NaN" => Atom::F64(f64::NAN),
                "-NaN" => Atom::F64(-f64::NAN),
                _ => match s
                    .strip_prefix("nan0x")
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .map(f64::from_bits)
                    .filter(|x| x.is_nan())
                {
                    Some(x) => Atom::F64(x),
                    None => return self.unexpected("an operand"),
                },
            },
            _ => return self.unexpected("an operand"),
        };
        self.next();
        Ok(a)
    }

    fn ty(&mut self) -> PResult<Ty> {
        self.enter()?;
        let r = self.ty_inner();
        self.leave();
        r
    }

    fn ty_inner(&mut self) -> PResult<Ty> {
        match self.peek().clone() {
            Tok::Ident(s) => {
                let t = match s.as_str() {
                    "f64" => Ty::F64,
                    "i64" => Ty::I64,
                    "bool" => Ty::BOOL,
                    _ => return self.unexpected("a type"),
                };
                self.next();
                Ok(t)
            }
            Tok::P("[") => {
                self.next();
                let inner = self.ty()?;
                self.expect_p("]")?;
                match inner {
                    Ty::Scalar(elem) => Ok(Ty::Array { elem, rank: 1 }),
                    Ty::Array { elem, rank } => Ok(Ty::Array {
                        elem,
                        rank: rank + 1,
                    }),
                    Ty::Tuple(_) | Ty::Opaque(_) => {
                        self.err("arrays of tuples or opaque values are not types")
                    }
                }
            }
            Tok::P("(") => {
                self.next();
                let mut ts = vec![];
                while !self.is_p(")") {
                    ts.push(self.ty()?);
                    if !self.eat_p(",") {
                        break;
                    }
                }
                self.expect_p(")")?;
                Ok(Ty::Tuple(ts))
            }
            _ => self.unexpected("a type"),
        }
    }

    /// A type in the `def` line's result list (`?` allowed; ignored).
    fn result_ty(&mut self) -> PResult<()> {
        if !self.eat_p("?") {
            self.ty()?;
        }
        Ok(())
    }

    fn dim(&mut self) -> PResult<Dim> {
        if self.is_kw("shape") && *self.peek_at(1) == Tok::P("(") {
            self.next();
            self.next();
            let v = self.var_ref()?;
            self.expect_p(",")?;
            let axis = self.usize_lit()?;
            self.expect_p(")")?;
            Ok(Dim::Of(v, axis))
        } else {
            Ok(Dim::Atom(self.atom()?))
        }
    }

    fn shape(&mut self) -> PResult<ShapeTree> {
        self.enter()?;
        let r = self.shape_inner();
        self.leave();
        r
    }

    fn shape_inner(&mut self) -> PResult<ShapeTree> {
        match self.peek() {
            Tok::P("[") => Ok(ShapeTree::Array(self.bracket_list(Self::dim)?)),
            Tok::P("(") => {
                self.next();
                if self.eat_p(")") {
                    return Ok(ShapeTree::Scalar);
                }
                if self.eat_p(",") {
                    self.expect_p(")")?;
                    return Ok(ShapeTree::Tuple(vec![]));
                }
                let mut ts = vec![];
                while !self.is_p(")") {
                    ts.push(self.shape()?);
                    if !self.eat_p(",") {
                        break;
                    }
                }
                self.expect_p(")")?;
                Ok(ShapeTree::Tuple(ts))
            }
            _ => self.unexpected("a shape (`()`, `[..]` or a tuple)"),
        }
    }

    /// `@ shape, shape, ..` or nothing.
    fn shapes_suffix(&mut self) -> PResult<Vec<ShapeTree>> {
        if self.eat_p("@") {
            self.list1(Self::shape)
        } else {
            Ok(vec![])
        }
    }

    fn axis_suffix(&mut self) -> PResult<Option<usize>> {
        if self.eat_p(",") {
            self.expect_kw("axis")?;
            self.expect_p("=")?;
            Ok(Some(self.usize_lit()?))
        } else {
            Ok(None)
        }
    }

    fn axes_suffix(&mut self) -> PResult<Vec<usize>> {
        if self.eat_p(",") {
            self.expect_kw("axes")?;
            self.expect_p("=")?;
            self.bracket_list(Self::usize_lit)
        } else {
            Ok(vec![])
        }
    }

    fn update_op(&mut self) -> PResult<bool> {
        if self.eat_p("+=") {
            Ok(true)
        } else if self.eat_p("=") {
            Ok(false)
        } else {
            self.unexpected("`=` or `+=`")
        }
    }

    fn func_name(&mut self) -> PResult<String> {
        let name = match self.peek() {
            Tok::Ident(s) if !s.starts_with('-') => s.clone(),
            Tok::Str(s) => s.clone(),
            _ => return self.unexpected("a function name"),
        };
        self.next();
        Ok(name)
    }

    // --- expressions ----------------------------------------------------------

    /// Two operands of a `lin_left`-flagged op: `(non-linear, linear, lin_left)`.
    fn lin_pair(&mut self) -> PResult<(Atom, Var, bool)> {
        let (l1, c1) = self.here();
        let first = self.atom()?;
        self.expect_p(",")?;
        let (l2, c2) = self.here();
        let second = self.atom()?;
        let lin_left = self.eat_kw("lin_left");
        let (a, x, (line, col)) = if lin_left {
            (second, first, (l1, c1))
        } else {
            (first, second, (l2, c2))
        };
        match x {
            Atom::Var(v) => Ok((a, v, lin_left)),
            _ => Err(ParseError {
                line,
                col,
                msg: "expected a linear variable, found a literal".into(),
            }),
        }
    }

    /// The operands of an array operation of `kind`'s kind (its keyword
    /// read).
    fn array_op(&mut self, kind: &ArrayOp) -> PResult<ArrayOp> {
        Ok(match kind {
            ArrayOp::Reduce { op, .. } => {
                let arr = self.atom()?;
                let axis = self.axis_suffix()?;
                ArrayOp::Reduce { op: *op, arr, axis }
            }
            ArrayOp::ArgReduce { op, .. } => {
                let arr = self.atom()?;
                let axis = self.axis_suffix()?;
                ArrayOp::ArgReduce { op: *op, arr, axis }
            }
            ArrayOp::Index { .. } => {
                let a = self.atom()?;
                let idx = self.bracket_list(Self::atom)?;
                ArrayOp::Index { arr: a, idx }
            }
            ArrayOp::Update { .. } => {
                let a = self.atom()?;
                let idx = self.bracket_list(Self::atom)?;
                let add = self.update_op()?;
                let val = self.atom()?;
                ArrayOp::Update {
                    arr: a,
                    idx,
                    val,
                    add,
                }
            }
            ArrayOp::Gather { .. } => {
                let a = self.atom()?;
                self.expect_p(",")?;
                ArrayOp::Gather {
                    arr: a,
                    idx: self.atom()?,
                }
            }
            ArrayOp::ScatterAdd { .. } => {
                let len = self.atom()?;
                self.expect_p(",")?;
                let idx = self.atom()?;
                self.expect_p(",")?;
                ArrayOp::ScatterAdd {
                    len,
                    idx,
                    vals: self.atom()?,
                }
            }
            ArrayOp::Scan { .. } => {
                let a = self.atom()?;
                ArrayOp::Scan {
                    arr: a,
                    reverse: self.eat_kw("rev"),
                }
            }
            ArrayOp::MatMul { .. } => {
                let a = self.atom()?;
                self.expect_p(",")?;
                ArrayOp::MatMul { a, b: self.atom()? }
            }
            ArrayOp::Transpose { .. } => ArrayOp::Transpose { arr: self.atom()? },
            ArrayOp::Broadcast { .. } => {
                let a = self.atom()?;
                self.expect_p(",")?;
                let shape = self.bracket_list(Self::atom)?;
                let axes = self.axes_suffix()?;
                ArrayOp::Broadcast {
                    arr: a,
                    shape,
                    axes,
                }
            }
            ArrayOp::Shape { .. } => {
                let a = self.atom()?;
                self.expect_p(",")?;
                ArrayOp::Shape {
                    arr: a,
                    axis: self.usize_lit()?,
                }
            }
            ArrayOp::Stride { .. } => {
                let a = self.atom()?;
                self.expect_p(",")?;
                ArrayOp::Stride {
                    arr: a,
                    axis: self.usize_lit()?,
                }
            }
        })
    }

    /// The operands of a linear operation of `kind`'s kind (its keyword
    /// read).
    fn lin_op(&mut self, kind: &LinOp) -> PResult<LinOp> {
        Ok(match kind {
            LinOp::Zero(_) => LinOp::Zero(self.shape()?),
            LinOp::Add(..) => {
                let x = self.var_ref()?;
                self.expect_p(",")?;
                LinOp::Add(x, self.var_ref()?)
            }
            LinOp::Neg(_) => LinOp::Neg(self.var_ref()?),
            LinOp::Scale { .. } => {
                let s = self.atom()?;
                self.expect_p(",")?;
                LinOp::Scale {
                    s,
                    x: self.var_ref()?,
                }
            }
            LinOp::Dup(_) => LinOp::Dup(self.var_ref()?),
            LinOp::Drop(_) => LinOp::Drop(self.var_ref()?),
            LinOp::Tuple(_) => LinOp::Tuple(self.list_to_eol(Self::var_ref)?),
            LinOp::Untuple(_) => LinOp::Untuple(self.var_ref()?),
            LinOp::Index { .. } => {
                let x = self.var_ref()?;
                let idx = self.bracket_list(Self::atom)?;
                LinOp::Index { x, idx }
            }
            LinOp::Update { .. } => {
                let x = self.var_ref()?;
                let idx = self.bracket_list(Self::atom)?;
                let add = self.update_op()?;
                let val = self.var_ref()?;
                LinOp::Update { x, idx, val, add }
            }
            LinOp::Take { .. } => {
                let x = self.var_ref()?;
                let idx = self.bracket_list(Self::atom)?;
                let zero = !self.eat_kw("keep");
                LinOp::Take { x, idx, zero }
            }
            LinOp::Gather { .. } => {
                let x = self.var_ref()?;
                self.expect_p(",")?;
                LinOp::Gather {
                    x,
                    idx: self.atom()?,
                }
            }
            LinOp::ScatterAdd { .. } => {
                let len = self.atom()?;
                self.expect_p(",")?;
                let idx = self.atom()?;
                self.expect_p(",")?;
                LinOp::ScatterAdd {
                    len,
                    idx,
                    x: self.var_ref()?,
                }
            }
            LinOp::Sum { .. } => {
                let x = self.var_ref()?;
                LinOp::Sum {
                    x,
                    axis: self.axis_suffix()?,
                }
            }
            LinOp::Broadcast { .. } => {
                let x = self.var_ref()?;
                self.expect_p(",")?;
                let shape = self.bracket_list(Self::atom)?;
                let axes = self.axes_suffix()?;
                LinOp::Broadcast { x, shape, axes }
            }
            LinOp::SumTo { .. } => {
                let x = self.var_ref()?;
                self.expect_p(",")?;
                let shape = self.bracket_list(Self::atom)?;
                LinOp::SumTo { x, shape }
            }
            LinOp::Transpose(_) => LinOp::Transpose(self.var_ref()?),
            LinOp::Scan { .. } => {
                let x = self.var_ref()?;
                LinOp::Scan {
                    x,
                    reverse: self.eat_kw("rev"),
                }
            }
            LinOp::MatMul { .. } => {
                let (a, x, lin_left) = self.lin_pair()?;
                LinOp::MatMul { a, x, lin_left }
            }
            LinOp::Outer { .. } => {
                let (b, x, lin_left) = self.lin_pair()?;
                LinOp::Outer { x, b, lin_left }
            }
        })
    }

    /// A one-line expression (after its keyword, for keyword forms).
    fn simple_expr(&mut self) -> PResult<Expr> {
        if is_var_tok(self.peek()) || matches!(self.peek(), Tok::Num(_)) {
            return Ok(Expr::Atom(self.atom()?));
        }
        let kw = match self.peek() {
            Tok::Ident(s) => s.clone(),
            _ => return self.unexpected("an expression"),
        };
        if matches!(
            kw.as_str(),
            "true" | "false" | "inf" | "-inf" | "NaN" | "-NaN"
        ) || kw.starts_with("nan0x")
        {
            return Ok(Expr::Atom(self.atom()?));
        }
        if let Some(p) = prim_by_name(&kw) {
            self.next();
            return Ok(Expr::Prim(p, self.list_to_eol(Self::atom)?));
        }
        if let Some(kind) = ARRAY_OPS.iter().find(|op| op.name() == kw) {
            self.next();
            return Ok(Expr::Array(self.array_op(kind)?));
        }
        if let Some(kind) = LIN_OPS.iter().find(|op| op.name() == kw) {
            self.next();
            return Ok(Expr::Lin(self.lin_op(kind)?));
        }
        self.next();
        Ok(match kw.as_str() {
            "tuple" => Expr::Tuple(self.list_to_eol(Self::atom)?),
            "untuple" => Expr::Untuple(self.atom()?),
            "call" => {
                let (line, col) = self.here();
                let func = self.func_name()?;
                self.calls.push((func.clone(), line, col));
                self.expect_p("(")?;
                let (args, lin_args) =
                    self.split_list(|t| *t == Tok::P(")"), "`)`", Self::atom, Self::var_ref)?;
                self.expect_p(")")?;
                Expr::Call(Call {
                    func,
                    args,
                    lin_args,
                    lin_shapes: self.shapes_suffix()?,
                })
            }
            _ => {
                self.pos -= 1;
                return self.unexpected("an expression");
            }
        })
    }

    /// `{ [#N] NL stmts yield .. NL }`.
    fn braced_block(&mut self, src: Option<&mut Option<SrcId>>) -> PResult<Block> {
        self.expect_p("{")?;
        if let Some(src) = src {
            *src = self.opt_src()?;
        }
        self.expect_newline()?;
        self.enter()?;
        let b = self.block_body("yield");
        self.leave();
        let b = b?;
        self.expect_p("}")?;
        Ok(b)
    }

    /// Statements then `kw results NL` (the `{` and `}` are the caller's).
    fn block_body(&mut self, kw: &str) -> PResult<Block> {
        let mut stmts = vec![];
        loop {
            self.skip_newlines();
            if self.eat_kw(kw) {
                let (results, lin_results) = self.split_list(
                    |t| matches!(t, Tok::Newline | Tok::Eof),
                    "end of line",
                    Self::atom,
                    Self::var_ref,
                )?;
                self.expect_newline()?;
                self.skip_newlines();
                return Ok(Block {
                    stmts,
                    results,
                    lin_results,
                });
            }
            if self.is_p("}") || *self.peek() == Tok::Eof {
                return self.unexpected(&format!("a statement or `{kw}`"));
            }
            stmts.push(self.stmt()?);
        }
    }

    fn opt_src(&mut self) -> PResult<Option<SrcId>> {
        match self.peek().clone() {
            Tok::Src(n) => match n.parse::<u32>() {
                Ok(n) => {
                    self.next();
                    Ok(Some(SrcId(n)))
                }
                Err(_) => self.err(format!("source id `#{n}` out of range")),
            },
            _ => Ok(None),
        }
    }

    /// `|params ; lin_params| block`.
    fn lambda(&mut self, src: &mut Option<SrcId>) -> PResult<(Params, Block)> {
        self.expect_p("|")?;
        let ps = self.split_list(|t| *t == Tok::P("|"), "`|`", Self::nl_decl, Self::lin_decl)?;
        self.expect_p("|")?;
        let body = self.braced_block(Some(src))?;
        Ok((ps, body))
    }

    /// Whether a `(` state list of a loop or fold is in the paired form
    /// (`acc_3: f64 = 0.0`); the `(` is the current token.
    fn paired_state(&self) -> bool {
        let k = if *self.peek_at(1) == Tok::P(";") {
            2
        } else {
            1
        };
        is_var_tok(self.peek_at(k)) && *self.peek_at(k + 1) == Tok::P(":")
    }

    fn nl_state(&mut self) -> PResult<(Var, Atom)> {
        let v = self.var_decl(false)?;
        self.expect_p("=")?;
        Ok((v, self.atom()?))
    }

    fn lin_state(&mut self) -> PResult<(Var, Var)> {
        let v = self.var_decl(true)?;
        self.expect_p("=")?;
        Ok((v, self.var_ref()?))
    }

    fn compound_expr(&mut self, kw: &str, src: &mut Option<SrcId>) -> PResult<Expr> {
        let close = |t: &Tok| *t == Tok::P(")");
        Ok(match kw {
            "if" => {
                let cond = self.atom()?;
                let lin_shapes = self.shapes_suffix()?;
                let then_ = self.braced_block(Some(src))?;
                self.expect_kw("else")?;
                let else_ = self.braced_block(None)?;
                Expr::If(If {
                    cond,
                    then_,
                    else_,
                    lin_shapes,
                })
            }
            "loop" => {
                let n = self.atom()?;
                let rev = self.eat_kw("rev");
                let mut paired = true;
                let (mut init, mut lin_init) = (vec![], vec![]);
                let (mut svars, mut lsvars) = (vec![], vec![]);
                if self.is_p("(") {
                    paired = self.paired_state();
                    self.next();
                    if paired {
                        let (a, b) =
                            self.split_list(close, "`)`", Self::nl_state, Self::lin_state)?;
                        (svars, init) = a.into_iter().unzip();
                        (lsvars, lin_init) = b.into_iter().unzip();
                    } else {
                        (init, lin_init) =
                            self.split_list(close, "`)`", Self::atom, Self::var_ref)?;
                    }
                    self.expect_p(")")?;
                }
                let ((mut params, mut lin_params), body) = self.lambda(src)?;
                if paired {
                    params.extend(svars);
                    lin_params.extend(lsvars);
                }
                Expr::Loop(Loop {
                    n,
                    rev,
                    init,
                    lin_init,
                    body: Lambda {
                        params,
                        lin_params,
                        body,
                    },
                })
            }
            "fold" => {
                let arr = self.atom()?;
                let mut init = vec![];
                let mut svars = vec![];
                if self.is_p("(") {
                    let paired = self.paired_state();
                    self.next();
                    if paired {
                        let pairs: Vec<(Var, Atom)> = self.list1(Self::nl_state)?;
                        (svars, init) = pairs.into_iter().unzip();
                    } else {
                        init = self.list1(Self::atom)?;
                    }
                    self.expect_p(")")?;
                }
                let ((params, lin_params), body) = self.lambda(src)?;
                svars.extend(params);
                Expr::Fold(Fold {
                    init,
                    arr,
                    body: Lambda {
                        params: svars,
                        lin_params,
                        body,
                    },
                })
            }
            "while" => {
                let mut init = vec![];
                if self.eat_p("(") {
                    init = self.list1(Self::atom)?;
                    self.expect_p(")")?;
                }
                let ((params, lin_params), body) = self.lambda(src)?;
                let cond = Lambda {
                    params,
                    lin_params,
                    body,
                };
                self.expect_kw("do")?;
                let ((params, lin_params), body) = self.lambda(&mut None)?;
                Expr::While(While {
                    init,
                    cond,
                    body: Lambda {
                        params,
                        lin_params,
                        body,
                    },
                })
            }
            "build" => {
                let shape = self.bracket_list(Self::atom)?;
                let ((params, lin_params), body) = self.lambda(src)?;
                Expr::Build(Build {
                    shape,
                    body: Lambda {
                        params,
                        lin_params,
                        body,
                    },
                })
            }
            "map" => {
                self.expect_p("(")?;
                let (arrs, lin_arrs) = self.split_list(close, "`)`", Self::atom, Self::var_ref)?;
                self.expect_p(")")?;
                let ((params, lin_params), body) = self.lambda(src)?;
                Expr::Map(Map::new(arrs, lin_arrs, params, lin_params, body))
            }
            _ => return self.unexpected("a compound expression"),
        })
    }

    /// One statement, through its final line break.
    fn stmt(&mut self) -> PResult<Stmt> {
        let (binds, lin_binds) = if self.eat_kw("let") {
            let r = self.split_list(|t| *t == Tok::P("="), "`=`", Self::nl_decl, Self::lin_decl)?;
            self.expect_p("=")?;
            r
        } else {
            (vec![], vec![])
        };
        let compound = match self.peek() {
            Tok::Ident(s)
                if matches!(
                    s.as_str(),
                    "if" | "loop" | "fold" | "build" | "map" | "while"
                ) =>
            {
                Some(s.clone())
            }
            _ => None,
        };
        let mut src = None;
        let expr = match compound {
            Some(kw) => {
                self.next();
                self.compound_expr(&kw, &mut src)?
            }
            None => {
                let e = self.simple_expr()?;
                src = self.opt_src()?;
                e
            }
        };
        self.expect_newline()?;
        Ok(Stmt {
            binds,
            lin_binds,
            expr,
            src,
        })
    }

    /// `name_N: ty [@ shape]` of a linear parameter.
    fn lin_param(&mut self) -> PResult<(Var, Option<ShapeTree>)> {
        let v = self.var_decl(true)?;
        let s = if self.eat_p("@") {
            Some(self.shape()?)
        } else {
            None
        };
        Ok((v, s))
    }

    /// One `def`, with a fresh variable table.
    fn func(&mut self) -> PResult<Func> {
        self.vars.clear();
        self.expect_kw("def")?;
        let name = self.func_name()?;
        self.expect_p("(")?;
        let (line, col) = self.here();
        let (params, lps) =
            self.split_list(|t| *t == Tok::P(")"), "`)`", Self::nl_decl, Self::lin_param)?;
        let mut lin_params = vec![];
        let mut lin_param_shapes = vec![];
        for (v, s) in lps {
            lin_params.push(v);
            match s {
                Some(s) if lin_param_shapes.len() + 1 == lin_params.len() => {
                    lin_param_shapes.push(s)
                }
                None => {}
                Some(_) => {
                    return Err(ParseError {
                        line,
                        col,
                        msg: "linear parameter shapes (`@ shape`) must be given for the \
                              first parameters"
                            .into(),
                    })
                }
            }
        }
        self.expect_p(")")?;
        self.expect_p("->")?;
        self.expect_p("(")?;
        self.split_list(
            |t| *t == Tok::P(")"),
            "`)`",
            Self::result_ty,
            Self::result_ty,
        )?;
        self.expect_p(")")?;
        self.expect_p("{")?;
        self.expect_newline()?;
        self.skip_newlines();
        if self.eat_kw("unbound") {
            self.split_list(
                |t| matches!(t, Tok::Newline | Tok::Eof),
                "end of line",
                Self::nl_decl,
                Self::lin_decl,
            )?;
            self.expect_newline()?;
        }
        let body = self.block_body("return")?;
        self.expect_p("}")?;
        self.expect_newline()?;
        self.skip_newlines();
        let vars = self.table()?;
        Ok(Func {
            name,
            params,
            lin_params,
            lin_param_shapes,
            body,
            vars,
        })
    }

    /// The variable table of the function just parsed.
    fn table(&mut self) -> PResult<VarTable> {
        let len = self.vars.keys().next_back().map_or(0, |k| *k as usize + 1);
        let mut vars = vec![
            VarInfo {
                name: String::new(),
                ty: Ty::Tuple(vec![]),
                linear: false,
            };
            len
        ];
        for (i, slot) in std::mem::take(&mut self.vars) {
            let info = &mut vars[i as usize];
            match (slot.decl, slot.used_as) {
                (Some(d), Some((name, line, col))) if d.name != name => {
                    return Err(ParseError {
                        line,
                        col,
                        msg: format!("variable {i} is declared as `{}`, used as `{name}`", d.name),
                    })
                }
                (Some(d), _) => *info = d,
                (None, Some((name, _, _))) => info.name = name,
                (None, None) => {}
            }
        }
        Ok(VarTable { vars })
    }

    fn check_calls(&mut self, own: &[&str]) -> PResult<()> {
        for (f, line, col) in std::mem::take(&mut self.calls) {
            if !own.contains(&f.as_str()) && !(self.known)(&f) {
                return Err(ParseError {
                    line,
                    col,
                    msg: format!("call of unknown function `{f}`"),
                });
            }
        }
        Ok(())
    }
}

fn parser<'k>(s: &str, known: &'k dyn Fn(&str) -> bool) -> PResult<Parser<'k>> {
    let mut p = Parser {
        toks: lex(s)?,
        pos: 0,
        depth: 0,
        vars: BTreeMap::new(),
        calls: vec![],
        known,
    };
    p.skip_newlines();
    Ok(p)
}

/// Parses a program: a sequence of functions as printed by
/// [`crate::pretty::program_to_string`]. Calls must name a function of the text.
pub fn parse_program(s: &str) -> Result<Program, ParseError> {
    let none = |_: &str| false;
    let mut p = parser(s, &none)?;
    let mut funcs = vec![];
    while *p.peek() != Tok::Eof {
        funcs.push(p.func()?);
    }
    let names: Vec<&str> = funcs.iter().map(|f| f.name.as_str()).collect();
    p.check_calls(&names)?;
    Ok(Program {
        funcs,
        externs: vec![],
        linear_externs: vec![],
        wrt_externs: vec![],
    })
}

/// Parses one function as printed by [`crate::pretty::func_to_string`]. Calls
/// must name a function of `prog` (or the function itself).
pub fn parse_func(s: &str, prog: &Program) -> Result<Func, ParseError> {
    let known = |f: &str| prog.func(f).is_some();
    let mut p = parser(s, &known)?;
    let f = p.func()?;
    if *p.peek() != Tok::Eof {
        return p.unexpected("end of input after the function");
    }
    p.check_calls(&[f.name.as_str()])?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operation tables hold one operation per name: a keyword finds
    /// the kind it was printed from.
    #[test]
    fn every_operation_kind_is_found_by_its_name() {
        for op in &ARRAY_OPS {
            assert_eq!(ARRAY_OPS.iter().find(|k| k.name() == op.name()), Some(op));
        }
        for op in &LIN_OPS {
            assert_eq!(LIN_OPS.iter().find(|k| k.name() == op.name()), Some(op));
        }
    }
}
