//! The `library` test binary: the server library in process against real
//! argparse. The catalog and the policy on the recorded parsers, the argv
//! compiler's round trip and the policy oracle through the stand-in conda's
//! parser, the stand-in itself, and the embedded conda-completion helper.
//! Nothing here starts the built `conda-mcp` or `conda-mcp-worker`.
//!
//! One binary for all of them (not one per file) so the server library and
//! its dependencies are linked once; run one module with a filter, e.g.
//! `cargo test -p conda-mcp-tests --test library policy_oracle::`.

mod catalog;
mod channel_rules;
mod completion_helper;
mod layering;
mod policy_cases;
mod policy_oracle;
mod roundtrip;
mod standin_conda;
mod tier_table;
mod tiers;
