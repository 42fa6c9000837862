//! OAuth scopes that narrow the startup policy for one principal
//! (docs/remote.md, "Scopes"). A scope never widens it: a server started
//! without `--allow-write` refuses mutations whatever a token grants.

/// The scope a principal needs for mutations (what `--allow-write` or
/// `--approve-writes` allow).
pub const WRITE: &str = "conda:write";
/// The scope a principal needs for arbitrary programs (`conda run`, the
/// raw `conda_execute` tool; what `--allow-exec` allows).
pub const EXEC: &str = "conda:exec";
/// The scopes this server knows, as its protected-resource metadata lists
/// them (`scopes_supported`, RFC 9728 §2).
pub const SUPPORTED: [&str; 2] = [WRITE, EXEC];

/// What a principal's access token grants, of the scopes this server knows.
/// A principal without scopes (stdio, a static token) carries `None` and is
/// not narrowed at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Scopes {
    /// [`WRITE`] was granted.
    pub write: bool,
    /// [`EXEC`] was granted.
    pub exec: bool,
}

impl Scopes {
    /// The known scopes among `granted` (scope tokens as the `scope` claim
    /// lists them, RFC 6749 §3.3: case-sensitive); others are ignored.
    pub fn of<'a>(granted: impl IntoIterator<Item = &'a str>) -> Self {
        let mut s = Scopes::default();
        for g in granted {
            match g {
                WRITE => s.write = true,
                EXEC => s.exec = true,
                _ => {}
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_scopes_are_picked_case_sensitively() {
        let s = Scopes::of("openid conda:write profile".split(' '));
        assert_eq!(
            s,
            Scopes {
                write: true,
                exec: false
            }
        );
        assert!(!Scopes::of(["Conda:Write", "conda:exec"]).write);
        assert!(Scopes::of(["conda:exec"]).exec);
    }
}
