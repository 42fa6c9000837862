//! argparse's nargs patterns and its regex matching, without a regex engine.
//!
//! argparse (CPython `Lib/argparse.py`, 3.11 and 3.12) classifies every
//! argument string as `O` (looks like an option), `A` (an argument) or `-`
//! (the first `--`), joins them into a string, and then matches each
//! action's *nargs pattern* against it with `re.match` (anchored at the
//! start, free at the end, greedy, leftmost-first backtracking). The
//! patterns it builds (`_get_nargs_pattern`) only ever use three kinds of
//! item: a literal `A`, an optional `A?`, and a starred character class
//! (`-*`, `[A-]*`, `[-AO]*`). This module rebuilds exactly those patterns and
//! matches them with the same greedy backtracking, so the counts agree with
//! argparse's `_match_argument` and `_match_arguments_partial`.

use crate::catalog::Nargs;

/// One symbol of argparse's argument-string pattern.
pub(crate) const ARG: u8 = b'A';
/// An option-looking string.
pub(crate) const OPT: u8 = b'O';
/// The first `--` (everything after it is `A`).
pub(crate) const DASHDASH: u8 = b'-';

/// One item of a nargs pattern: a character class repeated `min..=max`
/// times (`max == None`: unbounded), matched greedily.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Item {
    /// Accepted symbols, as a bit set over `A`, `O`, `-`.
    set: u8,
    min: usize,
    max: Option<usize>,
}

const SA: u8 = 1;
const SO: u8 = 2;
const SD: u8 = 4;

fn bit(sym: u8) -> u8 {
    match sym {
        ARG => SA,
        OPT => SO,
        _ => SD,
    }
}

const fn star(set: u8) -> Item {
    Item {
        set,
        min: 0,
        max: None,
    }
}
const A_ONE: Item = Item {
    set: SA,
    min: 1,
    max: Some(1),
};
const A_OPT: Item = Item {
    set: SA,
    min: 0,
    max: Some(1),
};

/// The pattern argparse's `_get_nargs_pattern` builds for an action, as
/// items. `optional` is true for actions with option strings: argparse then
/// deletes every `-*` and every `-` from the pattern (an option's values
/// never include `--`).
fn pattern(nargs: Nargs, optional: bool) -> Vec<Item> {
    let d = star(SD);
    let mut items = match nargs {
        // '(-*A-*)'
        Nargs::Default => vec![d, A_ONE, d],
        // '(-*A?-*)'
        Nargs::Optional => vec![d, A_OPT, d],
        // '(-*[A-]*)'
        Nargs::ZeroOrMore => vec![d, star(SA | SD)],
        // '(-*A[A-]*)'
        Nargs::OneOrMore => vec![d, A_ONE, star(SA | SD)],
        // '([-AO]*)'
        Nargs::Remainder => vec![star(SA | SO | SD)],
        // '(-*A[-AO]*)'
        Nargs::Parser => vec![d, A_ONE, star(SA | SO | SD)],
        // '(-*%s-*)' % '-*'.join('A' * n)
        Nargs::Exactly(n) => {
            let mut v = vec![d];
            for i in 0..n {
                if i > 0 {
                    v.push(d);
                }
                v.push(A_ONE);
            }
            v.push(d);
            v
        }
    };
    if optional {
        // pattern.replace('-*', '').replace('-', '')
        items.retain(|it| it.set != SD);
        for it in &mut items {
            it.set &= !SD;
        }
    }
    items
}

/// The matching ran out of its step budget (only reachable with hostile,
/// very long argv against several variadic positionals). Callers fail
/// closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooComplex;

const STEP_BUDGET: usize = 200_000;

struct Matcher<'a> {
    items: &'a [Item],
    input: &'a [u8],
    counts: Vec<usize>,
    steps: usize,
}

impl Matcher<'_> {
    /// Greedy backtracking from item `i` at input position `pos`; true on
    /// the first (leftmost-first) success, like Python's `re.match`.
    fn go(&mut self, i: usize, pos: usize) -> Result<bool, TooComplex> {
        self.steps += 1;
        if self.steps > STEP_BUDGET {
            return Err(TooComplex);
        }
        let Some(item) = self.items.get(i).copied() else {
            return Ok(true);
        };
        let run = self.input[pos..]
            .iter()
            .take_while(|&&s| item.set & bit(s) != 0)
            .count();
        let most = item.max.map_or(run, |m| m.min(run));
        if most < item.min {
            return Ok(false);
        }
        for n in (item.min..=most).rev() {
            self.counts[i] = n;
            if self.go(i + 1, pos + n)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Matches the concatenation of the actions' patterns against `input`
/// (anchored at the start only). Returns the number of argument strings
/// each action consumes, or `None` when the whole pattern does not match.
fn match_all(actions: &[(Nargs, bool)], input: &[u8]) -> Result<Option<Vec<usize>>, TooComplex> {
    let mut items = Vec::new();
    let mut owner = Vec::new();
    for (k, &(nargs, optional)) in actions.iter().enumerate() {
        for it in pattern(nargs, optional) {
            items.push(it);
            owner.push(k);
        }
    }
    let mut m = Matcher {
        items: &items,
        input,
        counts: vec![0; items.len()],
        steps: 0,
    };
    if !m.go(0, 0)? {
        return Ok(None);
    }
    let mut per_action = vec![0; actions.len()];
    for (i, n) in m.counts.iter().enumerate() {
        per_action[owner[i]] += n;
    }
    Ok(Some(per_action))
}

/// argparse `_match_argument`: how many strings an action consumes from the
/// start of `input`; `None` is argparse's "expected N argument(s)" error.
pub(crate) fn match_argument(
    nargs: Nargs,
    optional: bool,
    input: &[u8],
) -> Result<Option<usize>, TooComplex> {
    Ok(match_all(&[(nargs, optional)], input)?.map(|v| v[0]))
}

/// argparse `_match_arguments_partial`: the longest prefix of `positionals`
/// whose joined pattern matches, with each one's count. An empty vector when
/// not even the first matches.
pub(crate) fn match_partial(positionals: &[Nargs], input: &[u8]) -> Result<Vec<usize>, TooComplex> {
    for i in (1..=positionals.len()).rev() {
        let acts: Vec<(Nargs, bool)> = positionals[..i].iter().map(|&n| (n, false)).collect();
        if let Some(counts) = match_all(&acts, input)? {
            return Ok(counts);
        }
    }
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(n: Nargs, opt: bool, s: &str) -> Option<usize> {
        match_argument(n, opt, s.as_bytes()).expect("budget")
    }

    #[test]
    fn optional_patterns_follow_argparse() {
        assert_eq!(m(Nargs::Default, true, "AO"), Some(1));
        assert_eq!(m(Nargs::Default, true, "OA"), None);
        assert_eq!(m(Nargs::Default, true, ""), None);
        assert_eq!(m(Nargs::Optional, true, "O"), Some(0));
        assert_eq!(m(Nargs::Optional, true, "AA"), Some(1));
        assert_eq!(m(Nargs::ZeroOrMore, true, "AAO"), Some(2));
        assert_eq!(m(Nargs::OneOrMore, true, "O"), None);
        assert_eq!(m(Nargs::Exactly(2), true, "AAA"), Some(2));
        assert_eq!(m(Nargs::Exactly(2), true, "AO"), None);
        assert_eq!(m(Nargs::Exactly(0), true, "AAA"), Some(0));
        assert_eq!(m(Nargs::Remainder, true, "AOA"), Some(3));
        // an option's values never include `--`
        assert_eq!(m(Nargs::Default, true, "-A"), None);
        assert_eq!(m(Nargs::ZeroOrMore, true, "A-A"), Some(1));
    }

    #[test]
    fn positional_patterns_follow_argparse() {
        assert_eq!(m(Nargs::Default, false, "-A"), Some(2));
        assert_eq!(m(Nargs::ZeroOrMore, false, "-AA"), Some(3));
        assert_eq!(m(Nargs::Parser, false, "AOAO"), Some(4));
        assert_eq!(m(Nargs::Parser, false, "OA"), None);
        assert_eq!(m(Nargs::Remainder, false, "OA"), Some(2));
    }

    #[test]
    fn partial_matching_is_greedy_and_backtracks() {
        let p = [Nargs::ZeroOrMore, Nargs::Default];
        assert_eq!(match_partial(&p, b"AAA").expect("budget"), vec![2, 1]);
        // the second positional cannot match: only the first is consumed
        assert_eq!(match_partial(&p, b"O").expect("budget"), vec![0]);
        assert_eq!(
            match_partial(&[Nargs::Default], b"O").expect("budget"),
            Vec::<usize>::new()
        );
        assert_eq!(
            match_partial(&[Nargs::Optional, Nargs::Remainder], b"AOA").expect("budget"),
            vec![1, 2]
        );
    }
}
