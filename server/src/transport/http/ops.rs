//! The operator's endpoints beside `/mcp` (docs/operating.md "A team
//! server"): `GET /healthz` and `GET /readyz` without a token
//! ([`crate::health`]), and `GET /metrics` behind the [`super::gate`]'s
//! authentication ([`crate::metrics`]).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

use crate::health::{Health, ProbeAnswer};
use crate::mcp::CondaMcp;
use crate::metrics::{Levels, Metrics};

/// The liveness path.
pub const HEALTHZ_PATH: &str = "/healthz";
/// The readiness path.
pub const READYZ_PATH: &str = "/readyz";
/// The metrics path.
pub const METRICS_PATH: &str = "/metrics";

/// What the endpoints read.
#[derive(Debug, Clone)]
pub struct Ops {
    /// Where the process is in its life.
    pub health: Arc<Health>,
    /// The metric families.
    pub metrics: Arc<Metrics>,
    /// The server, for the levels once startup has finished.
    pub server: CondaMcp,
}

fn json(status: StatusCode, body: serde_json::Value) -> Response {
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `/healthz` and `/readyz`, answered without authentication and without
/// a log line (probes come every few seconds).
pub fn probes(ops: Arc<Ops>) -> Router {
    Router::new()
        .route(
            HEALTHZ_PATH,
            axum::routing::get(|| async {
                json(StatusCode::OK, serde_json::json!({"status": "ok"}))
            }),
        )
        .route(READYZ_PATH, axum::routing::get(readyz))
        .with_state(ops)
}

async fn readyz(State(ops): State<Arc<Ops>>) -> Response {
    match ops.health.readiness().await {
        ProbeAnswer::Ready => json(StatusCode::OK, serde_json::json!({"status": "ready"})),
        ProbeAnswer::NotReady(reason) => json(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({"status": "not_ready", "reason": reason}),
        ),
    }
}

/// `/metrics` (mounted behind the gate).
pub fn metrics(ops: Arc<Ops>) -> Router {
    Router::new()
        .route(METRICS_PATH, axum::routing::get(scrape))
        .with_state(ops)
}

async fn scrape(State(ops): State<Arc<Ops>>) -> Response {
    let levels = match ops.server.state() {
        Some(state) => {
            let runner = &state.pipeline.runner;
            let users = runner.workers.as_ref().map_or(0, |w| w.len());
            let default = usize::from(runner.exec.worker_pid().is_some());
            Levels {
                queue_depth: runner.exec.queue_len() as u64,
                workers: (default + users) as u64,
                tasks: state.tasks.working() as u64,
                log_lines_dropped: 0,
            }
        }
        None => Levels::default(),
    };
    let mut r = Response::new(Body::from(ops.metrics.encode(levels)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
