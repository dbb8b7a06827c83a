//! Writes a synthetic trace as JSON Lines to stdout: `cargo run -p ctxgraph-synth --example demo -- [events] [seed]`.

use std::io::{self, BufWriter, Write};

fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut config = ctxgraph_synth::TraceConfig::default();
    if let Some(events) = args.next().and_then(|a| a.parse().ok()) {
        config.events = events;
    }
    if let Some(seed) = args.next().and_then(|a| a.parse().ok()) {
        config.seed = seed;
    }
    let mut out = BufWriter::new(io::stdout().lock());
    for event in ctxgraph_synth::trace(&config) {
        writeln!(out, "{event}")?;
    }
    out.flush()
}
