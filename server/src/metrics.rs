//! The server's metrics, served at `/metrics` in the HTTP mode
//! (docs/operating.md "Metrics"): the Prometheus project's own client
//! (`prometheus-client`) and its text exposition (OpenMetrics 1.0, which
//! Prometheus scrapes natively; a counter's samples end in `_total`).
//!
//! Every name starts with `conda_mcp_`. Labels hold only what the server
//! itself names: an MCP method, a tool name of the served set (anything
//! else is `(unknown)`), an outcome word, an approval answer. They never
//! hold argument values, and hold the principal's name only when the
//! operator asks for it (`--metrics-principals`: one series per person,
//! which a large team multiplies).
//!
//! What is counted as it happens (requests, tool calls, their durations,
//! approval answers) is recorded by the transports and the handler through
//! the methods below; what is a level now (queue depth, live workers and
//! tasks, lines the log dropped) is read when `/metrics` is scraped
//! ([`Metrics::encode`] with a [`Levels`]).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The prefix of every metric name (without its `_`).
pub const PREFIX: &str = "conda_mcp";

/// The content type of [`Metrics::encode`]'s text (OpenMetrics 1.0 text,
/// what Prometheus asks for first in its `Accept` header).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The upper bounds (seconds) of the call-duration histogram: from a
/// catalog answer (milliseconds) to a solve near the default 900 s
/// `--timeout`.
pub const DURATION_BUCKETS: [f64; 16] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0,
];

/// The label value of a tool name the server does not serve (never the
/// name sent).
pub const UNKNOWN_TOOL: &str = "(unknown)";

/// One label set: `(name, value)` pairs in a fixed order.
type Labels = Vec<(&'static str, String)>;

/// The metric families (cheap to share: every family is behind an `Arc`
/// inside `prometheus-client`).
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    tool_calls: Family<Labels, Counter>,
    call_duration: Family<Labels, Histogram>,
    approvals: Family<Labels, Counter>,
    queue_depth: Gauge,
    workers: Gauge,
    tasks: Gauge,
    log_dropped: Counter<u64, AtomicU64>,
    principals: bool,
}

/// The levels read at each scrape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Levels {
    /// Calls waiting or running on the exec lane (one conda at a time).
    pub queue_depth: u64,
    /// Worker processes alive: the default worker and the per-user ones.
    pub workers: u64,
    /// MCP tasks not yet finished.
    pub tasks: u64,
    /// Log lines dropped since the start because stderr was not read.
    pub log_lines_dropped: u64,
}

impl Metrics {
    /// The registry with every family; `principals` (`--metrics-principals`)
    /// adds the `principal` label to requests and tool calls.
    pub fn new(principals: bool) -> Self {
        let mut registry = Registry::with_prefix(PREFIX);
        let requests = Family::<Labels, Counter>::default();
        registry.register(
            "requests",
            "MCP requests answered, by JSON-RPC method and outcome",
            requests.clone(),
        );
        let tool_calls = Family::<Labels, Counter>::default();
        registry.register(
            "tool_calls",
            "tools/call requests that ended, by tool and outcome",
            tool_calls.clone(),
        );
        let call_duration =
            Family::<Labels, Histogram>::new_with_constructor(duration_histogram as fn() -> _);
        registry.register(
            "tool_call_duration_seconds",
            "Time from a tools/call's arrival to its outcome (queue, approval and run), by tool",
            call_duration.clone(),
        );
        let approvals = Family::<Labels, Counter>::default();
        registry.register(
            "approval_answers",
            "Answers to --approve-writes questions: approve, decline, cancel (dismissed or \
             unanswered within the time limit), unavailable (the host could not ask)",
            approvals.clone(),
        );
        let queue_depth = Gauge::default();
        registry.register(
            "queue_depth",
            "Calls waiting or running on the exec lane (one conda at a time)",
            queue_depth.clone(),
        );
        let workers = Gauge::default();
        registry.register(
            "workers",
            "Worker processes alive (the default worker and the per-user workers)",
            workers.clone(),
        );
        let tasks = Gauge::default();
        registry.register("tasks", "MCP tasks not yet finished", tasks.clone());
        let log_dropped = Counter::<u64, AtomicU64>::default();
        registry.register(
            "log_lines_dropped",
            "Log lines dropped because stderr was not read while they were written",
            log_dropped.clone(),
        );
        Metrics {
            registry,
            requests,
            tool_calls,
            call_duration,
            approvals,
            queue_depth,
            workers,
            tasks,
            log_dropped,
            principals,
        }
    }

    /// Whether series carry the principal's name (`--metrics-principals`).
    pub fn principals(&self) -> bool {
        self.principals
    }

    fn with_principal(&self, mut labels: Labels, principal: &str) -> Labels {
        if self.principals {
            labels.push(("principal", principal.to_owned()));
        }
        labels
    }

    /// One MCP request answered: its method (as the request log names it,
    /// [`crate::transport::request_log`]) and outcome word (`answered`,
    /// `tool_error`, `error`, `refused`, `timeout`, `disconnected`).
    pub fn request(&self, method: &str, outcome: &str, principal: &str) {
        let labels = vec![
            ("method", method.to_owned()),
            ("outcome", outcome.to_owned()),
        ];
        self.requests
            .get_or_create(&self.with_principal(labels, principal))
            .inc();
    }

    /// One tool call ended with `outcome` after `seconds`; `tool` is a
    /// served tool's name ([`UNKNOWN_TOOL`] for any other).
    pub fn tool_call(&self, tool: &str, outcome: &str, seconds: f64, principal: &str) {
        let labels = vec![("tool", tool.to_owned()), ("outcome", outcome.to_owned())];
        self.tool_calls
            .get_or_create(&self.with_principal(labels, principal))
            .inc();
        self.call_duration
            .get_or_create(&vec![("tool", tool.to_owned())])
            .observe(seconds);
    }

    /// One answer to an approval question (`approve`, `decline`, `cancel`,
    /// `unavailable`).
    pub fn approval(&self, answer: &'static str) {
        self.approvals
            .get_or_create(&vec![("answer", answer.to_owned())])
            .inc();
    }

    /// The exposition: the levels set to `levels`, then every family as
    /// OpenMetrics text, ending with `# EOF`.
    pub fn encode(&self, levels: Levels) -> String {
        let gauge = |g: &Gauge, v: u64| {
            g.set(i64::try_from(v).unwrap_or(i64::MAX));
        };
        gauge(&self.queue_depth, levels.queue_depth);
        gauge(&self.workers, levels.workers);
        gauge(&self.tasks, levels.tasks);
        // A counter only rises: add what the log dropped since the last
        // scrape.
        let seen = self.log_dropped.get();
        if levels.log_lines_dropped > seen {
            self.log_dropped.inc_by(levels.log_lines_dropped - seen);
        }
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample<'a>(text: &'a str, series: &str) -> Option<&'a str> {
        text.lines()
            .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
            .map(|l| l[series.len()..].trim())
    }

    #[test]
    fn counters_and_levels_are_exposed_under_the_prefix() {
        let m = Metrics::new(false);
        m.request("tools/call", "answered", "alice");
        m.request("tools/call", "answered", "alice");
        m.tool_call("conda_list", "ok", 0.3, "alice");
        m.approval("decline");
        let text = m.encode(Levels {
            queue_depth: 2,
            workers: 1,
            tasks: 3,
            log_lines_dropped: 5,
        });
        assert_eq!(
            sample(
                &text,
                "conda_mcp_requests_total{method=\"tools/call\",outcome=\"answered\"}"
            ),
            Some("2"),
            "{text}"
        );
        assert_eq!(
            sample(
                &text,
                "conda_mcp_tool_calls_total{tool=\"conda_list\",outcome=\"ok\"}"
            ),
            Some("1")
        );
        assert_eq!(
            sample(
                &text,
                "conda_mcp_tool_call_duration_seconds_bucket{le=\"0.5\",tool=\"conda_list\"}"
            ),
            Some("1"),
            "{text}"
        );
        assert_eq!(sample(&text, "conda_mcp_queue_depth"), Some("2"));
        assert_eq!(sample(&text, "conda_mcp_workers"), Some("1"));
        assert_eq!(sample(&text, "conda_mcp_tasks"), Some("3"));
        assert_eq!(
            sample(&text, "conda_mcp_log_lines_dropped_total"),
            Some("5")
        );
        assert_eq!(
            sample(
                &text,
                "conda_mcp_approval_answers_total{answer=\"decline\"}"
            ),
            Some("1")
        );
        assert!(!text.contains("alice"), "{text}");
        assert!(text.ends_with("# EOF\n"));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            assert!(line.starts_with("conda_mcp_"), "{line}");
        }
        // The dropped-lines counter follows the level without going back.
        let again = m.encode(Levels {
            log_lines_dropped: 7,
            ..Levels::default()
        });
        assert_eq!(
            sample(&again, "conda_mcp_log_lines_dropped_total"),
            Some("7")
        );
        assert_eq!(sample(&again, "conda_mcp_queue_depth"), Some("0"));
    }

    #[test]
    fn principals_are_labels_only_when_asked_for() {
        let m = Metrics::new(true);
        m.request("tools/list", "answered", "bob");
        m.tool_call("conda_info", "refused", 0.01, "bob");
        let text = m.encode(Levels::default());
        assert!(
            text.contains(
                "conda_mcp_requests_total{method=\"tools/list\",outcome=\"answered\",principal=\"bob\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "conda_mcp_tool_calls_total{tool=\"conda_info\",outcome=\"refused\",principal=\"bob\"} 1"
            ),
            "{text}"
        );
        // The histogram stays per tool whatever the flag says.
        assert!(text.contains("conda_mcp_tool_call_duration_seconds_count{tool=\"conda_info\"} 1"));
    }
}
