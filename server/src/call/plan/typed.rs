//! A typed tool's call, from schema-valid arguments to the argv that runs:
//! everything the server decides besides compiling ([`crate::compile`]) and
//! the policy check ([`crate::policy`]), in this order.
//!
//! 1. **Paths.** Path-like options must be absolute
//!    ([`crate::compile::paths`]): conda runs in a fixed directory.
//! 2. **Server options.** `conda_run` carries two options of the server's
//!    own next to conda's: `stdin` (text for the program's stdin, at most
//!    `--stdin-limit-bytes` bytes) and `timeout_seconds` (> 0; capped to
//!    `--timeout`, as for `conda_execute`). They are taken out before
//!    compiling.
//! 3. **Output of `conda run`.** In its default capture mode `conda run`
//!    holds all output until the program exits (a timeout loses it, a
//!    background grandchild keeps the call open, stdin is dropped), so the
//!    typed `conda_run` passes `--no-capture-output` unless the call sets
//!    `no_capture_output: false` explicitly.
//! 4. **Run-time rules.** A command that needs one of several options at
//!    run time ([`crate::policy::required`]) is refused before conda runs.
//! 5. **Confirmation.** conda's prompt is its confirmation, and a
//!    non-interactive caller cannot answer it: with stdin at end-of-file
//!    conda takes the default and proceeds, with `--json` it does not even
//!    ask. So a call the policy classifies as a mutation, to a command that
//!    has conda's `yes` option, without `yes: true`, runs as a **dry run**
//!    (the server adds `dry_run: true`): conda shows its plan and changes
//!    nothing, and the result says the change was not applied
//!    (`confirmation_required`). Because a dry run is read-only, this works
//!    on a read-only server too. With `yes: true` the call runs as given;
//!    `--no-confirm` turns the rule off. The raw `conda_execute` tool is
//!    never amended.
//! 6. **Existing environments.** `conda_create` and `conda_env_create`
//!    carry the server option `replace_existing`; a create whose target
//!    holds an environment is refused without it, and with it a dry run
//!    is solved for a fresh prefix ([`super::existing_env`]).
//! 7. **Approval** (`--approve-writes`, instead of 5). A call that is not
//!    read-only runs only after the person approved it
//!    ([`crate::call::approve::question`]): the argv that applies it is the call's
//!    own with `yes: true` (whatever the model said about `yes`: conda
//!    must not prompt, and the person is the one who confirms), and, when
//!    the command has conda's `dry_run`, the preview is the same call with
//!    `dry_run: true` and `json: true` (conda's plan as a document). The
//!    prediction of existing environments (step 6) applies to the argv that applies the call.

use std::time::Duration;

use conda_mcp_shared::limits::Limits;
use serde_json::{Map, Value};

use super::existing_env::{self, Decision, Replacement};
use crate::call::approve::question::{Approval, Preview};
use crate::catalog::{Catalog, CommandIdx};
use crate::policy::{self, Classification, Policy, Refusal};
use crate::schema::ArgumentError;
use crate::target::Environment;
use crate::tools::server_options::{
    REMOVE_UNMANAGED, REPLACE_EXISTING, STDIN_PROPERTY, TIMEOUT_PROPERTY, confirm_properties,
    creates_environment, dest_property, flag_property, is_run, removes_environment,
};

/// What the server decides for typed calls, fixed at startup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TypedSettings {
    /// Mutations without `yes: true` run as dry runs (off with
    /// `--no-confirm`).
    pub confirm: bool,
    /// The server's limits: `--stdin-limit-bytes` bounds `stdin`,
    /// `--timeout` is the ceiling of `timeout_seconds`.
    pub limits: Limits,
}

/// A typed call ready to run.
#[derive(Debug, Clone)]
pub struct TypedCall {
    /// The argv that runs (after any amendment).
    pub argv: Vec<String>,
    /// The policy's classification of that argv (already checked).
    pub classification: Classification,
    /// The call ran as a dry run because it did not say `yes: true`:
    /// nothing was changed.
    pub confirmation_required: bool,
    /// With `confirmation_required`: the startup options the server lacks
    /// to apply the change (the call with `yes: true` would be refused
    /// for them); empty when it can be applied.
    pub apply_requires: Vec<&'static str>,
    /// `conda_run`'s `stdin`.
    pub stdin: Option<Vec<u8>>,
    /// `conda_run`'s `timeout_seconds`, capped; `None` = the server's.
    pub timeout: Option<Duration>,
    /// The call previews or applies the replacement of an existing
    /// environment.
    pub replacement: Option<Replacement>,
    /// `--approve-writes`: the call runs only after the person approved it
    /// (step 7 of the module docs).
    pub approval: Option<Approval>,
    /// The server option `remove_unmanaged_files: true` (tools that remove
    /// a whole environment): files no package installed may be removed.
    pub remove_unmanaged_files: bool,
}

/// Why a typed call does not run.
#[derive(Debug, Clone)]
pub enum Early {
    /// Arguments the server does not accept (named by JSON path).
    Invalid(Vec<ArgumentError>),
    /// The policy refuses the call.
    Refused(Refusal),
    /// A create whose target holds an environment, without
    /// `replace_existing: true`.
    Exists(Environment),
}

/// Prepares a call to the tool of `cmd` with schema-valid `args` (see the
/// module docs for the steps).
///
/// Errors: [`Early::Invalid`] (relative path, server option out of range,
/// value the compiler rejects, run-time rule not met) or
/// [`Early::Refused`]; nothing ran.
pub fn prepare(
    catalog: &Catalog,
    policy: &Policy,
    cmd: CommandIdx,
    args: &Map<String, Value>,
    settings: TypedSettings,
) -> Result<TypedCall, Early> {
    let command = &catalog.commands[cmd];
    let invalid = |e: ArgumentError| Early::Invalid(vec![e]);
    crate::compile::paths::check_paths(command, args).map_err(invalid)?;
    let mut args = args.clone();
    let (mut stdin, mut timeout) = (None, None);
    let replace_existing =
        creates_environment(command) && args.remove(REPLACE_EXISTING) == Some(Value::Bool(true));
    let remove_unmanaged_files =
        removes_environment(command) && args.remove(REMOVE_UNMANAGED) == Some(Value::Bool(true));
    if is_run(command) {
        (stdin, timeout) = take_server_options(&mut args, settings).map_err(invalid)?;
        if let Some(p) = flag_property(command, "no_capture_output") {
            args.entry(p.to_owned()).or_insert(Value::Bool(true));
        }
    }
    let argv = crate::compile::compile(catalog, cmd, &args).map_err(invalid)?;
    let resolved = crate::argparse::resolve(catalog, &argv);
    if let Some(rule) = policy::required::unmet(catalog, &resolved) {
        return Err(invalid(ArgumentError {
            path: "/".into(),
            rule: format!("{} {}", command.display_path(), rule.phrase()),
        }));
    }
    let classification = policy::classify_resolved(catalog, &resolved);
    let mut call = TypedCall {
        argv,
        classification,
        confirmation_required: false,
        apply_requires: Vec::new(),
        stdin,
        timeout,
        replacement: None,
        approval: None,
        remove_unmanaged_files,
    };
    let mut effective = args.clone();
    // Every call that is not read-only, also one the resolver could not
    // reproduce (it fails closed: conda might still run it).
    if policy.needs_approval(&call.classification) {
        approve(catalog, cmd, &args, &mut call).map_err(invalid)?;
    } else if settings.confirm
        && call.classification.requires_write
        && call.classification.outcome == policy::Invocation::Runs
        && let Some((yes, dry_run)) = confirm_properties(command)
        && args.get(yes) != Some(&Value::Bool(true))
    {
        let mut amended = args.clone();
        amended.insert(dry_run.to_owned(), Value::Bool(true));
        let argv = crate::compile::compile(catalog, cmd, &amended).map_err(invalid)?;
        let classification = policy::classify(catalog, &argv);
        // Only a dry run the policy itself calls read-only replaces the call.
        if classification.read_only {
            call.apply_requires = policy
                .check(&call.classification)
                .err()
                .map(|r| r.missing.into_iter().chain(r.missing_scopes).collect())
                .unwrap_or_default();
            call.argv = argv;
            call.classification = classification;
            call.confirmation_required = true;
            effective = amended;
        }
    }
    predict_existing(catalog, cmd, &mut call, &effective, replace_existing)?;
    policy.check(&call.classification).map_err(Early::Refused)?;
    Ok(call)
}

/// Step 7 of the module docs: the argv that applies the call (with `yes`)
/// and its preview (with `dry_run` and `json`, when the command has
/// `dry_run` and the policy calls that dry run read-only).
///
/// Errors: a value the compiler rejects.
fn approve(
    catalog: &Catalog,
    cmd: CommandIdx,
    args: &Map<String, Value>,
    call: &mut TypedCall,
) -> Result<(), ArgumentError> {
    let command = &catalog.commands[cmd];
    if let Some(yes) = flag_property(command, "yes") {
        let mut apply = args.clone();
        apply.insert(yes.to_owned(), Value::Bool(true));
        call.argv = crate::compile::compile(catalog, cmd, &apply)?;
        call.classification = policy::classify(catalog, &call.argv);
    }
    let mut preview = None;
    if let Some(dry_run) = flag_property(command, "dry_run") {
        let mut dry = args.clone();
        dry.insert(dry_run.to_owned(), Value::Bool(true));
        if let Some(json) = flag_property(command, "json") {
            dry.insert(json.to_owned(), Value::Bool(true));
        }
        let argv = crate::compile::compile(catalog, cmd, &dry)?;
        let classification = policy::classify(catalog, &argv);
        if classification.read_only {
            preview = Some(Preview {
                argv,
                classification,
                checks: Default::default(),
            });
        }
    }
    call.approval = Some(Approval { preview });
    Ok(())
}

/// The prediction of existing environments on the argv about to run
/// ([`super::existing_env`]): refuses a create into an existing environment
/// without `replace_existing`; with it, recompiles a dry run for a fresh
/// prefix (`args` are the arguments `call.argv` was compiled from).
fn predict_existing(
    catalog: &Catalog,
    cmd: CommandIdx,
    call: &mut TypedCall,
    args: &Map<String, Value>,
    replace_existing: bool,
) -> Result<(), Early> {
    let command = &catalog.commands[cmd];
    if !creates_environment(command) && command.subpath() != crate::target::RENAME_PATH {
        return Ok(());
    }
    let resolved = crate::argparse::resolve(catalog, &call.argv);
    let cwd = std::path::Path::new(conda_mcp_shared::env::FIXED_CWD);
    let env = match existing_env::decide(catalog, &resolved, cwd, replace_existing) {
        Decision::Clear => return Ok(()),
        Decision::Exists(env) => return Err(Early::Exists(env)),
        Decision::Replaces(env) => env,
    };
    let fresh = existing_env::preview_prefix(&env.prefix);
    // The same arguments with the target moved to `fresh`: conda refuses a
    // dry run over an existing environment, so a plan is solved there.
    // `None`: the command has no --prefix to point the plan elsewhere.
    let retarget = |args: &Map<String, Value>| -> Option<Result<Vec<String>, Early>> {
        let prefix = dest_property(command, "prefix")?;
        let mut amended = args.clone();
        if let Some(name) = dest_property(command, "name") {
            amended.remove(name);
        }
        amended.insert(
            prefix.to_owned(),
            Value::String(fresh.display().to_string()),
        );
        Some(crate::compile::compile(catalog, cmd, &amended).map_err(|e| Early::Invalid(vec![e])))
    };
    if !resolved.has(catalog, "dry_run") {
        // An apply. Under `--approve-writes` its preview (step 7) is the
        // dry run the person is shown: solved for the fresh prefix too.
        if let Some(preview) = call.approval.as_mut().and_then(|a| a.preview.as_mut()) {
            let mut dry = args.clone();
            for dest in ["dry_run", "json"] {
                if let Some(p) = flag_property(command, dest) {
                    dry.insert(p.to_owned(), Value::Bool(true));
                }
            }
            match retarget(&dry) {
                Some(argv) => {
                    let argv = argv?;
                    preview.classification = policy::classify(catalog, &argv);
                    preview.argv = argv;
                }
                None => call.approval = Some(Approval { preview: None }),
            }
        }
        call.replacement = Some(Replacement::of(&env, None));
        return Ok(());
    }
    let Some(argv) = retarget(args) else {
        return Err(Early::Exists(env));
    };
    let argv = argv?;
    call.classification = policy::classify(catalog, &argv);
    call.argv = argv;
    call.replacement = Some(Replacement::of(&env, Some(&fresh)));
    Ok(())
}

/// Takes `conda_run`'s server options out of `args`.
///
/// Errors: an [`ArgumentError`] at `/stdin` (over the limit) or
/// `/timeout_seconds` (not a finite number > 0).
pub fn take_server_options(
    args: &mut Map<String, Value>,
    settings: TypedSettings,
) -> Result<(Option<Vec<u8>>, Option<Duration>), ArgumentError> {
    let err = |path: &str, rule: String| ArgumentError {
        path: path.into(),
        rule,
    };
    let stdin = match args.remove(STDIN_PROPERTY) {
        None => None,
        Some(Value::String(s)) => {
            if s.len() as u64 > settings.limits.stdin_limit_bytes {
                return Err(err(
                    "/stdin",
                    format!(
                        "must be at most {} bytes (--stdin-limit-bytes)",
                        settings.limits.stdin_limit_bytes
                    ),
                ));
            }
            Some(s.into_bytes())
        }
        Some(_) => return Err(err("/stdin", "must be a string".into())),
    };
    let timeout = match args.remove(TIMEOUT_PROPERTY) {
        None => None,
        Some(v) => match v.as_f64() {
            Some(t) if t.is_finite() && t > 0.0 => Some(
                Duration::try_from_secs_f64(t)
                    .unwrap_or(settings.limits.timeout)
                    .min(settings.limits.timeout),
            ),
            _ => {
                return Err(err(
                    "/timeout_seconds",
                    "must be a finite number of seconds greater than 0".into(),
                ));
            }
        },
    };
    Ok((stdin, timeout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings() -> TypedSettings {
        TypedSettings {
            confirm: true,
            limits: Limits {
                timeout: Duration::from_secs(30),
                output_limit_bytes: 1,
                stdin_limit_bytes: 4,
            },
        }
    }

    #[test]
    fn server_options_are_checked_and_capped() {
        let mut a = json!({"stdin": "abc", "timeout_seconds": 1e9, "name": "x"})
            .as_object()
            .cloned()
            .expect("object");
        let (stdin, timeout) = take_server_options(&mut a, settings()).expect("ok");
        assert_eq!(stdin.as_deref(), Some(&b"abc"[..]));
        assert_eq!(timeout, Some(Duration::from_secs(30)));
        assert_eq!(a.len(), 1, "the server options are taken out");
        let mut a = json!({"timeout_seconds": 2.5})
            .as_object()
            .cloned()
            .expect("o");
        assert_eq!(
            take_server_options(&mut a, settings()).expect("ok").1,
            Some(Duration::from_millis(2500))
        );
        for bad in [json!({"stdin": "abcde"}), json!({"timeout_seconds": 0})] {
            let mut a = bad.as_object().cloned().expect("o");
            let e = take_server_options(&mut a, settings()).expect_err("bad");
            assert!(e.path == "/stdin" || e.path == "/timeout_seconds", "{e}");
        }
    }
}
