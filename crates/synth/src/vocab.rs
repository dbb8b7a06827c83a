//! Vocabulary pools: agent, service, resource and concept names, models and error texts.
//!
//! Every name here is fictional and generic on purpose: the demo trace is read by
//! newcomers and committed to the repository, so it must not mention real products,
//! companies or people.

/// Base agent names; the first five are the ones a default trace uses.
pub(crate) const AGENTS: [&str; 8] = [
    "planner-agent",
    "research-agent",
    "coding-agent",
    "support-agent",
    "data-agent",
    "ops-agent",
    "qa-agent",
    "billing-agent",
];

/// Index of each agent role in [`AGENTS`]; scenarios ask for roles, not names.
pub(crate) const PLANNER: usize = 0;
pub(crate) const RESEARCH: usize = 1;
pub(crate) const CODING: usize = 2;
pub(crate) const SUPPORT: usize = 3;
pub(crate) const DATA: usize = 4;
pub(crate) const OPS: usize = 5;
pub(crate) const QA: usize = 6;
pub(crate) const BILLING: usize = 7;

/// Chat models, cheapest first; planners and long summaries use the large one.
pub(crate) const CHAT_SMALL: &str = "chat-model-small";
pub(crate) const CHAT_LARGE: &str = "chat-model-large";
pub(crate) const EMBED_MODEL: &str = "embed-model-small";

/// Channels a user request can come in through.
pub(crate) const CHANNELS: [&str; 4] = ["chat", "slack-bridge", "api", "cli"];

/// Client builds, so session.start payloads differ a little.
pub(crate) const CLIENTS: [&str; 4] =
    ["web-console 3.14.2", "cli 0.9.1", "ide-plugin 1.22.0", "api-sdk 2.4.0"];

/// Currencies for amounts; the same session keeps one.
pub(crate) const CURRENCIES: [&str; 3] = ["EUR", "USD", "GBP"];

/// Regions for reports and incidents.
pub(crate) const REGIONS: [&str; 4] = ["eu-west", "us-east", "us-west", "ap-south"];

/// Weekdays for "since Tuesday" style phrasing.
pub(crate) const WEEKDAYS: [&str; 5] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];

/// A failing test together with the source file that holds the bug and its test file.
pub(crate) struct CodeSite {
    pub(crate) test: &'static str,
    pub(crate) source: &'static str,
    pub(crate) test_file: &'static str,
    pub(crate) branch: &'static str,
    pub(crate) cause: &'static str,
    pub(crate) fix: &'static str,
}

/// Code sites for CI-fix sessions.
pub(crate) const CODE_SITES: [CodeSite; 5] = [
    CodeSite {
        test: "invoice::tests::rounding_half_even",
        source: "src/billing/invoice.rs",
        test_file: "tests/invoice_rounding.rs",
        branch: "fix/invoice-rounding",
        cause: "line totals are rounded before the tax is applied, so 10.05 becomes 10.04",
        fix: "round once, after tax, using half-even rounding",
    },
    CodeSite {
        test: "refund::tests::partial_refund_total",
        source: "src/billing/refund.rs",
        test_file: "tests/refund_partial.rs",
        branch: "feat/refund-reason",
        cause: "partial refunds subtract the shipping fee twice",
        fix: "subtract the fee only when the refund covers the full order",
    },
    CodeSite {
        test: "webhook::tests::retry_backoff_caps",
        source: "src/payments/webhook.rs",
        test_file: "tests/webhook_retry.rs",
        branch: "fix/webhook-retries",
        cause: "the backoff multiplier overflows after the 12th attempt and the cap is never applied",
        fix: "saturate the multiplier and clamp the delay to the 10 minute cap",
    },
    CodeSite {
        test: "query_planner::tests::prefers_index_scan",
        source: "src/search/query_planner.rs",
        test_file: "tests/query_planner.rs",
        branch: "perf/planner-costs",
        cause: "the cost model ignores the new composite index, so it picks a full scan",
        fix: "register the composite index in the planner's cost table",
    },
    CodeSite {
        test: "session::tests::expired_token_is_rejected",
        source: "src/auth/session.rs",
        test_file: "tests/auth_session.rs",
        branch: "fix/token-expiry",
        cause: "token expiry is compared in local time instead of UTC",
        fix: "compare expiry timestamps in UTC",
    },
];

/// Schema migrations for review sessions: file, table and what it does.
pub(crate) const MIGRATIONS: [(&str, &str, &str); 4] = [
    ("migrations/0042_add_refund_reason.sql", "refunds", "adds a nullable refund_reason column"),
    (
        "migrations/0043_index_orders_customer.sql",
        "orders",
        "adds an index on orders(customer_id, created_at)",
    ),
    (
        "migrations/0044_split_invoice_lines.sql",
        "invoices",
        "moves invoice lines into their own table",
    ),
    ("migrations/0045_drop_legacy_status.sql", "payments", "drops the unused legacy_status column"),
];

/// Knowledge-base documents a support agent looks up, with the topic they answer.
pub(crate) const KB_DOCS: [(&str, &str); 6] = [
    ("refund-policy.md", "Duplicate charges are refunded in full within 5 business days"),
    (
        "escalation-runbook.md",
        "Escalate to on-call when more than 20 customers report the same error",
    ),
    (
        "api-rate-limits.md",
        "Default limit is 600 requests per minute; raising it needs an account review",
    ),
    ("password-reset-guide.md", "Reset tokens expire after 15 minutes and are single use"),
    ("pricing-faq.md", "Annual plans are billed up front and prorated on upgrade"),
    ("data-retention.md", "Event data is kept for 13 months, then aggregated"),
];

/// Support ticket topics: request template, concepts, the KB doc index that answers it.
pub(crate) const TICKETS: [(&str, &str, &str, usize); 5] = [
    (
        "Ticket {ticket}: customer {customer} cannot log in after a password reset, the app says 'invalid token'.",
        "password reset",
        "authentication",
        3,
    ),
    (
        "Ticket {ticket}: customer {customer} asks how to raise their API rate limit, they get HTTP 429 during nightly syncs.",
        "rate limit",
        "api quota",
        2,
    ),
    (
        "Ticket {ticket}: {customer} was billed {amount} for an annual plan but expected monthly billing. Please explain.",
        "invoice dispute",
        "billing plan",
        4,
    ),
    (
        "Ticket {ticket}: {customer} wants to know how long we keep their event data and whether it can be deleted.",
        "data retention",
        "privacy request",
        5,
    ),
    (
        "Ticket {ticket}: several customers in {region} report failed checkouts since this morning.",
        "checkout failure",
        "incident",
        1,
    ),
];

/// Latency suspects for latency investigations: where, what changed, and the fix.
pub(crate) const LATENCY_CAUSES: [(&str, &str, &str); 4] = [
    (
        "config/search-index.yaml",
        "the query cache size was lowered from 2 GiB to 256 MiB in the last config rollout",
        "restore the cache size and add an alert on cache hit ratio",
    ),
    (
        "config/orders-db.yaml",
        "the connection pool was capped at 20 connections, requests queue for a connection",
        "raise the pool limit to 80 and watch pool wait time",
    ),
    (
        "src/search/query_planner.rs",
        "a planner change stopped using the composite index and falls back to full scans",
        "revert the planner change and add a regression test",
    ),
    (
        "config/object-store.yaml",
        "read-after-write consistency was switched on for all buckets",
        "limit strong consistency to the billing buckets",
    ),
];

/// Research topics: question, search queries, concept, notes file.
pub(crate) const RESEARCH_TOPICS: [(&str, &str, &str, &str); 4] = [
    (
        "What are good strategies for retrying payment webhooks without double-charging? Summarise with sources.",
        "idempotent webhook retries exponential backoff",
        "webhook retry",
        "notes/webhook-retries.md",
    ),
    (
        "Compare approaches for zero-downtime schema migrations on a large orders table.",
        "zero downtime schema migration large table",
        "schema migration",
        "notes/online-migrations.md",
    ),
    (
        "How do other teams detect latency regressions before a rollout reaches everyone?",
        "canary latency regression detection",
        "latency regression",
        "notes/canary-analysis.md",
    ),
    (
        "What is a sensible data retention policy for agent traces that contain customer messages?",
        "trace data retention customer messages policy",
        "data retention",
        "notes/trace-retention.md",
    ),
];

/// Hosts for fetched pages; the reserved example domains cannot point at anyone real.
pub(crate) const DOC_HOSTS: [&str; 3] =
    ["docs.example.com", "engineering.example.org", "wiki.example.net"];

/// Words that make a weekly report title vary.
pub(crate) const REPORT_KINDS: [(&str, &str, &str); 4] = [
    ("weekly revenue", "revenue", "orders"),
    ("refunds per day", "refund", "refunds"),
    ("failed payments", "payment failure", "payments"),
    ("new customers", "churn", "customers"),
];

/// Recipients are team aliases, never people.
pub(crate) const MAIL_ALIASES: [&str; 4] =
    ["finance-team@", "support-leads@", "billing-oncall@", "data-team@"];
