//! The closest known name to one that is not known: the hint of an unknown
//! tool (`tools/call` with a name the server does not serve) and of an
//! unknown key of the configuration file. A hint is only given when the
//! name is close (a small edit distance relative to its length), so a name
//! that is nothing like any known one gets none.

/// The name among `known` closest to `input` by Jaro–Winkler similarity
/// (`strsim`), when it is at least 0.8 similar; the first of equally close
/// names. `None` for an empty input, a very long one (over 128 bytes: not
/// a mistyped name) or when nothing is close.
pub fn closest<'a>(input: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    /// Below this similarity the names share too little to be a typo.
    const MIN_SIMILARITY: f64 = 0.8;
    if input.is_empty() || input.len() > 128 {
        return None;
    }
    let mut best: Option<(&str, f64)> = None;
    for name in known {
        let score = strsim::jaro_winkler(input, name);
        if score >= MIN_SIMILARITY && best.is_none_or(|(_, b)| score > b) {
            best = Some((name, score));
        }
    }
    best.map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_its_tool() {
        let known = ["conda_list", "conda_env_list", "conda_install", "conda_info"];
        assert_eq!(closest("conda_lst", known), Some("conda_list"));
        assert_eq!(closest("conda_env_lsit", known), Some("conda_env_list"));
        assert_eq!(closest("conda_instal", known), Some("conda_install"));
        assert_eq!(closest("allow-writes", ["allow-write", "allow-exec"]), Some("allow-write"));
    }

    #[test]
    fn nothing_close_gives_none() {
        let known = ["conda_list", "conda_info"];
        assert_eq!(closest("rm -rf /", known), None);
        assert_eq!(closest("", known), None);
        assert_eq!(closest(&"conda_list".repeat(20), known), None);
    }
}
