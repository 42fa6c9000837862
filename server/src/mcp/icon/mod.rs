//! The server's icon (MCP `Implementation.icons`, in `initialize`'s
//! `serverInfo` and the 2026-07-28 lifecycle's `server/discover`): a
//! 48-unit SVG drawn for this project (a white "c" on a green disk; no
//! third-party artwork, so it carries the project's own license), sent as
//! a `data:` URI so that a host that launched the server over stdio can
//! show it without fetching anything.
//!
//! By default only the server carries it: hosts show the server's icon
//! beside its tools, and one icon on each of the 38 tools adds its bytes to
//! every `tools/list` (docs/benchmarks.md "tools/list size"). With
//! `--tool-icons` every tool carries the same icon (`crate::mcp::listing`).

use base64::Engine as _;
use rmcp::model::Icon;

/// The SVG source (`conda-mcp.svg` beside this file, 263 bytes).
pub const SVG: &str = include_str!("conda-mcp.svg");

/// The server's icons: the SVG as a base64 `data:` URI, `image/svg+xml`,
/// sizes `any` (MCP's spelling for a scalable image).
pub fn icons() -> Vec<Icon> {
    let data = base64::engine::general_purpose::STANDARD.encode(SVG.trim_end());
    let mut icon = Icon::new(format!("data:image/svg+xml;base64,{data}"));
    icon.mime_type = Some("image/svg+xml".into());
    icon.sizes = Some(vec!["any".into()]);
    vec![icon]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_icon_is_a_small_svg_in_a_data_uri() {
        let icons = icons();
        assert_eq!(icons.len(), 1);
        let src = &icons[0].src;
        let data = src
            .strip_prefix("data:image/svg+xml;base64,")
            .expect("a base64 SVG data URI");
        let svg = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("base64");
        let svg = String::from_utf8(svg).expect("UTF-8");
        assert!(
            svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
            "{svg}"
        );
        assert!(svg.ends_with("</svg>"), "{svg}");
        assert!(src.len() < 600, "{} bytes", src.len());
    }
}
