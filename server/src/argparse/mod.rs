//! argparse, reproduced: what conda's parser makes of an argv.
//!
//! The argv compiler ([`crate::compile`]) *encodes* tool arguments as a
//! conda argv; this layer *decodes* an argv the way conda's argparse parser
//! would, driven by the [`crate::catalog::Catalog`] instead of a live
//! parser. The two are a pair: the round-trip tests compile arguments, decode
//! them with argparse itself (the stand-in conda) and compare.
//!
//! * [`resolve()`]: a port of CPython's `ArgumentParser._parse_known_args`
//!   with conda's greedy plugin subparsers; argv → [`Resolved`] (the
//!   commands entered, every action taken in order, how the parse ends);
//! * `nargs`: argparse's nargs patterns and their greedy regex matching,
//!   without a regex engine.
//!
//! This layer states facts about an argv and decides nothing: what a
//! resolved command may do is [`crate::policy`]'s table and decision. It
//! never guesses either: a step it cannot reproduce exactly ends the parse
//! as [`End::Rejected`], which the policy treats as a fail-closed mutation.

mod nargs;
pub mod resolve;

pub use resolve::{End, Rejection, Resolved, Taken, resolve};
