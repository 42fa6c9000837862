//! The closest known name to one that is not known: the hint of an unknown
//! tool (`tools/call` with a name the server does not serve) and of an
//! unknown key of the configuration file. A hint is only given when the
//! name is close (a small edit distance relative to its length), so a name
//! that is nothing like any known one gets none, and the input itself is
//! never repeated.

/// The name among `known` closest to `input` by Damerau–Levenshtein
/// distance (`strsim`: insertions, deletions, substitutions and swaps of
/// two neighbours), when that distance is at most one edit per five
/// characters of the name, plus one, and at most three; the first of
/// equally close names. `None` for an empty input, a long one (over 128
/// bytes: not a mistyped name) or when nothing is that close. (A
/// similarity that rewards a common prefix would call every `conda_…`
/// name close to every other.)
pub fn closest<'a>(input: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if input.is_empty() || input.len() > 128 {
        return None;
    }
    let mut best: Option<(&str, usize)> = None;
    for name in known {
        let distance = strsim::damerau_levenshtein(input, name);
        let allowed = (1 + name.chars().count() / 5).min(3);
        if distance <= allowed && best.is_none_or(|(_, d)| distance < d) {
            best = Some((name, distance));
        }
    }
    best.map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_its_tool() {
        let known = [
            "conda_list",
            "conda_env_list",
            "conda_install",
            "conda_info",
        ];
        assert_eq!(closest("conda_lst", known), Some("conda_list"));
        assert_eq!(closest("conda_env_lsit", known), Some("conda_env_list"));
        assert_eq!(closest("conda_instal", known), Some("conda_install"));
        assert_eq!(
            closest("allow-writes", ["allow-write", "allow-exec"]),
            Some("allow-write")
        );
    }

    #[test]
    fn nothing_close_gives_none() {
        let known = ["conda_list", "conda_info"];
        assert_eq!(closest("rm -rf /", known), None);
        assert_eq!(closest("conda_nope_SECRET", known), None);
        assert_eq!(closest("conda_xyz", known), None);
        assert_eq!(closest("", known), None);
        assert_eq!(closest(&"conda_list".repeat(20), known), None);
    }
}
