//! Tool surface of the catalog: input schemas, names, descriptions, and the
//! validation of call arguments.
//!
//! Why it is built this way (README.md "Generated tools"):
//!
//! * Hosts differ in how much JSON Schema they accept, so every tool has two
//!   input schemas: [`Profile::Portable`] (a small keyword allow-list every
//!   major host accepts; exclusive groups stated in prose) and
//!   [`Profile::Full`] (the same plus exact JSON Schema 2020-12 constraints
//!   for exclusive and required groups). [`input::input_schema`] builds both
//!   from [`crate::catalog::Command::properties`].
//! * The server always validates against the FULL schema ([`validate`]), so
//!   both profiles enforce the same rules; errors name the JSON path and never
//!   echo the submitted value.
//! * Names ([`names`]) are deterministic and fit host limits;
//!   descriptions and `_meta` ([`describe`]) are kept short so `tools/list`
//!   stays small.

pub mod describe;
pub mod input;
pub mod names;
pub mod profile;
pub mod validate;

pub use input::{SharedHelp, input_schema, input_schema_with};
pub use names::{RESERVED_TOOL_NAMES, tool_names};
pub use profile::Profile;
pub use validate::{ArgumentError, ArgumentValidator, SchemaError, check_schema_document};

#[cfg(test)]
mod tests;
