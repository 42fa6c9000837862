//! `conda-mcp token new NAME [--os-user USER] [--policy SCOPES]`: prints a fresh bearer token
//! once, and the line that admits it to an `--auth-tokens` file (the hash
//! only). Revoking a token is deleting its line and restarting the server.
//!
//! Output (stdout, four lines): a comment, the token, a comment, the line.
//! A warning on stderr when `--os-user` names no user of this machine.
//! Exit status 0; 2 for a usage error; 1 when the random source fails.

use std::ffi::OsString;
use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;

use super::tokens;

/// The first argument that selects this command.
pub const TOKEN_COMMAND: &str = "token";

/// The examples of `conda-mcp token --help`.
const TOKEN_EXAMPLES: &str = "\
Examples:
  conda-mcp token new alice
      A token for alice (printed once: give it to her) and the line to add to the
      --auth-tokens file (its SHA-256, not the token).
  conda-mcp token new ci --policy conda:read
      A token that may only read.
  conda-mcp token new bob --os-user bob
      A token whose calls run as the OS user bob (the server runs as root).";

/// `conda-mcp token`.
#[derive(Debug, Parser)]
#[command(
    name = "conda-mcp token",
    bin_name = "conda-mcp token",
    about = "Bearer tokens for the HTTP mode (--listen with --auth-tokens)",
    after_help = TOKEN_EXAMPLES
)]
struct TokenCli {
    #[command(subcommand)]
    command: TokenCommand,
}

#[derive(Debug, clap::Subcommand)]
enum TokenCommand {
    /// Print a new random token for NAME (once: only its hash is kept) and
    /// the line to add to the --auth-tokens file.
    New {
        /// The principal's name as the logs show it (letters, digits,
        /// _ . @ -; at most 64).
        #[arg(value_parser = parse_name)]
        name: String,
        /// Run this principal's calls as this OS user (the file's third
        /// column).
        #[arg(long, value_name = "USER", value_parser = parse_name)]
        os_user: Option<String>,
        /// Narrow what the token may do (the file's fourth column):
        /// conda:read, conda:write, conda:exec, comma-separated, or - for
        /// no tool call at all (a token for /metrics).
        #[arg(long, value_name = "SCOPES", value_parser = parse_policy)]
        policy: Option<crate::policy::Scopes>,
    },
}

/// Why a value of `token new` was refused (clap prints it after the flag).
#[derive(Debug, thiserror::Error)]
enum ValueError {
    /// `--name`, `--os-user`: not a name the tokens file can hold.
    #[error("must be 1 to 64 characters of letters, digits, _ . @ -")]
    Name,
    /// `--policy`: not a scopes column (what is wrong with it).
    #[error("{0}")]
    Scopes(&'static str),
}

fn parse_name(s: &str) -> Result<String, ValueError> {
    if tokens::is_name(s) {
        Ok(s.to_owned())
    } else {
        Err(ValueError::Name)
    }
}

fn parse_policy(s: &str) -> Result<crate::policy::Scopes, ValueError> {
    crate::policy::Scopes::column(s).map_err(ValueError::Scopes)
}

/// Runs `conda-mcp token ...`; `args` is the whole command line (program
/// name first, then `token`).
pub fn main(args: Vec<OsString>) -> ExitCode {
    let args = args.into_iter().skip(2);
    let cli = match TokenCli::try_parse_from(std::iter::once(OsString::from("token")).chain(args)) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let TokenCommand::New {
        name,
        os_user,
        policy,
    } = cli.command;
    if let Some(user) = os_user.as_deref()
        && !os_user_exists(user)
    {
        // A warning, not a refusal: the file may be meant for another
        // machine. The server refuses the line at startup where the user
        // is missing.
        let _ = writeln!(
            std::io::stderr(),
            "warning: there is no OS user {user} on this machine; a server here refuses this \
             line at startup until the user exists"
        );
    }
    let token = match tokens::new_token() {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "cannot read the operating system's random source: {e}"
            );
            return ExitCode::FAILURE;
        }
    };
    let text = format!(
        "# Token for {name} (shown only now; give it to {name} over a private channel):\n\
         {token}\n\
         # Add this line to the --auth-tokens file (the SHA-256 of the token, not the token):\n\
         {}\n",
        match policy {
            Some(scopes) =>
                tokens::file_line_with_policy(&name, &token, os_user.as_deref(), scopes),
            None => tokens::file_line(&name, &token, os_user.as_deref()),
        }
    );
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Whether the OS user `name` exists here (Unix user database). On
/// Windows principals cannot map to OS users at all, so the warning always
/// applies there.
fn os_user_exists(name: &str) -> bool {
    #[cfg(unix)]
    return !matches!(nix::unistd::User::from_name(name), Ok(None));
    #[cfg(not(unix))]
    {
        let _ = name;
        false
    }
}
