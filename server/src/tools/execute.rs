//! `conda_execute`: the raw tool (listed and callable only with
//! `--allow-exec`).
//!
//! Its argv goes through the same classifier as the generated tools'
//! compiled argv (`policy::classify`), and is checked with
//! `Policy::check_raw` (the raw tool itself needs `--allow-exec`; a raw
//! mutation needs `--allow-write` too).
//!
//! Timeout rule: `timeout_seconds` must be > 0; a value above the server's
//! `--timeout` is capped to it (a call may shorten the limit, never extend
//! it); absent, the server's limit applies.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::spec::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::schema::ArgumentError;

/// The tool description.
pub const DESCRIPTION: &str = "Run conda with a raw argument list (after `conda`) for what typed tools miss. No shell; same policy. Runs an arbitrary subprocess command.";

/// Input of `conda_execute`. Unknown fields are refused.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// Arguments after `conda`, one per item (no shell, no quoting, no NUL), e.g. ["env", "list"].
    pub argv: Vec<String>,
    /// An existing working directory (default: the worker's).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Text for conda's stdin, within the server's stdin limit (default: none).
    #[serde(default)]
    pub stdin: Option<String>,
    /// Time limit in seconds (> 0), at most the server's --timeout (the default).
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    /// Server option: true lets a create replace an existing environment (its whole prefix).
    #[serde(default)]
    pub replace_existing: Option<bool>,
    /// Server option: true lets a removal delete files no package installed.
    #[serde(default)]
    pub remove_unmanaged_files: Option<bool>,
}

/// The input schema (schemars, JSON Schema 2020-12). Options are plain
/// types (no `null` in a type array) so the schema stays portable.
pub fn input_schema() -> Arc<JsonObject> {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.meta_schema = None;
    });
    let schema = settings
        .into_generator()
        .into_root_schema_for::<ExecuteArgs>();
    let mut obj = match schema.to_value() {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    };
    obj.remove("title");
    obj.remove("description");
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for p in props.values_mut() {
            if let Some(Value::Array(types)) = p.get("type").cloned() {
                let non_null: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
                if non_null.len() == 1
                    && let Some(m) = p.as_object_mut()
                {
                    m.insert("type".into(), non_null[0].clone());
                }
            }
            if let Some(m) = p.as_object_mut() {
                m.remove("default");
                m.remove("format");
            }
        }
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties")
        && let Some(Value::Object(t)) = props.get_mut("timeout_seconds")
    {
        t.insert("exclusiveMinimum".into(), Value::from(0));
    }
    obj.insert("additionalProperties".into(), Value::Bool(false));
    Arc::new(obj)
}

/// A checked `conda_execute` call.
#[derive(Debug, Clone)]
pub struct ExecuteCall {
    /// argv after conda.
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// stdin bytes.
    pub stdin: Option<Vec<u8>>,
    /// Effective time limit (capped).
    pub timeout: Duration,
    /// `replace_existing: true`.
    pub replace_existing: bool,
    /// `remove_unmanaged_files: true`.
    pub remove_unmanaged_files: bool,
}

/// Checks what the schema cannot: NUL in argv, an argument or the whole
/// argv too long for Linux (`conda_mcp_shared::limits::ARG_MAX_BYTES`,
/// `ARGV_MAX_BYTES`), `cwd` an existing directory,
/// stdin within `stdin_limit`, `timeout_seconds` > 0 and finite (capped to
/// `server_timeout`).
///
/// Errors: one [`ArgumentError`] naming the JSON path (never the value).
pub fn check(
    args: &Value,
    stdin_limit: u64,
    server_timeout: Duration,
) -> Result<ExecuteCall, ArgumentError> {
    let err = |path: &str, rule: &str| ArgumentError {
        path: path.into(),
        rule: rule.into(),
    };
    let parsed: ExecuteArgs = serde_json::from_value(args.clone())
        .map_err(|_| err("/", "does not match the tool's input schema"))?;
    for (i, a) in parsed.argv.iter().enumerate() {
        if a.contains('\0') {
            return Err(err(
                &format!("/argv/{i}"),
                "must not contain a NUL character",
            ));
        }
        if !conda_mcp_shared::limits::arg_fits(a) {
            return Err(err(&format!("/argv/{i}"), &crate::compile::too_long()));
        }
    }
    if conda_mcp_shared::limits::argv_bytes(&parsed.argv) > conda_mcp_shared::limits::ARGV_MAX_BYTES
    {
        return Err(err("/argv", &crate::compile::argv_too_long()));
    }
    let cwd = match parsed.cwd {
        None => None,
        Some(c) => {
            let p = PathBuf::from(&c);
            if c.contains('\0') || !p.is_dir() {
                return Err(err("/cwd", "must be an existing directory"));
            }
            Some(p)
        }
    };
    let stdin = parsed.stdin.map(String::into_bytes);
    if let Some(s) = &stdin
        && s.len() as u64 > stdin_limit
    {
        return Err(err(
            "/stdin",
            &format!("must be at most {stdin_limit} bytes (--stdin-limit-bytes)"),
        ));
    }
    let timeout = match parsed.timeout_seconds {
        None => server_timeout,
        Some(t) if t.is_finite() && t > 0.0 => Duration::try_from_secs_f64(t)
            .unwrap_or(server_timeout)
            .min(server_timeout),
        Some(_) => {
            return Err(err(
                "/timeout_seconds",
                "must be a finite number of seconds greater than 0",
            ));
        }
    };
    Ok(ExecuteCall {
        argv: parsed.argv,
        cwd,
        stdin,
        timeout,
        replace_existing: parsed.replace_existing == Some(true),
        remove_unmanaged_files: parsed.remove_unmanaged_files == Some(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_is_closed_and_portable_shaped() {
        let s = Value::Object(input_schema().as_ref().clone());
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(s["required"], json!(["argv"]));
        for (name, p) in s["properties"].as_object().into_iter().flatten() {
            assert!(p["type"].is_string(), "{name}: {p}");
        }
        crate::schema::check_schema_document("conda_execute", &s).expect("2020-12");
    }

    #[test]
    fn timeout_is_capped_to_the_server_limit() {
        let limit = Duration::from_secs(30);
        let c = check(
            &json!({"argv": ["info"], "timeout_seconds": 1e9}),
            10,
            limit,
        )
        .expect("ok");
        assert_eq!(c.timeout, limit);
        let c = check(
            &json!({"argv": ["info"], "timeout_seconds": 2.5}),
            10,
            limit,
        )
        .expect("ok");
        assert_eq!(c.timeout, Duration::from_millis(2500));
        let c = check(&json!({"argv": ["info"]}), 10, limit).expect("ok");
        assert_eq!(c.timeout, limit);
        for bad in [json!(0), json!(-1)] {
            let e = check(
                &json!({"argv": ["info"], "timeout_seconds": bad}),
                10,
                limit,
            )
            .expect_err("bad");
            assert_eq!(e.path, "/timeout_seconds");
        }
        let e = check(
            &json!({"argv": ["info"], "stdin": "x".repeat(11)}),
            10,
            limit,
        )
        .expect_err("big");
        assert_eq!(e.path, "/stdin");
    }
}
