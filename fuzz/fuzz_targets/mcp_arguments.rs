//! Fuzzes MCP tool-argument parsing: arbitrary bytes as JSON, then
//! `ctxgraph_server::wire::parse_arguments` into every tool's request type. Checks that nothing
//! panics and that every refusal is the tool error `mcp.invalid_arguments`.
#![no_main]

use ctxgraph_server::ServiceError;
use ctxgraph_server::wire::{
    EvolutionRequest, IngestEventArgs, LinkRequest, OutcomeRequest, RecallEntityRequest,
    RecallRequest, RecordFactRequest, RollupRequest, SaveMemoryRequest, parse_arguments,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn refused<T>(r: Result<T, ServiceError>) {
    if let Err(e) = r {
        assert_eq!(e.code, "mcp.invalid_arguments", "{}", e.message);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = serde_json::from_slice::<Value>(data) else { return };
    refused(parse_arguments::<RecordFactRequest>(&raw));
    refused(parse_arguments::<RecallEntityRequest>(&raw));
    refused(parse_arguments::<RecallRequest>(&raw));
    refused(parse_arguments::<SaveMemoryRequest>(&raw));
    refused(parse_arguments::<OutcomeRequest>(&raw));
    refused(parse_arguments::<LinkRequest>(&raw));
    refused(parse_arguments::<EvolutionRequest>(&raw));
    refused(parse_arguments::<RollupRequest>(&raw));
    refused(parse_arguments::<IngestEventArgs>(&raw));
});
