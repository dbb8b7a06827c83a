//! Fuzzes MCP tool-argument parsing: arbitrary bytes as JSON, then
//! `ctxgraph_server::wire::parse_arguments` into every tool's request type, and a parsed recall
//! request into the engine's query. Checks that nothing panics and that every refusal is a tool
//! error with a stable code: `mcp.invalid_arguments`, or `request.unknown_field` naming a field of
//! the arguments.
#![no_main]

use ctxgraph_server::ServiceError;
use ctxgraph_server::wire::{
    EvolutionRequest, IngestEventArgs, LinkRequest, OutcomeRequest, RecallEntityRequest,
    RecallRequest, RecordFactRequest, RollupRequest, SaveMemoryRequest, parse_arguments,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn refused<T>(raw: &Value, r: Result<T, ServiceError>) {
    if let Err(e) = r {
        match e.code.as_str() {
            "mcp.invalid_arguments" => {}
            "request.unknown_field" => {
                let named = e.violations.first().map(|v| v.path.trim_start_matches("$.").to_owned());
                let known = named.as_deref().is_some_and(|f| {
                    raw.as_object().is_some_and(|o| o.keys().any(|k| k.starts_with(f)))
                });
                assert!(known, "names no field of the arguments: {}", e.message);
            }
            other => panic!("unexpected code {other}: {}", e.message),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = serde_json::from_slice::<Value>(data) else { return };
    refused(&raw, parse_arguments::<RecordFactRequest>(&raw));
    refused(&raw, parse_arguments::<RecallEntityRequest>(&raw));
    refused(&raw, parse_arguments::<SaveMemoryRequest>(&raw));
    refused(&raw, parse_arguments::<OutcomeRequest>(&raw));
    refused(&raw, parse_arguments::<LinkRequest>(&raw));
    refused(&raw, parse_arguments::<EvolutionRequest>(&raw));
    refused(&raw, parse_arguments::<RollupRequest>(&raw));
    refused(&raw, parse_arguments::<IngestEventArgs>(&raw));
    match parse_arguments::<RecallRequest>(&raw) {
        // Any value of a parsed request becomes a query or a refusal with a request code.
        Ok(req) => {
            if let Err(e) = req.to_query() {
                assert!(e.code.starts_with("request."), "{}: {}", e.code, e.message);
            }
        }
        r @ Err(_) => refused(&raw, r),
    }
});
