//! The raw-argv resolver: what conda's argparse parser would make of an argv.
//!
//! This is a port of CPython's `ArgumentParser._parse_known_args` (Python
//! 3.11 and 3.12, which agree on every step used here; conda 26 ships 3.11+)
//! driven by the [`Catalog`] instead of a live parser, plus conda's own
//! twists from `conda/cli/conda_argparse.py`:
//!
//! * every argument string is first classified by the parser at hand
//!   (`_parse_optional`): exact option strings, `--opt=value`, unique long
//!   prefixes when `allow_abbrev` (an ambiguous prefix is an immediate
//!   error, *for every string of the argv*, including those after the
//!   command), single-dash clusters and attached values (`-yd`, `-nfoo`,
//!   `-n=foo`), negative-number-looking strings, strings with a space, and
//!   the first `--`;
//! * optionals and positionals are then consumed alternately with argparse's
//!   nargs patterns (`argparse/nargs.rs`), actions are taken in argv order
//!   (help and version exit at that moment), mutually exclusive groups are
//!   checked as argparse does (only actions that did not produce their
//!   default count), subparsers recurse with `parse_known_args`;
//! * conda's root subparsers action is `_GreedySubParsersAction`: a greedy
//!   plugin parser receives the strings it does not know as `_args` instead
//!   of an "unrecognized arguments" error;
//! * conda's `ArgumentParser._check_value` checks list values element-wise;
//! * `conda` with an empty argv shows the help (`main_subshell`).
//!
//! The resolver never guesses: a step it cannot reproduce exactly ends the
//! walk as [`End::Rejected`], which the policy's classifier
//! ([`crate::policy::classify`]) turns into a fail-closed mutation.
//!
//! Known differences, all in the fail-closed direction (the resolver may
//! accept what the target's conda rejects, never call a rejected argv
//! read-only):
//! * conda's `main_subshell` first runs a *pre-parser* (root options only,
//!   `parse_known_args`) over the strings before the first `--`; it rejects
//!   clusters such as `-vq` that start with a root flag (`-q` is unknown to
//!   it). Not modelled: such argv are rejected by conda, so nothing runs.
//! * Python 3.13 puts an unknown character in a cluster (`-yZ`) into the
//!   extras instead of raising at once; both end in an error, except for a
//!   greedy plugin, which is exec and write anyway.
//! * Python's `\d` in the negative-number rule also matches non-ASCII
//!   digits; here those strings are options (rejected as unknown).

use super::nargs::{self, ARG, DASHDASH, OPT, TooComplex};
use crate::catalog::{ArgIdx, ArgKind, Catalog, CommandIdx, Nargs, Passthrough, ValueType};

/// One action argparse took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The command (parser) the action belongs to.
    pub command: CommandIdx,
    /// Index into that command's [`crate::catalog::Command::arguments`].
    pub arg: ArgIdx,
    /// The option string as the catalog spells it (never the submitted
    /// spelling: `--se` resolved to `--set` is recorded as `--set`); `None`
    /// for a positional.
    pub option: Option<String>,
    /// How many argument strings the action consumed (`--` excluded).
    pub values: usize,
    /// The strings it consumed, as argparse stores them (an attached value,
    /// `--prefix=P` or `-pP`, included). Submitted values: read by the
    /// environment guard ([`crate::target`]), never logged or shown.
    pub strings: Vec<String>,
}

/// Why argparse would reject the argv (or why the resolver cannot tell).
/// Carries no submitted value, so it can be shown to anyone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// A long-option prefix matches several option strings.
    AmbiguousOption,
    /// Strings no action took ("unrecognized arguments"), among them unknown
    /// options.
    Unrecognized,
    /// The command (subparser choice) does not exist.
    UnknownCommand,
    /// An option did not get the number of values its nargs requires.
    ExpectedArgument,
    /// An explicit value (`--flag=x`, a cluster tail) the option cannot take.
    IgnoredExplicitArgument,
    /// Two members of a mutually exclusive group.
    NotAllowedWith,
    /// A required action or group is missing (including the command itself).
    MissingRequired,
    /// A value outside `choices`.
    InvalidChoice,
    /// A value `type=int`/`type=float` cannot convert.
    InvalidValue,
    /// The nargs matching exceeded its step budget (hostile input).
    TooComplex,
}

impl Rejection {
    /// A short, value-free description.
    pub fn describe(self) -> &'static str {
        match self {
            Rejection::AmbiguousOption => "ambiguous option prefix",
            Rejection::Unrecognized => "unrecognized arguments",
            Rejection::UnknownCommand => "unknown command",
            Rejection::ExpectedArgument => "option without its expected value(s)",
            Rejection::IgnoredExplicitArgument => "option given a value it does not take",
            Rejection::NotAllowedWith => "mutually exclusive options",
            Rejection::MissingRequired => "missing required argument or command",
            Rejection::InvalidChoice => "value outside the allowed choices",
            Rejection::InvalidValue => "value of the wrong type",
            Rejection::TooComplex => "argv too complex to resolve",
        }
    }
}

/// How the parse ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// argparse returns a namespace; conda runs the command.
    Parsed,
    /// `-h/--help` (or an empty argv): usage is printed, nothing runs.
    Help,
    /// `-V/--version`: the version is printed, nothing runs.
    Version,
    /// argparse exits with status 2 (or the resolver cannot tell).
    Rejected(Rejection),
}

/// The resolved command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The parsers entered, root first: the last one is the command.
    pub commands: Vec<CommandIdx>,
    /// Every action taken, in the order argparse took them.
    pub taken: Vec<Taken>,
    /// Strings handed on unparsed: to a greedy plugin parser (`_args`) or
    /// taken by a REMAINDER/PARSER positional that is not a subparser choice.
    pub passthrough: usize,
    /// How the parse ends.
    pub end: End,
}

impl Resolved {
    /// The deepest command reached.
    pub fn command(&self) -> CommandIdx {
        self.commands.last().copied().unwrap_or(0)
    }

    /// Whether any action with this dest was taken in the deepest command.
    pub fn has(&self, catalog: &Catalog, dest: &str) -> bool {
        self.taken_in_command(catalog)
            .any(|(t, a)| a.dest == dest && (t.option.is_some() || t.values > 0))
    }

    /// Whether the namespace value of this dest in the deepest command is a
    /// non-empty list after the whole parse: for storing actions the *last*
    /// occurrence wins (`--get k --get` leaves `get == []`), appending
    /// actions accumulate (`_AppendAction` appends one list per
    /// occurrence, `_ExtendAction` extends with the values).
    pub fn has_values(&self, catalog: &Catalog, dest: &str) -> bool {
        let mut result = false;
        for (t, a) in self.taken_in_command(catalog) {
            if a.dest != dest {
                continue;
            }
            result = match a.kind {
                ArgKind::Append | ArgKind::AppendConst => true,
                ArgKind::Extend => result || t.values > 0,
                _ => t.values > 0,
            };
        }
        result
    }

    /// The strings of every occurrence of this dest in the deepest command,
    /// in argv order (`--file a --file b`: `[["a"], ["b"]]`).
    pub fn occurrences<'a>(&'a self, catalog: &'a Catalog, dest: &'a str) -> Vec<&'a [String]> {
        self.taken_in_command(catalog)
            .filter(|(_, a)| a.dest == dest)
            .map(|(t, _)| t.strings.as_slice())
            .collect()
    }

    /// The value argparse leaves for a single-valued dest in the deepest
    /// command: the last occurrence's one string.
    pub fn last_value<'a>(&'a self, catalog: &'a Catalog, dest: &'a str) -> Option<&'a str> {
        self.occurrences(catalog, dest)
            .last()
            .and_then(|s| s.first())
            .map(String::as_str)
    }

    fn taken_in_command<'a>(
        &'a self,
        catalog: &'a Catalog,
    ) -> impl Iterator<Item = (&'a Taken, &'a crate::catalog::Argument)> + 'a {
        let cmd = self.command();
        self.taken
            .iter()
            .filter(move |t| t.command == cmd)
            .map(move |t| (t, &catalog.commands[t.command].arguments[t.arg]))
    }
}

/// Resolves `argv` (what follows the conda executable) against the catalog.
pub fn resolve(catalog: &Catalog, argv: &[String]) -> Resolved {
    let mut r = Resolved {
        commands: vec![0],
        taken: Vec::new(),
        passthrough: 0,
        end: End::Parsed,
    };
    if catalog.commands.is_empty() {
        r.end = End::Rejected(Rejection::UnknownCommand);
        return r;
    }
    // conda's main_subshell: `args = args or ["--help"]`.
    if argv.is_empty() {
        r.end = End::Help;
        return r;
    }
    let mut w = Walker {
        catalog,
        out: &mut r,
    };
    let end = match w.parse(0, argv) {
        Ok(extras) if extras.is_empty() => End::Parsed,
        Ok(_) => End::Rejected(Rejection::Unrecognized),
        Err(Stop::Help) => End::Help,
        Err(Stop::Version) => End::Version,
        Err(Stop::Reject(why)) => End::Rejected(why),
    };
    r.end = end;
    r
}

/// Why a parse stopped early.
enum Stop {
    Help,
    Version,
    Reject(Rejection),
}

impl From<TooComplex> for Stop {
    fn from(_: TooComplex) -> Self {
        Stop::Reject(Rejection::TooComplex)
    }
}

/// One classified optional: argparse's `(action, option_string,
/// explicit_arg)` tuple.
#[derive(Debug, Clone)]
struct OptTuple {
    arg: Option<ArgIdx>,
    option: String,
    explicit: Option<String>,
}

/// argparse's `_negative_number_matcher`: `^-\d+$|^-\d*\.\d+$`. Only ASCII
/// digits are accepted; Python's `\d` also matches other decimal digits,
/// which here classify as options instead, the fail-closed direction.
fn looks_negative_number(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('-') else {
        return false;
    };
    if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    match rest.split_once('.') {
        Some((int, frac)) => {
            int.bytes().all(|b| b.is_ascii_digit())
                && !frac.is_empty()
                && frac.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

struct Parser<'c> {
    idx: CommandIdx,
    cmd: &'c crate::catalog::Command,
    /// `_option_string_actions`, in insertion order.
    options: Vec<(&'c str, ArgIdx)>,
    has_negative_number_optionals: bool,
}

impl<'c> Parser<'c> {
    fn new(catalog: &'c Catalog, idx: CommandIdx) -> Self {
        let cmd = &catalog.commands[idx];
        // a dict in argparse: a string registered twice (conflict_handler
        // "resolve") keeps its first position and maps to the later action
        let mut options: Vec<(&str, ArgIdx)> = Vec::new();
        for (i, a) in cmd.arguments.iter().enumerate() {
            for s in &a.option_strings {
                match options.iter_mut().find(|(o, _)| *o == s.as_str()) {
                    Some(slot) => slot.1 = i,
                    None => options.push((s.as_str(), i)),
                }
            }
        }
        let has_negative_number_optionals = options.iter().any(|(s, _)| looks_negative_number(s));
        Parser {
            idx,
            cmd,
            options,
            has_negative_number_optionals,
        }
    }

    fn exact(&self, s: &str) -> Option<ArgIdx> {
        self.options.iter().find(|(o, _)| *o == s).map(|&(_, i)| i)
    }

    /// argparse `_parse_optional`. `Ok(None)`: a positional string.
    fn parse_optional(&self, s: &str) -> Result<Option<OptTuple>, Stop> {
        if !s.starts_with('-') {
            return Ok(None);
        }
        if let Some(i) = self.exact(s) {
            return Ok(Some(OptTuple {
                arg: Some(i),
                option: s.to_owned(),
                explicit: None,
            }));
        }
        if s.chars().count() == 1 {
            return Ok(None);
        }
        if let Some((opt, explicit)) = s.split_once('=')
            && let Some(i) = self.exact(opt)
        {
            return Ok(Some(OptTuple {
                arg: Some(i),
                option: opt.to_owned(),
                explicit: Some(explicit.to_owned()),
            }));
        }
        let mut tuples = self.option_tuples(s);
        if tuples.len() > 1 {
            return Err(Stop::Reject(Rejection::AmbiguousOption));
        }
        if let Some(t) = tuples.pop() {
            return Ok(Some(t));
        }
        if looks_negative_number(s) && !self.has_negative_number_optionals {
            return Ok(None);
        }
        if s.contains(' ') {
            return Ok(None);
        }
        Ok(Some(OptTuple {
            arg: None,
            option: s.to_owned(),
            explicit: None,
        }))
    }

    /// argparse `_get_option_tuples`: prefix interpretations of `s`.
    fn option_tuples(&self, s: &str) -> Vec<OptTuple> {
        let mut out = Vec::new();
        if s.starts_with("--") {
            if self.cmd.allow_abbrev {
                let (prefix, explicit) = match s.split_once('=') {
                    Some((p, e)) => (p, Some(e)),
                    None => (s, None),
                };
                for &(o, i) in &self.options {
                    if o.starts_with(prefix) {
                        out.push(OptTuple {
                            arg: Some(i),
                            option: o.to_owned(),
                            explicit: explicit.map(str::to_owned),
                        });
                    }
                }
            }
        } else {
            // single prefix character: `-xVALUE` or a prefix of a
            // single-dash option string (not gated by allow_abbrev in
            // 3.11/3.12)
            let split = s.char_indices().nth(2).map_or(s.len(), |(b, _)| b);
            let (short, tail) = s.split_at(split);
            for &(o, i) in &self.options {
                if o == short {
                    out.push(OptTuple {
                        arg: Some(i),
                        option: o.to_owned(),
                        explicit: Some(tail.to_owned()),
                    });
                } else if o.starts_with(s) {
                    out.push(OptTuple {
                        arg: Some(i),
                        option: o.to_owned(),
                        explicit: None,
                    });
                }
            }
        }
        out
    }
}

struct Walker<'c, 'o> {
    catalog: &'c Catalog,
    out: &'o mut Resolved,
}

/// Per-parser state of one `_parse_known_args` call.
struct State {
    seen: Vec<bool>,
    seen_non_default: Vec<bool>,
    conflicts: Vec<Vec<ArgIdx>>,
    extras: Vec<String>,
}

impl<'c> Walker<'c, '_> {
    /// `parse_known_args` of one parser; returns its extras (strings it did
    /// not recognize, including those of nested subparsers).
    fn parse(&mut self, idx: CommandIdx, args: &[String]) -> Result<Vec<String>, Stop> {
        let p = Parser::new(self.catalog, idx);
        let n_args = p.cmd.arguments.len();

        // classify every string
        let mut pattern: Vec<u8> = Vec::with_capacity(args.len());
        let mut tuples: Vec<Option<OptTuple>> = Vec::with_capacity(args.len());
        let mut after_dd = false;
        for s in args {
            if after_dd {
                pattern.push(ARG);
                tuples.push(None);
            } else if s == "--" {
                after_dd = true;
                pattern.push(DASHDASH);
                tuples.push(None);
            } else {
                match p.parse_optional(s)? {
                    Some(t) => {
                        pattern.push(OPT);
                        tuples.push(Some(t));
                    }
                    None => {
                        pattern.push(ARG);
                        tuples.push(None);
                    }
                }
            }
        }

        let mut conflicts = vec![Vec::new(); n_args];
        for g in &p.cmd.groups {
            for (k, &m) in g.members.iter().enumerate() {
                for (j, &other) in g.members.iter().enumerate() {
                    if j != k && m < n_args {
                        conflicts[m].push(other);
                    }
                }
            }
        }
        let mut st = State {
            seen: vec![false; n_args],
            seen_non_default: vec![false; n_args],
            conflicts,
            extras: Vec::new(),
        };
        let mut positionals: Vec<ArgIdx> = (0..n_args)
            .filter(|&i| p.cmd.arguments[i].is_positional())
            .collect();

        let option_indices: Vec<usize> = (0..args.len()).filter(|&i| tuples[i].is_some()).collect();
        let max_option_index = option_indices.last().copied();
        let mut start = 0usize;
        if let Some(max_opt) = max_option_index {
            while start <= max_opt {
                let next_opt = option_indices
                    .iter()
                    .copied()
                    .find(|&i| i >= start)
                    .unwrap_or(max_opt);
                if start != next_opt {
                    let end = self.consume_positionals(
                        &p,
                        &mut st,
                        &mut positionals,
                        args,
                        &pattern,
                        start,
                    )?;
                    if end > start {
                        start = end;
                        continue;
                    }
                    start = end;
                }
                if tuples[start].is_none() {
                    st.extras.extend(args[start..next_opt].iter().cloned());
                    start = next_opt;
                }
                start = self.consume_optional(&p, &mut st, args, &pattern, &tuples, start)?;
            }
        }
        let stop =
            self.consume_positionals(&p, &mut st, &mut positionals, args, &pattern, start)?;
        st.extras.extend(args[stop..].iter().cloned());

        // required actions and groups
        for (i, a) in p.cmd.arguments.iter().enumerate() {
            if a.required && !st.seen[i] {
                return Err(Stop::Reject(Rejection::MissingRequired));
            }
        }
        for g in &p.cmd.groups {
            if g.required
                && !g
                    .members
                    .iter()
                    .any(|&m| st.seen_non_default.get(m) == Some(&true))
            {
                return Err(Stop::Reject(Rejection::MissingRequired));
            }
        }
        Ok(st.extras)
    }

    fn consume_optional(
        &mut self,
        p: &Parser<'c>,
        st: &mut State,
        args: &[String],
        pattern: &[u8],
        tuples: &[Option<OptTuple>],
        start: usize,
    ) -> Result<usize, Stop> {
        let Some(first) = tuples[start].clone() else {
            // unreachable by construction; fail closed
            return Err(Stop::Reject(Rejection::Unrecognized));
        };
        let (mut arg, mut option, mut explicit) = (first.arg, first.option, first.explicit);
        let mut todo: Vec<(ArgIdx, Vec<String>, String)> = Vec::new();
        let stop;
        loop {
            let Some(a) = arg else {
                st.extras.push(args[start].clone());
                return Ok(start + 1);
            };
            let action = &p.cmd.arguments[a];
            if let Some(exp) = explicit.take() {
                let count = nargs::match_argument(action.nargs, true, &[ARG])?
                    .ok_or(Stop::Reject(Rejection::ExpectedArgument))?;
                let second_is_prefix = option.chars().nth(1) == Some('-');
                if count == 0 && !second_is_prefix && !exp.is_empty() {
                    todo.push((a, Vec::new(), option.clone()));
                    let mut chars = exp.chars();
                    let c = chars.next().unwrap_or('-');
                    let rest: String = chars.collect();
                    let next = format!("-{c}");
                    match p.exact(&next) {
                        Some(i) => {
                            arg = Some(i);
                            option = next;
                            explicit = if rest.is_empty() { None } else { Some(rest) };
                        }
                        None => return Err(Stop::Reject(Rejection::IgnoredExplicitArgument)),
                    }
                } else if count == 1 {
                    todo.push((a, vec![exp], option.clone()));
                    stop = start + 1;
                    break;
                } else {
                    return Err(Stop::Reject(Rejection::IgnoredExplicitArgument));
                }
            } else {
                let from = start + 1;
                let count = nargs::match_argument(action.nargs, true, &pattern[from..])?
                    .ok_or(Stop::Reject(Rejection::ExpectedArgument))?;
                todo.push((a, args[from..from + count].to_vec(), option.clone()));
                stop = from + count;
                break;
            }
        }
        for (a, values, option) in todo {
            self.take_action(p, st, a, values, Some(option))?;
        }
        Ok(stop)
    }

    fn consume_positionals(
        &mut self,
        p: &Parser<'c>,
        st: &mut State,
        positionals: &mut Vec<ArgIdx>,
        args: &[String],
        pattern: &[u8],
        mut start: usize,
    ) -> Result<usize, Stop> {
        let nargs: Vec<Nargs> = positionals
            .iter()
            .map(|&i| p.cmd.arguments[i].nargs)
            .collect();
        let counts = nargs::match_partial(&nargs, &pattern[start..])?;
        let done = counts.len();
        for (k, count) in counts.into_iter().enumerate() {
            let values = args[start..start + count].to_vec();
            start += count;
            self.take_action(p, st, positionals[k], values, None)?;
        }
        positionals.drain(..done);
        Ok(start)
    }

    fn take_action(
        &mut self,
        p: &Parser<'c>,
        st: &mut State,
        a: ArgIdx,
        mut values: Vec<String>,
        option: Option<String>,
    ) -> Result<(), Stop> {
        let action = &p.cmd.arguments[a];
        st.seen[a] = true;
        let keeps_dd = matches!(action.nargs, Nargs::Parser | Nargs::Remainder);
        if !keeps_dd && let Some(pos) = values.iter().position(|v| v == "--") {
            values.remove(pos);
        }
        let non_default = self.check_values(action, &values)?;
        if non_default {
            st.seen_non_default[a] = true;
            if st.conflicts[a].iter().any(|&c| st.seen_non_default[c]) {
                return Err(Stop::Reject(Rejection::NotAllowedWith));
            }
        }
        match action.kind {
            ArgKind::Help => return Err(Stop::Help),
            ArgKind::Version => return Err(Stop::Version),
            ArgKind::Subparsers => return self.take_subcommand(p, st, a, values),
            _ => {}
        }
        if matches!(action.nargs, Nargs::Remainder | Nargs::Parser) {
            self.out.passthrough += values.len();
        }
        self.out.taken.push(Taken {
            command: p.idx,
            arg: a,
            option,
            values: values.len(),
            strings: values,
        });
        Ok(())
    }

    /// argparse `_get_values` + conda's `_check_value`: validates the values
    /// and tells whether the result is not the action's default object
    /// (what mutually exclusive groups count).
    fn check_values(
        &self,
        action: &crate::catalog::Argument,
        values: &[String],
    ) -> Result<bool, Stop> {
        let check = |v: &str| -> Result<(), Stop> {
            match action.value_type {
                ValueType::Integer if !python_int(v) => {
                    return Err(Stop::Reject(Rejection::InvalidValue));
                }
                ValueType::Number if !python_float(v) => {
                    return Err(Stop::Reject(Rejection::InvalidValue));
                }
                _ => {}
            }
            if let Some(choices) = &action.choices
                && action.kind != ArgKind::Subparsers
                && !choices.iter().any(|c| c == v)
            {
                return Err(Stop::Reject(Rejection::InvalidChoice));
            }
            Ok(())
        };
        let positional = action.is_positional();
        match action.nargs {
            Nargs::Optional if values.is_empty() => {
                // value = const (optional) or default (positional); only a
                // str is converted and checked.
                let v = if positional {
                    &action.default
                } else {
                    &action.const_value
                };
                if let Some(s) = v.as_str() {
                    check(s)?;
                }
                Ok(!positional && !same_object(&action.const_value, &action.default))
            }
            Nargs::ZeroOrMore if values.is_empty() && positional => {
                // value = default if not None else [] (a new list); conda's
                // _check_value checks a list default element-wise
                if let Some(s) = action.default.as_str() {
                    check(s)?;
                }
                if let Some(items) = action.default.as_array() {
                    for s in items.iter().filter_map(serde_json::Value::as_str) {
                        check(s)?;
                    }
                }
                Ok(action.default.is_null())
            }
            Nargs::Remainder => Ok(true),
            Nargs::Parser => Ok(true),
            _ => {
                for v in values {
                    check(v)?;
                }
                Ok(true)
            }
        }
    }

    fn take_subcommand(
        &mut self,
        p: &Parser<'c>,
        st: &mut State,
        a: ArgIdx,
        values: Vec<String>,
    ) -> Result<(), Stop> {
        let Some((name, rest)) = values.split_first() else {
            return Err(Stop::Reject(Rejection::MissingRequired));
        };
        let Some(child) = self.catalog.child(p.idx, name) else {
            return Err(Stop::Reject(Rejection::UnknownCommand));
        };
        self.out.taken.push(Taken {
            command: p.idx,
            arg: a,
            option: None,
            values: 1,
            strings: vec![name.clone()],
        });
        self.out.commands.push(child);
        let extras = self.parse(child, rest)?;
        if self.catalog.commands[child].passthrough == Passthrough::Greedy {
            // _GreedySubParsersAction: unknown strings become `_args`
            self.out.passthrough += extras.len();
        } else {
            st.extras.extend(extras);
        }
        Ok(())
    }
}

/// Whether argparse's `value is action.default` can hold for a const: only
/// for the singletons None/True/False (other equal values are distinct
/// objects).
fn same_object(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    matches!(
        (a, b),
        (serde_json::Value::Null, serde_json::Value::Null)
            | (serde_json::Value::Bool(true), serde_json::Value::Bool(true))
            | (
                serde_json::Value::Bool(false),
                serde_json::Value::Bool(false)
            )
    )
}

/// Python `int(s)` acceptance for ASCII input: optional surrounding
/// whitespace, a sign, digits with single underscores between them.
fn python_int(s: &str) -> bool {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    !t.is_empty()
        && !t.starts_with('_')
        && !t.ends_with('_')
        && !t.contains("__")
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'_')
}

/// Python `float(s)` acceptance, approximately (decimal and exponent forms,
/// inf/nan); anything else is an error, which fails closed.
fn python_float(s: &str) -> bool {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let lower = t.to_ascii_lowercase();
    let body = lower.strip_prefix(['+', '-']).unwrap_or(&lower);
    matches!(body, "inf" | "infinity" | "nan")
        || (!body.contains('_') && body.parse::<f64>().is_ok())
}
