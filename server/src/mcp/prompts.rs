//! The prompts of [`crate::prompts`] as MCP: `prompts/list`, `prompts/get`
//! and `completion/complete` for their arguments (both protocol eras: rmcp
//! routes them alike). Errors are invalid params (-32602) and repeat no
//! value that was sent.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, Prompt, PromptArgument, PromptMessage, Reference, Role,
};

use crate::catalog::EnvironmentDirs;
use crate::prompts;

/// `prompts/list`: every prompt with its arguments.
pub fn list() -> ListPromptsResult {
    let listed = prompts::PROMPTS
        .iter()
        .map(|p| {
            let args = p
                .arguments
                .iter()
                .map(|a| {
                    PromptArgument::new(a.name)
                        .with_description(a.description)
                        .with_required(a.required)
                })
                .collect::<Vec<_>>();
            Prompt::new(
                p.name,
                Some(p.description),
                (!args.is_empty()).then_some(args),
            )
            .with_title(p.title)
        })
        .collect();
    ListPromptsResult::with_all_items(listed)
}

/// The folder project files are relative to: the server's own.
pub fn project() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// `prompts/get`: one user message with the prompt's text; `compact`: the
/// server runs `--tool-mode compact`.
///
/// Errors: invalid params naming the prompt and the argument
/// ([`prompts::PromptError`]); an argument that is not a string is
/// refused the same way.
pub fn get(request: GetPromptRequestParams, compact: bool) -> Result<GetPromptResult, McpError> {
    let mut args = BTreeMap::new();
    for (k, v) in request.arguments.unwrap_or_default() {
        let Some(s) = v.as_str() else {
            return Err(McpError::invalid_params(
                "prompt arguments are strings",
                None,
            ));
        };
        args.insert(k, s.to_owned());
    }
    let rendered = prompts::get(&request.name, &args, compact, &project())
        .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, rendered.text)])
            .with_description(rendered.description),
    )
}

/// `completion/complete` for a prompt's argument, or the environment name
/// of an environment resource template ([`super::environments`]) whose
/// view `served` keeps; other references complete to nothing.
pub fn complete(
    request: &CompleteRequestParams,
    dirs: &EnvironmentDirs,
    served: impl Fn(super::environments::View) -> bool,
) -> CompleteResult {
    let (values, total) = match &request.r#ref {
        Reference::Prompt(p) => prompts::complete::complete(
            &p.name,
            &request.argument.name,
            &request.argument.value,
            dirs,
            &project(),
        ),
        Reference::Resource(r)
            if super::environments::template_view(&r.uri).is_some_and(&served)
                && request.argument.name == super::environments::NAME_ARGUMENT =>
        {
            prompts::complete::names_starting_with(
                prompts::complete::environment_names(dirs),
                &request.argument.value,
            )
        }
        _ => (Vec::new(), 0),
    };
    let shown = values.len();
    let total_u32 = u32::try_from(total).unwrap_or(u32::MAX);
    // At most MAX_VALUES values: the constructor cannot fail.
    let info =
        CompletionInfo::with_pagination(values, Some(total_u32), total > shown).unwrap_or_default();
    CompleteResult::new(info)
}
