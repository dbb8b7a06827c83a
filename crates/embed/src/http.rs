//! An [`Embedder`] that calls an OpenAI-compatible embeddings endpoint (Ollama, vLLM, a hosted
//! API): `POST {base}/embeddings` with `{"model", "input": [texts]}`, answered by
//! `{"data": [{"index", "embedding": [floats]}]}`.
//!
//! Behind the `http` feature: the engine itself never opens a network connection; only a binary
//! that turns this feature on and is configured with a URL does.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{EmbedError, Embedder};

/// Texts sent per request: large enough to amortise a round trip, small enough for any server.
const REQUEST_BATCH: usize = 64;

/// A remote OpenAI-compatible embedding model.
pub struct HttpEmbedder {
    agent: ureq::Agent,
    url: String,
    model: String,
    model_id: String,
    api_key: Option<String>,
    dimension: usize,
}

impl std::fmt::Debug for HttpEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The API key is never printed.
        f.debug_struct("HttpEmbedder")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

impl HttpEmbedder {
    /// Connect to `base_url` (e.g. `http://127.0.0.1:11434/v1`) for `model`, with an optional
    /// bearer `api_key`. Embeds one probe text to learn the dimension, so a misconfigured endpoint
    /// fails here rather than in the middle of enrichment.
    pub fn new(base_url: &str, model: &str, api_key: Option<String>) -> Result<Self, EmbedError> {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(120)))
            .http_status_as_error(false)
            .build();
        let mut embedder = HttpEmbedder {
            agent: ureq::Agent::new_with_config(config),
            url: format!("{}/embeddings", base_url.trim_end_matches('/')),
            model: model.to_owned(),
            model_id: format!("openai-compatible:{model}"),
            api_key,
            dimension: 0,
        };
        let probe = embedder.request(&["dimension probe"])?;
        embedder.dimension = probe.first().map_or(0, Vec::len);
        if embedder.dimension == 0 {
            return Err(EmbedError::backend(format!(
                "{} returned an empty embedding",
                embedder.url
            )));
        }
        Ok(embedder)
    }

    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = json!({"model": self.model, "input": texts}).to_string();
        let mut request = self.agent.post(&self.url).header("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        let mut response = request
            .send(body.as_str())
            .map_err(|e| EmbedError::backend(format!("POST {}: {e}", self.url)))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| EmbedError::backend(format!("reading the answer of {}: {e}", self.url)))?;
        if status != 200 {
            let snippet: String = text.chars().take(200).collect();
            return Err(EmbedError::backend(format!(
                "{} answered HTTP {status}: {snippet}",
                self.url
            )));
        }
        parse_response(&text, texts.len())
            .map_err(|reason| EmbedError::backend(format!("{} answered {reason}", self.url)))
    }
}

/// The embeddings of an OpenAI-compatible answer, in input order.
fn parse_response(text: &str, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON ({e})"))?;
    let data = value.get("data").and_then(Value::as_array).ok_or("no `data` array")?;
    if data.len() != expected {
        return Err(format!("{} embeddings for {expected} texts", data.len()));
    }
    let mut out = vec![Vec::new(); expected];
    for (i, item) in data.iter().enumerate() {
        let index = item.get("index").and_then(Value::as_u64).map_or(i, |n| n as usize);
        let vector = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("item {i} has no `embedding` array"))?
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| format!("item {i} has a non-number in its embedding"))?;
        let slot =
            out.get_mut(index).ok_or_else(|| format!("item {i} has index {index} out of range"))?;
        *slot = vector;
    }
    Ok(out)
}

impl Embedder for HttpEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(REQUEST_BATCH) {
            let vectors = self.request(chunk)?;
            if let Some(bad) = vectors.iter().find(|v| v.len() != self.dimension) {
                return Err(EmbedError::backend(format!(
                    "{} returned a {}-dimensional embedding; the model's dimension is {}",
                    self.url,
                    bad.len(),
                    self.dimension
                )));
            }
            out.extend(vectors);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
