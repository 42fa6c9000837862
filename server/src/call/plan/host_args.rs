//! Arguments that hosts add to every tool on their own, dropped before a
//! call is planned.
//!
//! Gemini CLI (0.61) adds a boolean `wait_for_previous` to every tool's
//! input schema, tells the model to set it on a call that depends on
//! earlier ones, and passes it on in `tools/call`. conda-mcp's schemas
//! close every object (`additionalProperties: false`), so without this
//! step every dependent call would fail as `invalid_arguments`, and the
//! model could not repair it. Only the names in [`HOST_ADDED`] are dropped,
//! only at the top level of the arguments, and only where the tool has no
//! property of that name itself; any other unknown property is still an
//! error that names its path (`crate::schema::validate`). Each drop is
//! logged at debug with the tool and the property name (never its value).
//! docs/reference.md "Errors" lists them.

use serde_json::Value;

/// Properties a host adds to every tool, by name: Gemini CLI's
/// `wait_for_previous` (a boolean about its own scheduling of calls).
pub const HOST_ADDED: &[&str] = &["wait_for_previous"];

/// `args` without the [`HOST_ADDED`] properties that the tool `tool` does
/// not accept itself (`accepts` says whether its schema has a top-level
/// property of that name). Anything but an object is returned as it came.
pub fn without_host_added(tool: &str, mut args: Value, accepts: impl Fn(&str) -> bool) -> Value {
    if let Some(map) = args.as_object_mut() {
        for name in HOST_ADDED {
            if map.contains_key(*name) && !accepts(name) {
                map.remove(*name);
                tracing::debug!(
                    tool,
                    property = name,
                    "dropped a host-added argument before validation"
                );
            }
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_host_added_property_is_dropped_whatever_its_value() {
        for v in [
            json!(true),
            json!(false),
            json!("x"),
            json!(null),
            json!({}),
        ] {
            let args = json!({"name": "demo", "wait_for_previous": v});
            assert_eq!(
                without_host_added("conda_create", args, |_| false),
                json!({"name": "demo"})
            );
        }
    }

    #[test]
    fn other_properties_and_other_shapes_are_left_alone() {
        let args = json!({"name": "demo", "wait_for_it": true});
        assert_eq!(without_host_added("t", args.clone(), |_| false), args);
        let not_object = json!(["wait_for_previous"]);
        assert_eq!(
            without_host_added("t", not_object.clone(), |_| false),
            not_object
        );
        let nested = json!({"arguments": {"wait_for_previous": true}});
        assert_eq!(without_host_added("t", nested.clone(), |_| false), nested);
    }

    #[test]
    fn a_tool_with_a_property_of_that_name_keeps_it() {
        let args = json!({"wait_for_previous": true});
        assert_eq!(
            without_host_added("t", args.clone(), |n| n == "wait_for_previous"),
            args
        );
    }
}
