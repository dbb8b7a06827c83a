//! `--db` names a store file. A scale-out store URL (`redis://HOST:PORT/NAME`) is recognised and
//! refused with what is true: the scale-out backend exists as a library (`docs/scale-out.md`)
//! and no command runs on it yet. Without this, such a URL was taken for a file path.

use anyhow::bail;
use ctxgraph_scaleout::StoreUrl;

use crate::args::Cli;

/// Refuse a `--db` that names a scale-out store, naming the command; a malformed URL is
/// refused with its field, value and rule.
pub(crate) fn refuse_scale_out(cli: &Cli) -> anyhow::Result<()> {
    let Some(text) = cli.db.to_str() else { return Ok(()) };
    if !text.starts_with("redis://") {
        return Ok(());
    }
    let url = StoreUrl::parse(text).map_err(|e| anyhow::anyhow!("--db: {e}"))?;
    bail!(
        "backend redis:// is not yet supported by command `{}`: {url} names a scale-out store, \
         which ctxgraph's commands cannot open yet (docs/scale-out.md says what exists); \
         pass a store file to --db (rule: db.backend_unsupported)",
        command_name()
    )
}

/// The subcommand the process was started with, as typed.
fn command_name() -> String {
    let command = <Cli as clap::CommandFactory>::command();
    let names: Vec<String> = command.get_subcommands().map(|c| c.get_name().to_owned()).collect();
    std::env::args().skip(1).find(|a| names.contains(a)).unwrap_or_else(|| "this command".into())
}
