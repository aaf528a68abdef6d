//! `wirespeed passwd [NAME] [--file FILE]`: an argon2id hash for the rules
//! file of `serve --auth`, from a password typed at the terminal (twice,
//! not echoed) or read from stdin's first line when stdin is not a
//! terminal; printed, or written into FILE's `[users]` table in place.

use std::io::{BufRead, IsTerminal, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::Context;
use clap::Args;
use wirespeed_service::policy::rules_edit::{set_user, toml_key, Edit};

const AFTER_HELP: &str = "\
Examples:
  wirespeed passwd alice --file users.toml      # add alice, or change her password, in place
  wirespeed passwd alice                        # print alice = \"$argon2id$...\" to paste under [users]
  echo \"$PW\" | wirespeed passwd bob -f users.toml   # from a script: stdin's first line

With --file, the line goes into the file's [users] table (made if missing)
and every other line stays as written; the file must be a valid rules file
before and is checked again after, then replaced whole (a crash leaves the
old file or the new one, never half). A new file is made readable by its
owner only. Never `>> users.toml`: an appended line lands in the file's last
table. Then send SIGHUP to the server that reads it
(pkill -HUP -f 'wirespeed serve .*--auth users.toml').";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct PasswdArgs {
    /// Print `NAME = "HASH"`, a line for the rules file's [users] table,
    /// instead of the hash alone.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// Add NAME to this rules file, or replace NAME's password there, in
    /// place (nothing printed); made if missing.
    #[arg(long, short = 'f', value_name = "FILE", requires = "name")]
    pub file: Option<std::path::PathBuf>,
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
    if let (Some(file), Some(name)) = (&args.file, &args.name) {
        return write_into(file, name, &hash);
    }
    let mut out = std::io::stdout().lock();
    match args.name {
        Some(name) => writeln!(out, "{} = \"{hash}\"", toml_key(&name))?,
        None => writeln!(out, "{hash}")?,
    }
    Ok(())
}

/// `name`'s line set in `file`, replaced whole: a temporary file beside it
/// (its mode kept; 0600 for a new file), synced, then renamed over it.
fn write_into(file: &Path, name: &str, hash: &str) -> anyhow::Result<()> {
    // The file a symlink names is the one edited, not the link.
    let file = match std::fs::canonicalize(file) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => file.to_path_buf(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let (text, mode) = match std::fs::read_to_string(&file) {
        Ok(t) => {
            let mode = std::fs::metadata(&file)?.permissions().mode() & 0o7777;
            (t, mode)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), 0o600),
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let (edited, edit) = set_user(&text, name, hash)
        .with_context(|| format!("{}: nothing was changed", file.display()))?;
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let base = file
        .file_name()
        .map_or("rules".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{base}.wirespeed-passwd-{}", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(edited.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &file)?;
        // The rename itself, durable.
        std::fs::File::open(dir)?.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}: nothing was changed", file.display()));
    }
    let did = match edit {
        Edit::Added => format!("added {name} to"),
        Edit::Replaced => format!("changed {name}'s password in"),
    };
    eprintln!(
        "{did} {}; send SIGHUP to the server that reads it to load it",
        file.display()
    );
    Ok(())
}
