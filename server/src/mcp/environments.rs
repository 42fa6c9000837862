//! conda's environments as MCP resources a person can attach to a
//! conversation: one resource listing them all ([`LIST_URI`]) and three
//! resource templates per named environment (its package list, its export
//! as `environment.yml`, its revision history), with `completion/complete`
//! of the environment's name.
//!
//! A read is a read-only tool call through the same pipeline as
//! `tools/call` ([`crate::call::pipeline`]): the list is `conda_inventory`
//! (`sizes: true`), a package list is `conda list --json -n NAME`, an
//! export `conda env export -n NAME`, the history `conda list --revisions
//! --json -n NAME`. So the policy, the caller's principal (its token's
//! scopes, its OS user's worker: a principal sees what its worker's conda
//! sees), the operator's restrictions and the credential mask apply
//! unchanged, and a tool left out by `--tools`/`--exclude-tools` leaves its
//! resources out too.
//!
//! This module holds the protocol-free part: the URIs, what a URI asks
//! for ([`EnvironmentResource::parse`]), the tool call it becomes ([`EnvironmentResource::call`]) and
//! the listed resource and templates.

use rmcp::model::{Resource, ResourceTemplate};
use serde_json::{Value, json};

/// The resource listing every environment conda knows.
pub const LIST_URI: &str = "conda://environments";

/// Where the per-environment resources start: `conda://environments/NAME/VIEW`.
const ENV_PREFIX: &str = "conda://environments/";

/// The argument of the templates that [`complete`](crate::mcp::prompts)
/// completes.
pub const NAME_ARGUMENT: &str = "name";

/// One view of an environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// `conda list --json`: the packages (pip-installed ones included).
    Packages,
    /// `conda env export`: the environment as `environment.yml`.
    Export,
    /// `conda list --revisions --json`: the revision history.
    History,
}

impl View {
    /// Every view, in the order the templates are listed.
    pub const ALL: [View; 3] = [View::Packages, View::Export, View::History];

    /// The URI's last segment.
    pub fn segment(self) -> &'static str {
        match self {
            View::Packages => "packages",
            View::Export => "export",
            View::History => "history",
        }
    }

    /// The content's MIME type.
    pub fn mime_type(self) -> &'static str {
        match self {
            View::Export => "application/yaml",
            View::Packages | View::History => "application/json",
        }
    }

    fn title(self) -> &'static str {
        match self {
            View::Packages => "conda environment: packages",
            View::Export => "conda environment: environment.yml",
            View::History => "conda environment: revision history",
        }
    }

    fn description(self) -> &'static str {
        match self {
            View::Packages => {
                "The packages of a conda environment, as conda list --json shows them (pip-installed ones included)."
            }
            View::Export => "A conda environment exported as environment.yml (conda env export).",
            View::History => {
                "The revisions of a conda environment (conda list --revisions --json)."
            }
        }
    }

    /// The conda command path a read of this view calls (its tool must
    /// be served for the view to be offered).
    pub fn command(self) -> &'static str {
        match self {
            View::Packages | View::History => "list",
            View::Export => "env export",
        }
    }

    /// The URI template (RFC 6570).
    pub fn template(self) -> String {
        format!("{ENV_PREFIX}{{{NAME_ARGUMENT}}}/{}", self.segment())
    }
}

/// What a resource URI asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvironmentResource {
    /// [`LIST_URI`].
    List,
    /// One view of the environment named `name`.
    Environment {
        /// The environment's name (as `conda env list` shows it).
        name: String,
        /// Which view.
        view: View,
    },
}

/// Whether `name` can be an environment's name in a URI: what conda
/// accepts for `--name` without a path (no `/`, `\`, `:`, `#`, whitespace,
/// not `.`/`..`), at most 255 characters.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && !name.starts_with('-')
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "/\\:#%?*\"'<>|".contains(c))
}

impl EnvironmentResource {
    /// The target of `uri`, or `None` when it names no resource of this
    /// module (the caller answers "unknown resource" without repeating it).
    pub fn parse(uri: &str) -> Option<EnvironmentResource> {
        if uri == LIST_URI {
            return Some(EnvironmentResource::List);
        }
        let rest = uri.strip_prefix(ENV_PREFIX)?;
        let (name, segment) = rest.rsplit_once('/')?;
        let view = View::ALL.into_iter().find(|v| v.segment() == segment)?;
        // A client that expands the template as RFC 6570 says
        // percent-encodes the name (`trial@1` is `trial%401`); the decoded
        // name is checked like any other (a `%2F` decodes to `/` and is
        // refused with it).
        let name = percent_encoding::percent_decode_str(name)
            .decode_utf8()
            .ok()?;
        valid_name(&name).then(|| EnvironmentResource::Environment {
            name: name.into_owned(),
            view,
        })
    }

    /// The MIME type of the content.
    pub fn mime_type(&self) -> &'static str {
        match self {
            EnvironmentResource::List => "application/json",
            EnvironmentResource::Environment { view, .. } => view.mime_type(),
        }
    }

    /// The read as a tool call: the conda command path (`None`: the
    /// server's `conda_inventory`) and its arguments.
    pub fn call(&self) -> (Option<&'static str>, Value) {
        match self {
            EnvironmentResource::List => (None, json!({"sizes": true})),
            EnvironmentResource::Environment { name, view } => match view {
                View::Packages => (Some(view.command()), json!({"name": name, "json": true})),
                View::Export => (Some(view.command()), json!({"name": name})),
                View::History => (
                    Some(view.command()),
                    json!({"name": name, "revisions": true, "json": true}),
                ),
            },
        }
    }
}

/// The listed resource of all environments.
pub fn list_resource() -> Resource {
    Resource::new(LIST_URI, "environments")
        .with_title("conda environments")
        .with_description(
            "Every conda environment conda knows: name, prefix, size on disk, package count, Python.",
        )
        .with_mime_type("application/json")
}

/// The resource templates, one per [`View`] that `served` keeps (the
/// server offers a view only while the tool its read calls is served:
/// `--tools` may leave it out).
pub fn templates(served: impl Fn(View) -> bool) -> Vec<ResourceTemplate> {
    View::ALL
        .into_iter()
        .filter(|v| served(*v))
        .map(|v| {
            ResourceTemplate::new(v.template(), format!("environment-{}", v.segment()))
                .with_title(v.title())
                .with_description(v.description())
                .with_mime_type(v.mime_type())
        })
        .collect()
}

/// The view whose URI template is `uri` (what `completion/complete` of a
/// resource template names), if any.
pub fn template_view(uri: &str) -> Option<View> {
    View::ALL.into_iter().find(|v| v.template() == uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_parse_to_what_they_name() {
        assert_eq!(
            EnvironmentResource::parse(LIST_URI),
            Some(EnvironmentResource::List)
        );
        assert_eq!(
            EnvironmentResource::parse("conda://environments/base/packages"),
            Some(EnvironmentResource::Environment {
                name: "base".into(),
                view: View::Packages
            })
        );
        assert_eq!(
            EnvironmentResource::parse("conda://environments/py-3.12/export")
                .map(|t| t.mime_type()),
            Some("application/yaml")
        );
        for bad in [
            "conda://environments/",
            "conda://environments/x",
            "conda://environments/x/files",
            "conda://environments//packages",
            "conda://environments/a/b/packages",
            "conda://environments/../packages",
            "conda://environments/a b/packages",
            "conda://environments/-n/packages",
            "conda://environments/a%2Fb/packages",
            "conda://environments/%2E%2E/packages",
            "conda://environments/a%20b/packages",
            "conda://environments/%FF/packages",
            "conda://environments/a%25/packages",
            "conda://capabilities",
        ] {
            assert_eq!(EnvironmentResource::parse(bad), None, "{bad}");
        }
    }

    /// A name the client percent-encoded (RFC 6570 simple expansion, as
    /// SDKs expand the templates) names the same environment.
    #[test]
    fn percent_encoded_names_are_decoded() {
        for (uri, name) in [
            ("conda://environments/trial%401/packages", "trial@1"),
            ("conda://environments/env%31/packages", "env1"),
            ("conda://environments/trial@1/packages", "trial@1"),
        ] {
            assert_eq!(
                EnvironmentResource::parse(uri),
                Some(EnvironmentResource::Environment {
                    name: name.into(),
                    view: View::Packages
                }),
                "{uri}"
            );
        }
    }

    #[test]
    fn each_template_parses_back() {
        for v in View::ALL {
            assert_eq!(template_view(&v.template()), Some(v));
            let uri = v.template().replace("{name}", "sci");
            assert_eq!(
                EnvironmentResource::parse(&uri),
                Some(EnvironmentResource::Environment {
                    name: "sci".into(),
                    view: v
                })
            );
        }
        assert_eq!(templates(|_| true).len(), 3);
        assert_eq!(templates(|v| v != View::Export).len(), 2);
    }
}
