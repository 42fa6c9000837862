//! The command line resolved into [`Settings`] (the low-level arguments of
//! [`Cli`], as clap parsed and checked them, into the one value the rest
//! of the server takes). Every flag is read here and nowhere else; a flag
//! that only inverts a default (`--no-cache`, `--no-confirm`, ...) becomes
//! a positive setting.

use crate::cli::{Cli, LogFormatArg};
use crate::mcp::tasks::TaskSettings;
use crate::policy::Policy;
use crate::settings::{DiscoverySettings, Settings, WorkerSettings};
use crate::tools::filter::ToolFilter;
use conda_mcp_shared::LogFormat;
use conda_mcp_shared::limits::Limits;

/// The settings `cli` asks for. Infallible: clap has checked every value;
/// what needs the conda found (a `--tools` entry that matches nothing) is
/// checked at startup.
pub fn resolve(cli: &Cli) -> Settings {
    Settings {
        policy: Policy {
            allow_write: cli.allow_write,
            allow_exec: cli.allow_exec,
            approve_writes: cli.approve_writes,
            scopes: None,
        },
        limits: Limits {
            timeout: cli.timeout,
            output_limit_bytes: cli.output_limit_bytes,
            stdin_limit_bytes: cli.stdin_limit_bytes,
        },
        profile: cli.schema_profile,
        filter: ToolFilter {
            include: cli.tools.as_ref().map(|l| l.0.clone()),
            exclude: cli
                .exclude_tools
                .as_ref()
                .map(|l| l.0.clone())
                .unwrap_or_default(),
        },
        mode: cli.tool_mode,
        confirm: !cli.no_confirm,
        live_tools: cli.live_tools,
        tool_icons: cli.tool_icons,
        watch_interval: cli.watch_interval,
        results: {
            let mut r = crate::call::ResultSettings::new(cli.result_mode, cli.max_result_bytes);
            r.mask_credentials = !cli.no_mask_credentials;
            r
        },
        log_format: match cli.log_format {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        },
        discovery: DiscoverySettings {
            conda_exe: cli.conda_exe.clone(),
            python: cli.python.clone(),
            use_cache: !cli.no_cache,
        },
        worker: WorkerSettings {
            exe: cli.worker_exe.clone(),
            socket: cli.worker_socket.clone(),
            user: cli.worker_user.clone(),
            home: cli.worker_home.clone(),
            warm_conda: !cli.no_warm_conda,
            pass_env: cli.pass_env.clone(),
        },
        http: resolve_http(cli),
        tasks: TaskSettings {
            retention: cli.task_retention,
            max_finished: cli.max_finished_tasks,
        },
        audit_log: cli.audit_log.clone(),
        restrictions: crate::call::plan::restrict::Restrictions {
            // Absolute against the folder the server started in.
            read_paths: cli
                .allow_read_path
                .iter()
                .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone()))
                .collect(),
            allow_base_writes: cli.allow_base_writes,
            protected: cli
                .protect_env
                .iter()
                .map(|e| crate::call::plan::restrict::ProtectedEnv::parse(e))
                .collect(),
            allowed_channels: cli
                .allowed_channel
                .iter()
                .map(|c| crate::call::plan::restrict::canonical_channel(c))
                .collect(),
        },
        metrics_principals: cli.http.metrics_principals,
    }
}

/// The HTTP mode's settings when `--listen` is given: the default Host and
/// Origin lists extended by the flags, the request timeout (default
/// `--timeout` plus a margin for the queue), and the body limit of the
/// stdio line for the same `--stdin-limit-bytes`.
fn resolve_http(cli: &Cli) -> Option<crate::transport::http::HttpSettings> {
    use crate::transport::http::{DEFAULT_HOSTS, DEFAULT_ORIGINS, REQUEST_TIMEOUT_MARGIN};
    let flags = &cli.http;
    let listen = flags.listen?;
    let extend = |defaults: &[&str], extra: &[String]| -> Vec<String> {
        defaults
            .iter()
            .map(|s| (*s).to_owned())
            .chain(extra.iter().map(|s| s.trim().to_owned()))
            .filter(|s| !s.is_empty())
            .collect()
    };
    Some(crate::transport::http::HttpSettings {
        listen,
        auth_tokens: flags.auth_tokens.clone(),
        // clap requires the three together.
        oauth: match (
            &flags.oauth_issuer,
            &flags.oauth_audience,
            &flags.oauth_jwks,
        ) {
            (Some(issuer), Some(audience), Some(jwks)) => {
                Some(crate::transport::http::oauth::OAuthSettings {
                    issuer: issuer.clone(),
                    audience: audience.clone(),
                    jwks: jwks.clone(),
                    user_claim: flags.oauth_user_claim.clone(),
                    user_map: flags.user_map.clone(),
                })
            }
            _ => None,
        },
        tls: flags.tls_cert.clone().zip(flags.tls_key.clone()),
        allowed_hosts: extend(DEFAULT_HOSTS, &flags.allowed_hosts),
        allowed_origins: extend(DEFAULT_ORIGINS, &flags.allowed_origins),
        request_timeout: flags
            .request_timeout
            .unwrap_or(cli.timeout + REQUEST_TIMEOUT_MARGIN),
        shutdown_grace: flags.shutdown_grace,
        max_workers: usize::from(flags.max_workers),
        worker_idle_timeout: flags.worker_idle_timeout,
        sessions: crate::transport::http::sessions::SessionSettings {
            max: usize::from(flags.max_sessions),
            idle_timeout: flags.session_idle_timeout,
        },
        max_body_bytes: crate::transport::stdio::line_limit(cli.stdin_limit_bytes),
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use clap::Parser;

    use super::*;
    use crate::schema::Profile;
    use crate::tools::ToolMode;

    fn settings(args: &[&str]) -> Settings {
        resolve(
            &Cli::try_parse_from(std::iter::once("conda-mcp").chain(args.iter().copied()))
                .expect("parses"),
        )
    }

    #[test]
    fn no_flags_resolve_to_the_defaults() {
        assert_eq!(settings(&[]), Settings::default());
    }

    #[test]
    fn every_flag_lands_in_its_setting() {
        let s = settings(&[
            "--conda-exe=/c/bin/conda",
            "--python=/c/bin/python",
            "--timeout=2.5",
            "--output-limit-bytes=10",
            "--stdin-limit-bytes=20",
            "--allow-write",
            "--allow-exec",
            "--no-confirm",
            "--schema-profile=full",
            "--no-cache",
            "--worker-exe=/w/worker",
            "--worker-socket=/w/sock",
            "--worker-user=u",
            "--worker-home=/h",
            "--no-warm-conda",
            "--pass-env=A_*",
            "--tools=env *",
            "--exclude-tools=conda_env_remove",
            "--tool-mode=compact",
            "--live-tools",
            "--log-format=json",
            "--no-mask-credentials",
            "--result-mode=lean",
            "--max-result-bytes=5000",
            "--task-retention=1.5",
            "--max-finished-tasks=3",
        ]);
        assert_eq!(
            s.policy,
            Policy {
                allow_write: true,
                allow_exec: true,
                approve_writes: false,
                scopes: None,
            }
        );
        assert_eq!(
            s.limits,
            Limits {
                timeout: Duration::from_millis(2500),
                output_limit_bytes: 10,
                stdin_limit_bytes: 20,
            }
        );
        assert_eq!(s.profile, Profile::Full);
        assert_eq!(
            s.filter.include.as_ref().map(|l| l[0].as_str().to_owned()),
            Some("env *".to_owned())
        );
        assert_eq!(s.filter.exclude[0].as_str(), "conda_env_remove");
        assert_eq!(s.mode, ToolMode::Compact);
        assert!(!s.confirm && s.live_tools && !s.results.mask_credentials);
        assert_eq!(
            s.results.mode,
            crate::call::shape::document::ResultMode::Lean
        );
        assert_eq!(s.results.max_result_bytes, Some(5000));
        assert_eq!(s.log_format, LogFormat::Json);
        assert_eq!(
            s.tasks,
            TaskSettings {
                retention: Duration::from_millis(1500),
                max_finished: 3,
            }
        );
        assert_eq!(
            s.discovery,
            DiscoverySettings {
                conda_exe: Some(PathBuf::from("/c/bin/conda")),
                python: Some(PathBuf::from("/c/bin/python")),
                use_cache: false,
            }
        );
        assert_eq!(
            s.worker,
            WorkerSettings {
                exe: Some(PathBuf::from("/w/worker")),
                socket: Some(PathBuf::from("/w/sock")),
                user: Some("u".into()),
                home: Some(PathBuf::from("/h")),
                warm_conda: false,
                pass_env: vec!["A_*".into()],
            }
        );
        // What the parts below are built with follows from the one value.
        let cfg = s.worker_config(PathBuf::from("/c/bin/conda"));
        assert_eq!(cfg.worker_exe, PathBuf::from("/w/worker"));
        assert_eq!(cfg.python, Some(PathBuf::from("/c/bin/python")));
        assert_eq!(cfg.log_format, LogFormat::Json);
        assert!(!cfg.warm_conda);
        let d = s.discovery_options();
        assert!(d.no_cache);
        assert_eq!(d.timeout, Duration::from_millis(2500));
        assert_eq!(d.worker.socket, Some(PathBuf::from("/w/sock")));
        let t = s.tool_options();
        assert_eq!(
            (t.mode, t.profile, t.confirm),
            (ToolMode::Compact, Profile::Full, false)
        );
        assert_eq!(s.typed().limits, s.limits);
    }
}
