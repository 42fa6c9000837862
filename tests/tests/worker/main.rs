//! The `worker` test binary: the built `conda-mcp-worker` across its
//! protocol boundary. Raw frames over its socket, the server library's
//! worker client (limits, lifecycle, process trees, results, the warm
//! conda, discovery's helper run), `conda-mcp-worker serve` and the hardened
//! deployment behind `--worker-socket`.
//!
//! One binary for all of them (not one per file) so the server library and
//! its dependencies are linked once; run one module with a filter, e.g.
//! `cargo test -p conda-mcp-tests --test worker serve::`.

mod deploy;
mod discovery;
mod guard;
mod install_lock;
mod lifecycle;
mod limits;
mod protocol;
mod results;
mod serve;
mod tree;
mod warm_conda;
mod warm_real_conda;
