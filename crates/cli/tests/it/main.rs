//! Integration tests that drive the real `ctxgraph` binary in temporary directories.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test fails loudly on the first surprise"
)]

mod access;
mod admin;
mod bench;
mod commands;
mod conveniences;
mod derived;
mod entities;
mod eval;
mod explorer;
mod forget;
mod http;
mod import;
mod interop;
mod knowledge;
mod mcp;
mod mcp_tools;
mod memory;
mod names;
mod otlp;
mod people;
mod readme;
mod recall_interfaces;
mod receipt;
mod scaleout;
mod scope_interfaces;
mod semantic;
mod server;
mod slots;
mod tidy;
mod trust;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use tempfile::TempDir;

/// The first line a spawned process printed on its piped stdout (a server's address line),
/// untrimmed; the rest of stdout is dropped.
pub(crate) fn first_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    line
}

/// A temporary working directory with a store path.
pub(crate) struct Dir {
    pub(crate) tmp: TempDir,
}

impl Dir {
    pub(crate) fn new() -> Dir {
        Dir { tmp: TempDir::new().unwrap() }
    }

    pub(crate) fn db(&self) -> PathBuf {
        self.tmp.path().join("g.ctxg")
    }

    /// `ctxgraph --db <dir>/g.ctxg ARGS...` run in the directory.
    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::cargo_bin("ctxgraph").unwrap();
        c.current_dir(self.tmp.path())
            .env_remove("CTXGRAPH_DB")
            .arg("--db")
            .arg(self.db())
            .args(args);
        c
    }

    pub(crate) fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Every file of the store, for byte-for-byte comparisons.
    pub(crate) fn store_files(&self) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<_> = std::fs::read_dir(self.tmp.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("g.ctxg"))
            .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
            .collect();
        out.sort();
        out
    }
}

pub(crate) fn stdout(c: &mut Command) -> String {
    let out = c.output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

pub(crate) fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap()
}
