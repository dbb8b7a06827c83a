//! The HTTP embedder against a local OpenAI-compatible test server on a random port.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Serves `requests` answers on 127.0.0.1 (random port): each answer is `respond(body)`.
fn serve(
    requests: usize,
    respond: impl Fn(&Value) -> (u16, String) + Send + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(requests) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            let mut auth = String::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                // Header names are case-insensitive; keep the value only.
                if lower.starts_with("authorization:") {
                    auth = line["authorization:".len()..].trim().to_owned();
                }
                if line == "\r\n" || line.is_empty() {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let mut request: Value = serde_json::from_slice(&body).unwrap();
            request["authorization"] = Value::String(auth);
            counter.fetch_add(1, Ordering::SeqCst);
            let (status, answer) = respond(&request);
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
            stream.write_all(reply.as_bytes()).unwrap();
        }
    });
    (url, seen)
}

/// A deterministic fake model: [length, vowels, 1.0] per text, answered out of order.
fn fake(request: &Value) -> (u16, String) {
    let inputs = request["input"].as_array().unwrap();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| {
            let t = t.as_str().unwrap();
            let vowels = t.chars().filter(|c| "aeiou".contains(*c)).count();
            json!({"index": i, "embedding": [t.len(), vowels, 1.0]})
        })
        .collect();
    (200, json!({"object": "list", "data": data, "model": request["model"]}).to_string())
}

#[test]
fn embeds_in_batches_in_input_order_with_the_key() {
    let texts: Vec<String> = (0..70).map(|i| "a".repeat(i + 1)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // One probe, then 70 texts in two requests of at most 64.
    let (url, seen) = serve(3, |req| {
        assert_eq!(req["model"], "tiny");
        assert_eq!(req["authorization"], "Bearer sk-test");
        fake(req)
    });
    let e = HttpEmbedder::new(&url, "tiny", Some("sk-test".into())).unwrap();
    assert_eq!((e.dimension(), e.model_id()), (3, "openai-compatible:tiny"));
    let v = e.embed(&refs).unwrap();
    assert_eq!(v.len(), 70);
    assert_eq!(v[0], vec![1.0, 1.0, 1.0]);
    assert_eq!(v[69], vec![70.0, 70.0, 1.0]);
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    assert!(!format!("{e:?}").contains("sk-test"), "the key is never printed");
}

#[test]
fn server_errors_and_bad_answers_are_backend_errors() {
    let (url, _) = serve(1, |_| (503, "{\"error\": \"loading model\"}".into()));
    let err = HttpEmbedder::new(&url, "tiny", None).unwrap_err();
    assert_eq!(err.code(), "embed.backend");
    assert!(err.to_string().contains("HTTP 503"), "{err}");

    let (url, _) = serve(1, |_| (200, "{\"data\": [{\"embedding\": [\"x\"]}]}".into()));
    let err = HttpEmbedder::new(&url, "tiny", None).unwrap_err();
    assert!(err.to_string().contains("non-number"), "{err}");

    // Nothing listens on this port once the listener is dropped.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = HttpEmbedder::new(&format!("http://127.0.0.1:{port}/v1"), "tiny", None).unwrap_err();
    assert_eq!(err.code(), "embed.backend");
}

#[test]
fn answers_are_parsed_strictly() {
    assert_eq!(parse_response("{\"data\": []}", 1).unwrap_err(), "0 embeddings for 1 texts");
    assert!(parse_response("not json", 1).unwrap_err().starts_with("invalid JSON"));
    let swapped =
        "{\"data\": [{\"index\": 1, \"embedding\": [2]}, {\"index\": 0, \"embedding\": [1]}]}";
    assert_eq!(parse_response(swapped, 2).unwrap(), vec![vec![1.0], vec![2.0]]);
    assert!(
        parse_response("{\"data\": [{\"index\": 5, \"embedding\": [1]}]}", 1)
            .unwrap_err()
            .contains("out of range")
    );
}
