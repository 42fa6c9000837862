//! Scopes that narrow the startup policy for one principal: an OAuth
//! access token's, or the policy column of an `--auth-tokens` line
//! (docs/remote.md, "Scopes"). A scope never widens it: a server started
//! without `--allow-write` refuses mutations whatever a token grants.
//!
//! `conda:read` allows read-only calls; `conda:write` and `conda:exec`
//! each include it. An OAuth access token the server accepts may always
//! read (its audience is this server); a token file line may take even
//! that away (`-`: a token that authenticates, for `/metrics`, but calls
//! no tool).

/// The scope a principal needs for any tool call (included in [`WRITE`]
/// and [`EXEC`]).
pub const READ: &str = "conda:read";
/// The scope a principal needs for mutations (what `--allow-write` or
/// `--approve-writes` allow).
pub const WRITE: &str = "conda:write";
/// The scope a principal needs for arbitrary programs (`conda run`, the
/// raw `conda_execute` tool; what `--allow-exec` allows).
pub const EXEC: &str = "conda:exec";
/// The scopes this server knows, as its protected-resource metadata lists
/// them (`scopes_supported`, RFC 9728 §2).
pub const SUPPORTED: [&str; 2] = [WRITE, EXEC];

/// The policy column of an `--auth-tokens` line that grants nothing.
pub const NONE_COLUMN: &str = "-";

/// What a principal's access token grants, of the scopes this server knows.
/// A principal without scopes (stdio, a static token) carries `None` and is
/// not narrowed at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Scopes {
    /// Tool calls at all: [`READ`], [`WRITE`] or [`EXEC`] was granted (an
    /// OAuth access token always reads).
    pub read: bool,
    /// [`WRITE`] was granted.
    pub write: bool,
    /// [`EXEC`] was granted.
    pub exec: bool,
}

impl Scopes {
    /// The known scopes among an OAuth access token's `granted` (scope
    /// tokens as the `scope` claim lists them, RFC 6749 §3.3:
    /// case-sensitive); others are ignored. Such a token always reads.
    pub fn of<'a>(granted: impl IntoIterator<Item = &'a str>) -> Self {
        let mut s = Scopes {
            read: true,
            ..Scopes::default()
        };
        for g in granted {
            match g {
                WRITE => s.write = true,
                EXEC => s.exec = true,
                _ => {}
            }
        }
        s
    }

    /// The policy column of an `--auth-tokens` line: [`NONE_COLUMN`], or
    /// [`READ`], [`WRITE`], [`EXEC`] separated by commas (each at most
    /// once, case-sensitive as OAuth scopes are).
    ///
    /// Errors: what is wrong, without the column's text.
    pub fn column(text: &str) -> Result<Self, &'static str> {
        if text == NONE_COLUMN {
            return Ok(Scopes::default());
        }
        let mut s = Scopes::default();
        for item in text.split(',') {
            let seen = match item {
                READ => std::mem::replace(&mut s.read, true),
                WRITE => std::mem::replace(&mut s.write, true),
                EXEC => std::mem::replace(&mut s.exec, true),
                "" => return Err("the policy column has an empty item"),
                _ => {
                    return Err(
                        "the policy column lists an unknown scope (conda:read, conda:write, conda:exec or -)",
                    );
                }
            };
            if seen {
                return Err("the policy column lists a scope twice");
            }
        }
        s.read = s.read || s.write || s.exec;
        Ok(s)
    }

    /// The scopes as a token file's policy column writes them
    /// ([`Scopes::column`] reads it back).
    pub fn to_column(self) -> String {
        let mut items = Vec::new();
        if self.read && !self.write && !self.exec {
            items.push(READ);
        }
        if self.write {
            items.push(WRITE);
        }
        if self.exec {
            items.push(EXEC);
        }
        if items.is_empty() {
            NONE_COLUMN.to_owned()
        } else {
            items.join(",")
        }
    }
}

/// What a principal narrowed by `scopes` may do under `policy`, one
/// phrase per class (`conda-mcp check --listen`): `read`, `write` and
/// `exec`, each allowed or refused and why.
pub fn effective(policy: &super::Policy, scopes: Option<Scopes>) -> String {
    let lacks = |granted: fn(&Scopes) -> bool, scope: &str| {
        scopes
            .filter(|s| !granted(s))
            .map(|_| format!("refused (the token lacks {scope})"))
    };
    let read = lacks(|s| s.read, READ).unwrap_or_else(|| "allowed".to_owned());
    let write = if !policy.writes() {
        "refused (no --allow-write)".to_owned()
    } else {
        lacks(|s| s.write, WRITE).unwrap_or_else(|| {
            if policy.approve_writes {
                "allowed after approval (--approve-writes)".to_owned()
            } else {
                "allowed (--allow-write)".to_owned()
            }
        })
    };
    let exec = if !policy.allow_exec {
        "refused (no --allow-exec)".to_owned()
    } else {
        lacks(|s| s.exec, EXEC).unwrap_or_else(|| "allowed (--allow-exec)".to_owned())
    };
    let (write, exec) = match scopes {
        Some(s) if !s.read => (
            "refused (the token lacks conda:read)".to_owned(),
            "refused (the token lacks conda:read)".to_owned(),
        ),
        _ => (write, exec),
    };
    format!("read {read}; write {write}; exec {exec}")
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
                read: true,
                write: true,
                exec: false
            }
        );
        assert!(!Scopes::of(["Conda:Write", "conda:exec"]).write);
        assert!(Scopes::of(["conda:exec"]).exec);
    }

    #[test]
    fn token_file_columns_narrow_and_write_includes_read() {
        let none = Scopes::column("-").expect("none");
        assert_eq!(none, Scopes::default());
        assert!(!none.read);
        let read = Scopes::column("conda:read").expect("read");
        assert!(read.read && !read.write && !read.exec);
        let write = Scopes::column("conda:write").expect("write");
        assert!(write.read && write.write && !write.exec);
        let all = Scopes::column("conda:read,conda:write,conda:exec").expect("all");
        assert!(all.read && all.write && all.exec);
        for (bad, why) in [
            ("", "empty item"),
            ("conda:read,", "empty item"),
            ("conda:Read", "unknown scope"),
            ("conda:write,conda:write", "twice"),
            ("admin", "unknown scope"),
        ] {
            let e = Scopes::column(bad).expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
            assert!(!e.contains("admin") && !e.contains("Read"), "{e}");
        }
        for s in [
            none,
            read,
            write,
            all,
            Scopes::column("conda:exec").expect("exec"),
        ] {
            assert_eq!(Scopes::column(&s.to_column()).expect("round trip"), s);
        }
    }

    #[test]
    fn the_effective_policy_names_the_flag_or_the_scope_that_decides() {
        let server = super::super::Policy {
            allow_write: true,
            ..Default::default()
        };
        assert_eq!(
            effective(&server, None),
            "read allowed; write allowed (--allow-write); exec refused (no --allow-exec)"
        );
        let reader = Scopes::column("conda:read").ok();
        assert_eq!(
            effective(&server, reader),
            "read allowed; write refused (the token lacks conda:write); exec refused (no --allow-exec)"
        );
        let none = Scopes::column("-").ok();
        assert!(effective(&server, none).starts_with("read refused (the token lacks conda:read)"));
    }
}
