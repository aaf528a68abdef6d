//! `wirespeed passwd [NAME]`: an argon2id hash for the rules file of
//! `serve --auth`, from a password typed at the terminal (twice, not
//! echoed) or read from stdin's first line when stdin is not a terminal.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Context;
use clap::Args;

#[derive(Args, Debug)]
pub struct PasswdArgs {
    /// Print `NAME = "HASH"`, a line for the rules file's [users] table,
    /// instead of the hash alone.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
}

pub fn run(args: PasswdArgs) -> anyhow::Result<()> {
    let password = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("password: ").context("reading the password")?;
        let again = rpassword::prompt_password("again: ").context("reading the password")?;
        if first != again {
            anyhow::bail!("the two passwords differ; nothing was printed");
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the password from stdin")?;
        line.strip_suffix('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .unwrap_or(&line)
            .to_string()
    };
    if password.is_empty() {
        anyhow::bail!("the password is empty; nothing was printed");
    }
    let hash = wirespeed_service::policy::password::hash(password.as_bytes())
        .map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    match args.name {
        Some(name) => writeln!(out, "{} = \"{hash}\"", toml_key(&name))?,
        None => writeln!(out, "{hash}")?,
    }
    Ok(())
}

/// A TOML key for `name`: bare when it can be, else quoted.
fn toml_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if bare {
        name.to_string()
    } else {
        let escaped: String = name
            .chars()
            .flat_map(|c| match c {
                '"' => vec!['\\', '"'],
                '\\' => vec!['\\', '\\'],
                c => vec![c],
            })
            .collect();
        format!("\"{escaped}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(toml_key("alice"), "alice");
        assert_eq!(toml_key("a b"), "\"a b\"");
        assert_eq!(toml_key("x\"y"), "\"x\\\"y\"");
    }
}
