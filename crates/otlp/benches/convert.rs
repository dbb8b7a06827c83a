//! Criterion benches of OTLP traces in: decoding and converting one export request of 1,000
//! agent runs (5,000 spans: the fake agent fixture with a distinct trace id per run), as
//! protobuf and as OTLP/JSON. Throughput is in spans.

#![allow(clippy::unwrap_used, missing_docs, reason = "a bench fails loudly on the first surprise")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxgraph_ontology::Schema;
use ctxgraph_otlp::{Encoding, decode_request, records_from_request};
use prost::Message;

const RUNS: u32 = 1000;

/// The fixture's spans repeated `RUNS` times, each run under its own trace id.
fn request() -> ctxgraph_otlp::ExportTraceServiceRequest {
    let fixture = include_bytes!("../tests/fixtures/fake_agent.pb");
    let mut request = decode_request(fixture, Encoding::Protobuf).unwrap();
    let scope = &mut request.resource_spans[0].scope_spans[0];
    let run = std::mem::take(&mut scope.spans);
    for i in 0..RUNS {
        for span in &run {
            let mut span = span.clone();
            span.trace_id[..4].copy_from_slice(&i.to_be_bytes());
            for link in &mut span.links {
                link.trace_id[..4].copy_from_slice(&i.to_be_bytes());
            }
            scope.spans.push(span);
        }
    }
    request
}

fn bench(c: &mut Criterion) {
    let schema = Schema::core().unwrap();
    let request = request();
    let spans = request.resource_spans[0].scope_spans[0].spans.len();
    let bodies = [
        ("protobuf", Encoding::Protobuf, request.encode_to_vec()),
        ("json", Encoding::Json, serde_json::to_vec(&request).unwrap()),
    ];
    let mut group = c.benchmark_group("otlp");
    group.throughput(Throughput::Elements(spans as u64)).sample_size(10);
    for (name, encoding, body) in &bodies {
        assert_eq!(records_from_request(body, *encoding, &schema).unwrap().len(), spans);
        group.bench_function(format!("decode {name}"), |b| {
            b.iter(|| decode_request(body, *encoding).unwrap());
        });
        group.bench_function(format!("decode+convert {name}"), |b| {
            b.iter(|| records_from_request(body, *encoding, &schema).unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
