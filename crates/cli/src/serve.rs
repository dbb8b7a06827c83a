//! `ctxgraph serve`, `ctxgraph mcp` and `ctxgraph principal add|list|remove`: the network
//! interfaces and the principals they authenticate.

use std::io::Write;
use std::time::Duration;

use anyhow::Context;
use ctxgraph::{EngineOptions, Principals, QuestionLimits};
use ctxgraph_server::{RequestLimits, Service};
use serde_json::json;

use crate::Outcome;
use crate::args::{Cli, McpArgs, PrincipalCommand, ServeArgs, UiArgs};
use crate::output::{print_json, table};

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Cap glibc's malloc arenas at two, unless `MALLOC_ARENA_MAX` says otherwise.
///
/// glibc gives threads their own arenas, up to eight per core, and memory freed in one is not
/// reused by another: requests running on tokio's blocking threads made the server's heap climb
/// under a steady mixed load (`bench soak`, 16 clients, 120 s: 191 to 473 MiB anonymous memory
/// with the default, 88 to 213 MiB with two arenas, at the same throughput). Measured when every
/// allocation went to glibc; now it holds SQLite's (page caches, statements), the binary's
/// Rust allocations going to jemalloc (`main.rs`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn cap_malloc_arenas() {
    use std::ffi::c_int;
    /// glibc's `M_ARENA_MAX` parameter of `mallopt`.
    const M_ARENA_MAX: c_int = -8;
    unsafe extern "C" {
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: `mallopt` only sets an allocator parameter; glibc allows it at any time, and
        // it runs before the runtime starts its threads.
        unsafe {
            mallopt(M_ARENA_MAX, 2);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn cap_malloc_arenas() {}

pub(crate) fn serve(cli: &Cli, args: &ServeArgs) -> anyhow::Result<Outcome> {
    cap_malloc_arenas();
    // Flags and environment first, then the configuration file, then the defaults.
    let file = crate::config::Config::load(args.config.as_deref())?.serve;
    let data = args.data.clone().or(file.data).unwrap_or_else(|| "ctxgraph-data".into());
    let addr = args.addr.clone().or(file.addr).unwrap_or_else(|| "127.0.0.1:8377".to_owned());
    let mut options = crate::with_embedder(cli, EngineOptions::default())?;
    options.memory.auto_link = !(args.no_auto_link || file.no_auto_link.unwrap_or(false));
    // On a scale-out store (`--db redis://HOST:PORT/NAME`) the data directory holds the
    // registry only, and tenant `t`'s store is `NAME-t`.
    let service = match crate::scale_out::store_url(cli)? {
        Some(url) => Service::open_scale_out(&data, &url, options),
        None => Service::open(&data, options),
    }
    .with_context(|| format!("opening the data directory {}", data.display()))?;
    upgrade_stores(&service)?;
    let limits = RequestLimits {
        question: QuestionLimits {
            max_chars: args
                .max_question_chars
                .or(file.max_question_chars)
                .unwrap_or(ctxgraph::MAX_QUESTION_CHARS),
            max_words: args
                .max_question_words
                .or(file.max_question_words)
                .unwrap_or(ctxgraph::MAX_QUESTION_WORDS),
        },
        deadline: args
            .request_timeout
            .or(file.request_timeout)
            .map_or(ctxgraph_server::DEFAULT_DEADLINE, Duration::from_secs),
    };
    service.set_limits(limits);
    let read_nice = args.read_nice.or(file.read_nice).unwrap_or(ctxgraph_server::DEFAULT_READ_NICE);
    service.set_read_nice(read_nice);
    let readers =
        args.readers.or(file.readers).map_or_else(ctxgraph_server::default_readers, usize::from);
    service.set_readers(readers);
    run(service, &addr, |addr| format!("listening on http://{addr}"))
}

/// Migrate the store files of `service` that are of an older format before serving, saying so
/// for each: otherwise the first request of each such tenant would wait for its migration.
fn upgrade_stores(service: &Service) -> anyhow::Result<()> {
    for (path, version) in service.stores_to_upgrade()? {
        crate::say_upgrading(&path, version);
        service.upgrade_store(&path).with_context(|| format!("upgrading {}", path.display()))?;
    }
    Ok(())
}

/// Serve `service` on `addr` until Ctrl-C or SIGTERM (`serve` and `ui`): print `first_line` of
/// the bound address, then serve; requests in flight get the deadline to finish.
fn run(
    service: Service,
    addr: &str,
    first_line: impl FnOnce(std::net::SocketAddr) -> String,
) -> anyhow::Result<Outcome> {
    let limits = service.limits();
    let runtime = runtime()?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("listening on {addr}"))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", first_line(addr))?;
            out.flush()?;
        }
        if !addr.ip().is_loopback() {
            eprintln!(
                "warning: serving plain HTTP on {addr}, reachable from other machines: API keys and \
                 data cross the network unencrypted; put a TLS-terminating proxy in front, or listen \
                 on 127.0.0.1"
            );
        }
        ctxgraph_server::serve(service, listener, ctxgraph_server::shutdown_signal())
            .await
            .context("serving")
    });
    // Engine work a cut request left running is not waited for past the deadline: its write,
    // never acknowledged, rolls back; acknowledged writes are committed already.
    runtime.shutdown_timeout(limits.deadline);
    served?;
    eprintln!("stopped: every acknowledged write is committed");
    Ok(Outcome::Done)
}

/// `ctxgraph ui`: the explorer on the store `--db`, on 127.0.0.1, with a key made for this run
/// that acts as the store's owner (or the `--as` principal) and is handed to the page in the
/// URL's fragment, which browsers never send to the server.
pub(crate) fn ui(cli: &Cli, args: &UiArgs) -> anyhow::Result<Outcome> {
    cap_malloc_arenas();
    if let Some(url) = crate::scale_out::store_url(cli)? {
        // The store the URL names, read as its owner (a URL has no registry beside it).
        let options = crate::with_embedder(cli, EngineOptions::default())?;
        let service = Service::single_scale_out(&url, options)
            .with_context(|| format!("opening the store {url}"))?;
        let key = ctxgraph::access::new_key()?;
        service.add_session_key(&key, ctxgraph::Principal::local());
        return run(service, &format!("127.0.0.1:{}", args.port), |addr| {
            format!("explorer at http://{addr}/#key={key}")
        });
    }
    if !cli.db.exists() {
        anyhow::bail!(
            "no store at {}: create one first (ctxgraph demo, ctxgraph ingest FILE) or give --db",
            cli.db.display()
        );
    }
    let options = crate::with_embedder(cli, EngineOptions::default())?;
    let who = crate::access::principal_for(cli, &cli.db)?;
    let service = Service::single_store(&cli.db, options)
        .with_context(|| format!("opening the store {}", cli.db.display()))?;
    upgrade_stores(&service)?;
    let key = ctxgraph::access::new_key()?;
    service.add_session_key(&key, who);
    run(service, &format!("127.0.0.1:{}", args.port), |addr| {
        format!("explorer at http://{addr}/#key={key}")
    })
}

pub(crate) fn mcp(cli: &Cli, args: &McpArgs) -> anyhow::Result<Outcome> {
    let options = crate::with_embedder(cli, EngineOptions::default())?;
    let url = crate::scale_out::store_url(cli)?;
    let (service, principal) = match (&args.data, &cli.as_principal, &args.store, &url) {
        (Some(data), Some(name), None, url) => {
            // On a scale-out store, tenant `t`'s store is `NAME-t`, as for `serve`.
            let service = match url {
                Some(url) => Service::open_scale_out(data, url, options),
                None => Service::open(data, options),
            }
            .with_context(|| format!("opening the data directory {}", data.display()))?;
            let who = service.principal(name).with_context(|| format!("acting as {name}"))?;
            (service, who)
        }
        (None, _, None, Some(url)) => {
            // The one store the URL names, as its owner (`--as` was refused before: a URL has
            // no registry beside it).
            let service = Service::single_scale_out(url, options)
                .with_context(|| format!("opening the store {url}"))?;
            (service, ctxgraph::Principal::local())
        }
        (None, _, store, _) => {
            let store = store.clone().unwrap_or_else(|| cli.db.clone());
            let service = Service::single_store(&store, options)
                .with_context(|| format!("opening the store {}", store.display()))?;
            // The store's owner, or with --as a principal of the registry beside it.
            (service, crate::access::principal_for(cli, &store)?)
        }
        _ => anyhow::bail!("give either --data DIR --as NAME, or --store FILE (default: --db)"),
    };
    upgrade_stores(&service)?;
    // Stdout carries the protocol; anything else goes to stderr.
    runtime()?.block_on(async {
        ctxgraph_server::serve_stdio(service, principal)
            .await
            .map_err(|e| anyhow::anyhow!("serving MCP over stdio: {e}"))
    })?;
    Ok(Outcome::Done)
}

pub(crate) fn principal(cli: &Cli, cmd: &PrincipalCommand) -> anyhow::Result<Outcome> {
    let path = |data: &std::path::Path| data.join("principals.json");
    match cmd {
        PrincipalCommand::Add { name, tenant, roles, data } => {
            std::fs::create_dir_all(data)
                .with_context(|| format!("creating the data directory {}", data.display()))?;
            let mut reg = Principals::open(&path(data))?;
            let key = reg.add(name, tenant, roles).with_context(|| format!("adding {name}"))?;
            if cli.json {
                print_json(&json!({"name": name, "tenant": tenant, "roles": roles, "key": key}))?;
            } else {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{key}")?;
                eprintln!("added {name} (tenant {tenant}); the key above is shown once");
            }
            Ok(Outcome::Done)
        }
        PrincipalCommand::List { data } => {
            let reg = Principals::open(&path(data))?;
            let list: Vec<_> = reg.list().collect();
            if cli.json {
                let v: Vec<_> = list
                    .iter()
                    .map(|p| json!({"name": p.name, "tenant": p.tenant, "roles": p.roles, "created_at": p.created_at}))
                    .collect();
                print_json(&serde_json::Value::Array(v))?;
            } else if list.is_empty() {
                writeln!(
                    std::io::stdout().lock(),
                    "no principals (`ctxgraph principal add NAME --tenant T --role R` adds one)"
                )?;
            } else {
                let mut t = table(&["name", "tenant", "roles", "created"]);
                for p in &list {
                    t.add_row(vec![
                        p.name.clone(),
                        p.tenant.clone(),
                        p.roles.join(", "),
                        crate::output::when(&p.created_at),
                    ]);
                }
                writeln!(std::io::stdout().lock(), "{t}")?;
            }
            Ok(if list.is_empty() { Outcome::NotFound } else { Outcome::Done })
        }
        PrincipalCommand::Remove { name, data } => {
            let mut reg = Principals::open(&path(data))?;
            if reg.remove(name)? {
                if cli.json {
                    print_json(&json!({"removed": name}))?;
                }
                Ok(Outcome::Done)
            } else {
                eprintln!("no principal {name}");
                Ok(Outcome::NotFound)
            }
        }
    }
}
