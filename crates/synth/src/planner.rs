//! Session planner: turns scenario steps into timed, causally linked event steps.
//!
//! A session is planned in full when it opens (a few dozen steps at most) and then
//! emitted lazily, so memory grows with the number of open sessions only. Steps
//! refer to their parent by position inside the session; global event ids are
//! handed out at emission time so they increase in emission order.

use chrono::{DateTime, FixedOffset, TimeDelta};
use rand::Rng;
use rand::rngs::SmallRng;
use serde_json::{Map, Value};

use crate::text::Ctx;

/// Status values of the envelope.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Pending,
    Running,
    Completed,
    Failed,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Failed => "failed",
        }
    }
}

/// One entity reference of an event.
pub(crate) struct Entity {
    pub(crate) name: String,
    pub(crate) entity_type: &'static str,
    pub(crate) role: &'static str,
}

/// One planned event, before it gets its global id.
pub(crate) struct Step {
    pub(crate) at: DateTime<FixedOffset>,
    pub(crate) event_type: &'static str,
    pub(crate) agent: usize,
    pub(crate) parent: Option<usize>,
    /// Position of the failed attempt this step retries; becomes `payload.retry_of`.
    pub(crate) retry_of: Option<usize>,
    pub(crate) tool: Option<&'static str>,
    pub(crate) user: bool,
    pub(crate) status: Option<Status>,
    pub(crate) payload: Map<String, Value>,
    pub(crate) entities: Vec<Entity>,
}

impl Step {
    fn new(event_type: &'static str, agent: usize) -> Step {
        Step {
            at: DateTime::UNIX_EPOCH.fixed_offset(),
            event_type,
            agent,
            parent: None,
            retry_of: None,
            tool: None,
            user: false,
            status: None,
            payload: Map::new(),
            entities: Vec::new(),
        }
    }

    fn parent(mut self, parent: usize) -> Step {
        self.parent = Some(parent);
        self
    }

    fn user(mut self) -> Step {
        self.user = true;
        self
    }

    fn status(mut self, status: Status) -> Step {
        self.status = Some(status);
        self
    }

    fn payload(mut self, payload: Map<String, Value>) -> Step {
        self.payload = payload;
        self
    }

    fn entity(
        mut self,
        name: impl Into<String>,
        entity_type: &'static str,
        role: &'static str,
    ) -> Step {
        self.entities.push(Entity { name: name.into(), entity_type, role });
        self
    }
}

/// A tool call as a scenario describes it; [`Planner::tool`] adds failures and retries.
pub(crate) struct ToolCall {
    tool: &'static str,
    service: &'static str,
    args: Value,
    result: String,
    reads: Vec<String>,
    writes: Vec<String>,
    ms: (u64, u64),
}

impl ToolCall {
    pub(crate) fn new(tool: &'static str, service: &'static str, args: Value) -> ToolCall {
        ToolCall {
            tool,
            service,
            args,
            result: String::new(),
            reads: Vec::new(),
            writes: Vec::new(),
            ms: typical_duration(tool),
        }
    }

    pub(crate) fn reads(mut self, resource: impl Into<String>) -> ToolCall {
        self.reads.push(resource.into());
        self
    }

    pub(crate) fn writes(mut self, resource: impl Into<String>) -> ToolCall {
        self.writes.push(resource.into());
        self
    }

    pub(crate) fn result(mut self, result: impl Into<String>) -> ToolCall {
        self.result = result.into();
        self
    }
}

/// Builds a JSON object from key/value pairs, moving the values in rather than copying them.
fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(key, value)| (key.to_owned(), value)).collect()
}

/// Typical wall-clock range of a successful call, in milliseconds.
fn typical_duration(tool: &str) -> (u64, u64) {
    match tool {
        "read_file" => (50, 400),
        "write_file" => (60, 700),
        "sql_query" => (80, 6_000),
        "http_request" => (120, 3_000),
        "web_search" => (400, 4_000),
        "vector_lookup" => (60, 900),
        "send_email" => (200, 2_000),
        "run_tests" => (8_000, 36_000),
        _ => (100, 2_000),
    }
}

/// One failed attempt.
struct Failure {
    error: String,
    duration_ms: u64,
    retryable: bool,
    retry_after_ms: Option<u64>,
}

/// What came of a tool call after all its attempts.
pub(crate) struct Outcome {
    /// Position of the last attempt: later steps that use the result hang off it.
    pub(crate) last: usize,
    pub(crate) ok: bool,
}

/// Smallest and largest gap between two consecutive steps of a session.
const MIN_GAP_MS: u64 = 50;
const MAX_GAP_MS: u64 = 40_000;
/// Attempts per tool call, the first one included.
const MAX_ATTEMPTS: u32 = 3;

/// Builds the steps of one session.
pub(crate) struct Planner<'a> {
    pub(crate) rng: &'a mut SmallRng,
    pub(crate) ctx: Ctx,
    agents: &'a [String],
    steps: Vec<Step>,
    at: DateTime<FixedOffset>,
    failure_rate: f64,
    retry_failure_rate: f64,
    tool_calls: u32,
    failed_calls: u32,
    llm_calls: u32,
    tokens: u64,
    /// Errors the agent gave up on; they shape the answer and the session outcome.
    pub(crate) unresolved: Vec<String>,
    /// What the session is about in a few words (an order, a ticket, a file), for notes and mails.
    pub(crate) subject: String,
    /// The last answer given, so a follow-up can refer back to it.
    pub(crate) answer: String,
}

impl<'a> Planner<'a> {
    pub(crate) fn new(
        rng: &'a mut SmallRng,
        ctx: Ctx,
        agents: &'a [String],
        start: DateTime<FixedOffset>,
        failure_rate: f64,
    ) -> Planner<'a> {
        Planner {
            rng,
            ctx,
            agents,
            steps: Vec::with_capacity(32),
            at: start,
            failure_rate,
            // Retries fail less often than first attempts (transient faults clear up),
            // yet a failure_rate of 1 still means nothing ever succeeds.
            retry_failure_rate: failure_rate.sqrt(),
            tool_calls: 0,
            failed_calls: 0,
            llm_calls: 0,
            tokens: 0,
            unresolved: Vec::new(),
            subject: String::new(),
            answer: String::new(),
        }
    }

    pub(crate) fn into_steps(self) -> Vec<Step> {
        self.steps
    }

    pub(crate) fn agent_name(&self, agent: usize) -> &str {
        self.agents.get(agent).map_or("agent", String::as_str)
    }

    pub(crate) fn fill(&self, template: &str) -> String {
        self.ctx.fill(template)
    }

    pub(crate) fn pick<T: Copy>(&mut self, items: &[T], fallback: T) -> T {
        if items.is_empty() {
            return fallback;
        }
        items[self.rng.random_range(0..items.len())]
    }

    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p.clamp(0.0, 1.0))
    }

    pub(crate) fn int(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo { lo } else { self.rng.random_range(lo..=hi) }
    }

    fn push(&mut self, gap_ms: u64, mut step: Step) -> usize {
        let gap = gap_ms.clamp(MIN_GAP_MS, MAX_GAP_MS);
        // The session's first step opens it at the arrival time itself.
        if !self.steps.is_empty() {
            self.at += TimeDelta::milliseconds(gap as i64);
        }
        step.at = self.at;
        self.steps.push(step);
        self.steps.len() - 1
    }

    pub(crate) fn start(&mut self, agent: usize, scenario: &str) -> usize {
        let channel = self.pick(&crate::vocab::CHANNELS, "chat");
        let client = self.pick(&crate::vocab::CLIENTS, "cli");
        let step = Step::new("session.start", agent).user().payload(obj([
            ("scenario", scenario.into()),
            ("channel", channel.into()),
            ("client", client.into()),
        ]));
        self.push(0, step)
    }

    /// A user message; `concepts` are what the request is about.
    pub(crate) fn input(
        &mut self,
        parent: usize,
        agent: usize,
        text: String,
        concepts: &[&str],
    ) -> usize {
        let gap = self.int(50, 900);
        let words = text.split_whitespace().count();
        let mut step = Step::new("observation.input", agent)
            .parent(parent)
            .user()
            .payload(obj([("text", text.into()), ("words", words.into())]));
        for concept in concepts {
            step = step.entity(*concept, "concept", "object");
        }
        self.push(gap, step)
    }

    /// A follow-up message the user types after reading an answer.
    pub(crate) fn follow_up(&mut self, parent: usize, agent: usize, text: String) -> usize {
        let gap = self.int(4_000, 38_000);
        let words = text.split_whitespace().count();
        let step = Step::new("observation.input", agent).parent(parent).user().payload(obj([
            ("text", text.into()),
            ("words", words.into()),
            ("follow_up", true.into()),
        ]));
        self.push(gap, step)
    }

    pub(crate) fn invoke(&mut self, parent: usize, agent: usize, goal: String) -> usize {
        let gap = self.int(50, 300);
        let step = Step::new("agent.invoke", agent)
            .parent(parent)
            .status(Status::Running)
            .payload(obj([("goal", goal.into())]));
        self.push(gap, step)
    }

    /// Hands `task` to another agent, sometimes spinning up a fresh instance of it first.
    pub(crate) fn delegate(
        &mut self,
        parent: usize,
        from: usize,
        to: usize,
        task: String,
        create: bool,
    ) -> usize {
        let mut parent = parent;
        let from_name = self.agent_name(from).to_owned();
        if create {
            let gap = self.int(80, 600);
            let to_name = self.agent_name(to).to_owned();
            let model =
                if self.chance(0.3) { crate::vocab::CHAT_LARGE } else { crate::vocab::CHAT_SMALL };
            let step = Step::new("agent.create", from)
                .parent(parent)
                .status(Status::Completed)
                .payload(obj([
                    ("created_agent", to_name.clone().into()),
                    ("purpose", task.clone().into()),
                    ("model", model.into()),
                    ("ttl_s", 900.into()),
                ]))
                .entity(to_name, "agent", "result");
            parent = self.push(gap, step);
        }
        let gap = self.int(60, 500);
        let step = Step::new("agent.invoke", to)
            .parent(parent)
            .status(Status::Running)
            .payload(obj([("goal", task.into()), ("delegated_by", from_name.into())]));
        self.push(gap, step)
    }

    /// An LLM call; its latency follows the token counts.
    pub(crate) fn chat(
        &mut self,
        parent: usize,
        agent: usize,
        large: bool,
        prompt: String,
        response: String,
        plans: &[&str],
    ) -> usize {
        let model = if large { crate::vocab::CHAT_LARGE } else { crate::vocab::CHAT_SMALL };
        let input_tokens = self.int(350, 4_200) + prompt.len() as u64 / 4;
        // Output tokens include the model's hidden reasoning, not just the visible response.
        let reasoning = if large { self.int(80, 700) } else { self.int(20, 160) };
        let output_tokens = response.split_whitespace().count() as u64 * 4 / 3 + reasoning;
        let per_token = if large { self.int(18, 40) } else { self.int(8, 20) };
        let latency =
            (self.int(400, 1_500) + output_tokens * per_token + input_tokens / 10).min(MAX_GAP_MS);
        self.llm_calls += 1;
        self.tokens += input_tokens + output_tokens;
        let mut payload = obj([
            ("model", model.into()),
            ("prompt", prompt.into()),
            ("response", response.into()),
            ("input_tokens", input_tokens.into()),
            ("output_tokens", output_tokens.into()),
            ("latency_ms", latency.into()),
            ("temperature", if large { 0.2 } else { 0.0 }.into()),
        ]);
        if !plans.is_empty() {
            payload
                .insert("tool_calls".into(), plans.iter().map(|&tool| Value::from(tool)).collect());
        }
        let step =
            Step::new("llm.chat", agent).parent(parent).status(Status::Completed).payload(payload);
        self.push(latency, step)
    }

    pub(crate) fn embed(&mut self, parent: usize, agent: usize, input: String) -> usize {
        let tokens = input.split_whitespace().count() as u64 * 4 / 3 + 2;
        let gap = self.int(60, 450);
        self.llm_calls += 1;
        self.tokens += tokens;
        let step =
            Step::new("llm.embed", agent).parent(parent).status(Status::Completed).payload(obj([
                ("model", crate::vocab::EMBED_MODEL.into()),
                ("input", input.into()),
                ("dimensions", 768.into()),
                ("tokens", tokens.into()),
            ]));
        self.push(gap, step)
    }

    /// Picks an error that fits the tool and service.
    fn failure(&mut self, call: &ToolCall) -> Failure {
        let service = call.service;
        let kind = self.int(0, 9);
        let (error, duration_ms, retryable) = match (kind, call.tool) {
            (0..=2, _) => (format!("timeout after 30s calling {service}"), 30_000, true),
            (9, _) => (format!("permission denied on {service}"), self.int(50, 300), false),
            (3 | 4, "sql_query") => (
                format!("deadlock detected on {service}, transaction rolled back"),
                self.int(200, 2_500),
                true,
            ),
            (5 | 6, "sql_query") => {
                (format!("too many connections on {service} (limit 100)"), self.int(50, 300), true)
            }
            (_, "sql_query") => (
                format!("canceling statement due to statement timeout on {service}"),
                self.int(5_000, 15_000),
                true,
            ),
            (3..=5, "run_tests") => (
                format!("{service} has no free executor, job queue is full"),
                self.int(500, 4_000),
                true,
            ),
            (3..=5, "read_file" | "write_file") => {
                (format!("connection reset by {service}"), self.int(100, 2_000), true)
            }
            (3..=5, _) => (format!("HTTP 503 from {service}"), self.int(100, 1_500), true),
            _ => {
                let after = self.int(2, 8);
                let error = format!("rate limited by {service} (HTTP 429), retry after {after}s");
                // A well-behaved client honours Retry-After instead of its own backoff.
                return Failure {
                    error,
                    duration_ms: self.int(60, 400),
                    retryable: true,
                    retry_after_ms: Some(after * 1_000),
                };
            }
        };
        Failure { error, duration_ms, retryable, retry_after_ms: None }
    }

    /// Runs a tool call: it may fail, be retried with backoff, and finally succeed or be given up.
    pub(crate) fn tool(&mut self, parent: usize, agent: usize, mut call: ToolCall) -> Outcome {
        let mut parent = parent;
        let mut retry_of = None;
        let mut backoff = 0;
        let mut attempt = 1;
        let mut last_error = String::new();
        let mut retry_after = None;
        loop {
            self.tool_calls += 1;
            let fail_rate = if attempt == 1 { self.failure_rate } else { self.retry_failure_rate };
            let fails = self.chance(fail_rate);
            let mut step = Step::new("tool.execute", agent).parent(parent);
            step.tool = Some(call.tool);
            step.retry_of = retry_of;
            step = step.entity(call.service, "service", "object");
            for read in &call.reads {
                step = step.entity(read.clone(), "resource", "object");
            }
            let (payload, duration, retryable) = if fails {
                self.failed_calls += 1;
                let failure = self.failure(&call);
                last_error.clone_from(&failure.error);
                retry_after = failure.retry_after_ms;
                step = step.status(Status::Failed);
                let payload = obj([
                    ("arguments", call.args.clone()),
                    ("error", failure.error.into()),
                    ("retryable", failure.retryable.into()),
                    ("duration_ms", failure.duration_ms.into()),
                    ("attempt", attempt.into()),
                ]);
                (payload, failure.duration_ms, failure.retryable)
            } else {
                for write in &call.writes {
                    step = step.entity(write.clone(), "resource", "result");
                }
                let duration = self.int(call.ms.0, call.ms.1);
                step = step.status(Status::Completed);
                // Success ends the call, so its arguments and result can move into the event.
                let payload = obj([
                    ("arguments", std::mem::take(&mut call.args)),
                    ("result", std::mem::take(&mut call.result).into()),
                    ("duration_ms", duration.into()),
                    ("attempt", attempt.into()),
                ]);
                (payload, duration, false)
            };
            let mut step = step.payload(payload);
            if backoff > 0 {
                step.payload.insert("backoff_ms".into(), backoff.into());
            }
            // The event is recorded when the attempt finishes, after any backoff wait.
            let overhead = self.int(5, 60);
            let here = self.push(backoff + duration + overhead, step);
            if !fails {
                return Outcome { last: here, ok: true };
            }
            if !retryable || attempt >= MAX_ATTEMPTS {
                self.unresolved.push(last_error);
                return Outcome { last: here, ok: false };
            }
            backoff = match retry_after {
                Some(ms) => ms,
                None => 1_000 * (1 << (attempt - 1)) + self.int(0, 900),
            };
            attempt += 1;
            parent = here;
            retry_of = Some(here);
        }
    }

    /// A tool that waits for a human to approve it, then runs.
    pub(crate) fn approved_tool(
        &mut self,
        parent: usize,
        agent: usize,
        call: ToolCall,
        approver: &str,
    ) -> Outcome {
        let gap = self.int(80, 400);
        let mut step = Step::new("tool.execute", agent)
            .parent(parent)
            .user()
            .status(Status::Pending)
            .payload(obj([
                ("arguments", call.args.clone()),
                ("awaiting", format!("approval by {approver}").into()),
            ]))
            .entity(call.service, "service", "object");
        step.tool = Some(call.tool);
        let pending = self.push(gap, step);
        // A human takes a few seconds to click approve; short enough that even a
        // 30 s timeout afterwards keeps the gap within the 40 s bound.
        let wait = self.int(2_000, 9_000);
        self.at += TimeDelta::milliseconds(wait as i64);
        self.tool(pending, agent, call)
    }

    pub(crate) fn output(&mut self, parent: usize, agent: usize, text: String) -> usize {
        let gap = self.int(60, 700);
        let words = text.split_whitespace().count();
        self.answer.clone_from(&text);
        let step = Step::new("observation.output", agent)
            .parent(parent)
            .user()
            .status(Status::Completed)
            .payload(obj([
                ("text", text.into()),
                ("words", words.into()),
                ("format", "markdown".into()),
            ]));
        self.push(gap, step)
    }

    pub(crate) fn end(&mut self, start: usize, agent: usize) -> usize {
        let gap = self.int(100, 2_500);
        let opened = self.steps.get(start).map_or(self.at, |s| s.at);
        let duration = (self.at - opened).num_milliseconds() + gap as i64;
        let resolved = self.unresolved.is_empty();
        let step = Step::new("session.end", agent)
            .parent(start)
            .user()
            .status(if resolved { Status::Completed } else { Status::Failed })
            .payload(obj([
                ("outcome", if resolved { "resolved" } else { "partial" }.into()),
                ("duration_ms", duration.into()),
                ("tool_calls", self.tool_calls.into()),
                ("failed_tool_calls", self.failed_calls.into()),
                ("llm_calls", self.llm_calls.into()),
                ("total_tokens", self.tokens.into()),
            ]));
        self.push(gap, step)
    }
}
