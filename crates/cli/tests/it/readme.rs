//! The README's examples are tests: every shell block runs, in order, against the state the README
//! builds up, and the output the README shows is the output the binary prints.
//!
//! Conventions (stated in the README's own words at the top of its tour):
//! - ```` ```sh ```` blocks run as one bash script each (`set -euo pipefail`) in one working
//!   directory shared by the whole README, with the built `ctxgraph` first on `PATH`;
//! - ```` ```console ```` blocks hold `$ command` lines, each followed by the output it prints
//!   (stdout and stderr as a terminal shows them): a line `...` stands for any lines, `[..]`
//!   inside a line for any text, and a last line `[exit N]` for an exit code other than 0;
//! - ```` ```sh no-run ```` blocks are shown, not run (the set-up commands, which CI runs itself,
//!   and commands that need data that is not in the repository).
//!
//! The port `8377` is replaced by a free one, so `ctxgraph serve` runs here as the README shows it.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::workspace_root;

/// One fenced code block of the README.
#[derive(Debug)]
struct Block {
    /// The line of the opening fence, 1-based.
    line: usize,
    /// The fence's info string: `sh`, `console`, `sh no-run`, `json`, ...
    info: String,
    text: String,
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in markdown.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                open =
                    Some(Block { line: i + 1, info: info.trim().to_owned(), text: String::new() });
            }
            (Some(_), Some(rest)) if rest.trim().is_empty() => out.extend(open.take()),
            (Some(b), _) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "README.md: a code fence is not closed");
    out
}

/// Does `actual` match the `expected` pattern (`[..]` matches any text)?
fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || !actual[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Does `actual` match the `expected` lines (a line `...` matches any number of lines)?
fn lines_match(expected: &[&str], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((&"...", rest)) => (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..])),
        Some((first, rest)) => {
            actual.first().is_some_and(|a| line_matches(first, a))
                && lines_match(rest, &actual[1..])
        }
    }
}

/// Runs the README's shell, with its process group kept so a server it started can be stopped.
struct Shell<'a> {
    dir: &'a Path,
    path: String,
    groups: Vec<u32>,
}

impl Shell<'_> {
    /// Runs `script` with bash; returns its exit code and what it printed (stdout and stderr).
    fn run(&mut self, script: &str, label: &str) -> (i32, String) {
        let log = self.dir.join(".readme-output");
        let out = File::create(&log).unwrap();
        let mut child = Command::new("bash")
            .args(["-c", script])
            .current_dir(self.dir)
            .env("PATH", &self.path)
            .env_remove("CTXGRAPH_DB")
            .env_remove("CTXGRAPH_AS")
            .env_remove("CTXGRAPH_PRINCIPALS")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0)
            .spawn()
            .unwrap();
        self.groups.push(child.id());
        // Not a timed assertion: a README example that hangs must fail the test, not CI's clock.
        let deadline = Instant::now() + Duration::from_secs(300);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "README.md {label} did not finish in 300 s");
            std::thread::sleep(Duration::from_millis(20));
        };
        let printed = std::fs::read_to_string(&log).unwrap();
        (status.code().unwrap_or(-1), printed)
    }
}

impl Drop for Shell<'_> {
    fn drop(&mut self) {
        for group in &self.groups {
            let _ = Command::new("kill")
                .args(["-TERM", "--", &format!("-{group}")])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The `$ command` entries of a console block, each with its expected output and exit code.
fn console_entries(text: &str) -> Vec<(String, Vec<String>, i32)> {
    let mut out: Vec<(String, Vec<String>, i32)> = Vec::new();
    let mut continuing = false;
    for line in text.lines() {
        if continuing {
            let entry = out.last_mut().unwrap();
            entry.0.push('\n');
            entry.0.push_str(line);
            continuing = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            out.push((command.to_owned(), Vec::new(), 0));
            continuing = command.ends_with('\\');
        } else {
            let entry = out.last_mut().expect("a console block starts with `$ `");
            match line.strip_prefix("[exit ").and_then(|r| r.strip_suffix(']')) {
                Some(code) => entry.2 = code.parse().unwrap(),
                None => entry.1.push(line.trim_end().to_owned()),
            }
        }
    }
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn every_readme_example_runs_as_written() {
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    // The tour runs from a clone's root: the repository's example files are where it says.
    for shared in ["examples", "crates", "tests"] {
        std::os::unix::fs::symlink(root.join(shared), dir.path().join(shared)).unwrap();
    }
    let bin = assert_cmd::cargo::cargo_bin("ctxgraph");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let port = free_port().to_string();
    let mut shell = Shell { dir: dir.path(), path, groups: Vec::new() };
    let mut ran = 0;
    for block in blocks(&readme) {
        let text = block.text.replace("8377", &port);
        let label = format!("block at line {}", block.line);
        match block.info.as_str() {
            "sh" => {
                let (code, printed) = shell.run(&format!("set -euo pipefail\n{text}"), &label);
                assert_eq!(
                    code, 0,
                    "README.md {label} failed (exit {code}):\n{text}\n--- printed:\n{printed}"
                );
                ran += 1;
            }
            "console" => {
                for (command, expected, want) in console_entries(&text) {
                    let (code, printed) = shell.run(&command, &label);
                    let actual: Vec<&str> = printed.lines().map(str::trim_end).collect();
                    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
                    assert!(
                        code == want && lines_match(&expected, &actual),
                        "README.md {label}: `{command}` exited {code} (README: {want}) and printed\n{printed}\n--- README shows:\n{}",
                        expected.join("\n")
                    );
                    ran += 1;
                }
            }
            "sh no-run" => {}
            other => assert!(
                !["bash", "shell", "zsh", "console no-run"].contains(&other),
                "README.md block at line {}: shell blocks are `sh`, `console` or `sh no-run`, not `{other}`",
                block.line
            ),
        }
    }
    assert!(ran > 10, "only {ran} README examples ran: are the blocks marked `sh`?");
}

#[test]
fn output_patterns_match_as_documented() {
    assert!(line_matches(
        "1 item for [..] (intent why[..])",
        "1 item for \"x\" (intent why, classified)"
    ));
    assert!(!line_matches("a[..]c", "ab"));
    assert!(lines_match(&["a", "...", "d"], &["a", "b", "c", "d"]));
    assert!(lines_match(&["a", "..."], &["a"]));
    assert!(!lines_match(&["a", "d"], &["a", "b", "d"]));
    let entries = console_entries("$ ctxgraph get x \\\n  --json\nline\n[exit 1]\n$ b\n");
    assert_eq!(entries[0].0, "ctxgraph get x \\\n  --json");
    assert_eq!((entries[0].1.clone(), entries[0].2), (vec!["line".to_owned()], 1));
    assert_eq!(entries[1].0, "b");
}

/// The exit codes of `ctxgraph --help`, as (code, meaning) with white space collapsed.
fn help_exit_codes(help: &str) -> Vec<(String, String)> {
    let section = help.split("Exit codes:").nth(1).expect("`ctxgraph --help` lists the exit codes");
    let mut out: Vec<(String, String)> = Vec::new();
    // The rest of the heading's line is empty; the list ends at the first blank line after it.
    for line in section.lines().skip(1) {
        let line = line.trim();
        if line.is_empty() {
            break;
        }
        match line.split_once("  ") {
            Some((code, meaning)) if code.parse::<u8>().is_ok() => {
                out.push((code.to_owned(), meaning.trim().to_owned()));
            }
            _ => {
                let last = out.last_mut().expect("the list starts with a code");
                last.1.push(' ');
                last.1.push_str(line);
            }
        }
    }
    out
}

#[test]
fn the_readme_exit_codes_are_the_help_exit_codes() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let table = readme.split("## Exit codes").nth(1).expect("README.md has an Exit codes section");
    let documented: Vec<(String, String)> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split_once(" | "))
        .filter(|(code, _)| code.parse::<u8>().is_ok())
        .map(|(code, meaning)| (code.to_owned(), meaning.trim_end_matches(" |").to_owned()))
        .collect();
    let help = super::stdout(assert_cmd::Command::cargo_bin("ctxgraph").unwrap().arg("--help"));
    let printed = help_exit_codes(&help);
    assert_eq!(documented.len(), 3, "README.md: the exit-code table has codes 0, 1 and 2");
    assert_eq!(documented, printed, "README.md's exit codes differ from `ctxgraph --help`");
}
