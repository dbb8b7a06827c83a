//! Scenario templates: the task stories a session can tell, from request to answer.
//!
//! Each scenario writes its steps through the [`Planner`], which adds timing,
//! failures and retries; the scenario only decides what the agents do and say,
//! and adapts the answer when a step could not be completed.

use serde_json::json;

use crate::planner::{Planner, ToolCall};
use crate::vocab::{
    AGENTS, BILLING, CODE_SITES, CODING, DATA, DOC_HOSTS, KB_DOCS, LATENCY_CAUSES, MAIL_ALIASES,
    MIGRATIONS, OPS, PLANNER, QA, REPORT_KINDS, RESEARCH, RESEARCH_TOPICS, SUPPORT, TICKETS,
};

/// The task a session is about.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Scenario {
    Refund,
    CiFix,
    DataReport,
    SupportTicket,
    Latency,
    Migration,
    Research,
}

/// Scenario mix: support and refunds are the bread and butter, research is rarer.
pub(crate) const MIX: [Scenario; 10] = [
    Scenario::Refund,
    Scenario::Refund,
    Scenario::SupportTicket,
    Scenario::SupportTicket,
    Scenario::CiFix,
    Scenario::CiFix,
    Scenario::DataReport,
    Scenario::Latency,
    Scenario::Migration,
    Scenario::Research,
];

/// Who plays which part in one session.
pub(crate) struct Cast {
    pub(crate) lead: usize,
    pub(crate) helper: Option<usize>,
    pub(crate) user: String,
}

impl Scenario {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scenario::Refund => "refund investigation",
            Scenario::CiFix => "failing CI fix",
            Scenario::DataReport => "data report",
            Scenario::SupportTicket => "customer support ticket",
            Scenario::Latency => "latency investigation",
            Scenario::Migration => "schema migration review",
            Scenario::Research => "research question",
        }
    }

    /// Preferred lead roles, best first; a trace with few agents falls back down the list.
    pub(crate) fn leads(self) -> &'static [usize] {
        match self {
            Scenario::Refund => &[SUPPORT, BILLING, RESEARCH],
            Scenario::CiFix => &[CODING, QA, RESEARCH],
            Scenario::DataReport => &[DATA, RESEARCH],
            Scenario::SupportTicket => &[SUPPORT, RESEARCH],
            Scenario::Latency => &[PLANNER, OPS, RESEARCH],
            Scenario::Migration => &[CODING, DATA],
            Scenario::Research => &[RESEARCH, PLANNER],
        }
    }

    /// Preferred helper roles for delegation.
    pub(crate) fn helpers(self) -> &'static [usize] {
        match self {
            Scenario::Refund => &[BILLING, DATA, RESEARCH],
            Scenario::CiFix => &[QA, RESEARCH, DATA],
            Scenario::DataReport => &[RESEARCH, PLANNER],
            Scenario::SupportTicket => &[OPS, RESEARCH, DATA],
            Scenario::Latency => &[OPS, RESEARCH, DATA],
            Scenario::Migration => &[DATA, QA, RESEARCH],
            Scenario::Research => &[DATA, PLANNER],
        }
    }

    /// Whether the session talks about a customer and order a returning user may bring up again.
    pub(crate) fn remembers_customer(self) -> bool {
        matches!(self, Scenario::Refund | Scenario::SupportTicket)
    }

    /// Plans a whole session: start, the scenario itself, maybe a follow-up turn, end.
    pub(crate) fn plan(self, p: &mut Planner<'_>, cast: &Cast) {
        let start = p.start(cast.lead, self.name());
        let output = match self {
            Scenario::Refund => refund(p, cast, start),
            Scenario::CiFix => ci_fix(p, cast, start),
            Scenario::DataReport => data_report(p, cast, start),
            Scenario::SupportTicket => support_ticket(p, cast, start),
            Scenario::Latency => latency(p, cast, start),
            Scenario::Migration => migration(p, cast, start),
            Scenario::Research => research(p, cast, start),
        };
        if p.chance(0.3) {
            follow_up(p, cast, output, self);
        }
        p.end(start, cast.lead);
    }
}

/// How an answer admits to steps the agent had to give up on.
fn caveat(p: &Planner<'_>) -> String {
    match p.unresolved.as_slice() {
        [] => String::new(),
        [one] => format!(
            "\n\nNote: one step could not be completed ({one}); the answer may be incomplete."
        ),
        [first, rest @ ..] => format!(
            "\n\nNote: {} steps could not be completed (first: {first}); please retry later or escalate per escalation-runbook.md.",
            rest.len() + 1
        ),
    }
}

fn system_prompt(p: &Planner<'_>, agent: usize, tools: &str, request: &str) -> String {
    format!(
        "[system] You are {}. Available tools: {tools}. Be concise and cite sources.\n[user] {request}",
        p.agent_name(agent)
    )
}

fn refund(p: &mut Planner<'_>, c: &Cast, start: usize) -> usize {
    let template = p.pick(
        &[
            "Customer {customer} says order {order} was charged twice ({amount}). Can you check whether a refund is due?",
            "Why has the refund for order {order} not arrived yet? {customer} asked for it {days} days ago.",
            "Please look into order {order}: {customer} disputes a charge of {amount} and wants their money back.",
            "{customer} opened a chargeback for {order} ({amount}). Can we refund instead before it escalates?",
        ],
        "",
    );
    let mut text = p.fill(template);
    if p.ctx.returning {
        text = format!("Following up on my earlier question about {}. {text}", p.ctx.order);
    }
    p.subject = format!("refund {}", p.ctx.order);
    let topic = p.pick(&["duplicate charge", "chargeback", "invoice dispute"], "refund");
    let input = p.input(start, c.lead, text.clone(), &["refund", topic]);
    let invoke = p.invoke(
        input,
        c.lead,
        p.fill("Find out whether order {order} is owed a refund and issue it if policy allows"),
    );
    let plan_text = p.fill(
        "Plan: 1) load order {order} from orders-db 2) list its captures on payments-gateway 3) check refund-policy.md 4) refund through billing-api if the charge is a duplicate.",
    );
    let prompt = system_prompt(p, c.lead, "sql_query, http_request, vector_lookup", &text);
    let plan = p.chat(
        invoke,
        c.lead,
        false,
        prompt,
        plan_text,
        &["sql_query", "http_request", "vector_lookup"],
    );
    let order = p.tool(
        plan,
        c.lead,
        ToolCall::new(
            "sql_query",
            "orders-db",
            json!({ "query": p.fill("SELECT id, customer_id, status, total FROM orders WHERE id = '{order}'") }),
        )
        .reads("orders")
        .result(p.fill("1 row: {order}, customer {customer}, status paid, total {amount}")),
    );
    let duplicate = p.chance(0.7);
    let captures = if duplicate {
        p.fill("200 OK: 2 captures of {amount}, 41 s apart, same card, second capture not linked to an invoice")
    } else {
        p.fill("200 OK: 1 capture of {amount}; refund {refund} already pending since {weekday}")
    };
    let charges = p.tool(
        plan,
        c.lead,
        ToolCall::new(
            "http_request",
            "payments-gateway",
            json!({ "method": "GET", "url": p.fill("https://payments-gateway.internal/v1/charges?order={order}") }),
        )
        .reads("payments")
        .result(captures),
    );
    let query = "refund policy for duplicate charges";
    let embed = p.embed(plan, c.lead, query.to_owned());
    p.tool(
        embed,
        c.lead,
        ToolCall::new("vector_lookup", "search-index", json!({ "index": "knowledge-base", "query": query, "top_k": 3 }))
            .reads("refund-policy.md")
            .result("top hit refund-policy.md (score 0.91): Duplicate charges are refunded in full within 5 business days"),
    );
    let mut others = String::new();
    let mut last = charges.last;
    if let Some(helper) = c.helper
        && duplicate
        && p.chance(0.5)
    {
        let task = p.fill("Check whether other orders were captured twice in the last {days} days");
        let create = p.chance(0.2);
        let sub = p.delegate(plan, c.lead, helper, task.clone(), create);
        let n = p.int(0, 6);
        let rows = p.tool(
            sub,
            helper,
            ToolCall::new(
                "sql_query",
                "analytics-warehouse",
                json!({ "query": p.fill("SELECT order_id, count(*) AS captures FROM payments WHERE captured_at > now() - interval '{days} days' GROUP BY order_id HAVING count(*) > 1") }),
            )
            .reads("payments")
            .result(format!("{} rows", n + 1)),
        );
        let finding = if n == 0 {
            "No other order was captured twice; this looks like a one-off retry on the gateway."
                .to_owned()
        } else if n == 1 {
            "One other order was captured twice in the same 10 minute window on payments-gateway."
                .to_owned()
        } else {
            format!(
                "{n} other orders were captured twice, all within the same 10 minute window on payments-gateway."
            )
        };
        let prompt = system_prompt(p, helper, "sql_query", &task);
        last = p.chat(rows.last, helper, false, prompt, finding.clone(), &[]);
        others = format!(" {finding}");
    }
    let refunded = if duplicate && order.ok && charges.ok {
        let refund = p.tool(
            last,
            c.lead,
            ToolCall::new(
                "http_request",
                "billing-api",
                json!({
                    "method": "POST",
                    "url": "https://billing-api.internal/v1/refunds",
                    "body": { "order": p.ctx.order, "amount": p.ctx.amount, "reason": "duplicate capture" },
                }),
            )
            .writes("refunds")
            .result(p.fill("201 Created: refund {refund} for {amount}, status pending")),
        );
        last = refund.last;
        refund.ok
    } else {
        false
    };
    let answer = if refunded {
        p.fill("Order {order} was captured twice by payments-gateway. refund-policy.md says duplicate charges are refunded in full, so I issued refund {refund} for {amount}; {customer} should see it within 5 business days.")
    } else if !duplicate {
        p.fill("Order {order} was charged once ({amount}) and refund {refund} is already pending since {weekday}; nothing else to do. Refunds usually land within 5 business days.")
    } else {
        p.fill("Order {order} looks like a duplicate capture of {amount}, but I could not issue the refund automatically. Please create it manually in billing-api.")
    };
    let prompt = system_prompt(p, c.lead, "none", "Summarise the findings for the user.");
    let summary = p.chat(last, c.lead, false, prompt, answer.clone(), &[]);
    let text = format!("{answer}{others}{}", caveat(p));
    p.output(summary, c.lead, text)
}

fn ci_fix(p: &mut Planner<'_>, c: &Cast, start: usize) -> usize {
    let site = &CODE_SITES[p.int(0, CODE_SITES.len() as u64 - 1) as usize];
    let template = p.pick(
        &[
            "CI is red on {branch}: {test} fails. Can you fix it?",
            "Nightly job {job} failed in {test}. Please find the cause and push a fix to {branch}.",
            "{test} has been failing since {weekday}, can you take a look? Branch {branch}.",
        ],
        "",
    );
    let text = p.fill(&template.replace("{branch}", site.branch).replace("{test}", site.test));
    p.subject = format!("{} on {}", site.test, site.branch);
    let topic = p.pick(&["failing test", "flaky test", "regression"], "failing test");
    let input = p.input(start, c.lead, text.clone(), &[topic, "ci pipeline"]);
    let invoke = p.invoke(input, c.lead, format!("Make {} pass on {}", site.test, site.branch));
    let prompt = system_prompt(p, c.lead, "http_request, read_file, write_file, run_tests", &text);
    let plan = p.chat(
        invoke,
        c.lead,
        false,
        prompt,
        format!(
            "Plan: fetch the job log from ci-runner, read {} and {}, fix, then run the tests.",
            site.source, site.test_file
        ),
        &["http_request", "read_file", "run_tests"],
    );
    let line = p.int(20, 180);
    let src_lines = p.int(80, 900);
    let test_lines = p.int(40, 300);
    p.tool(
        plan,
        c.lead,
        ToolCall::new(
            "http_request",
            "ci-runner",
            json!({ "method": "GET", "url": p.fill("https://ci-runner.internal/jobs/{job}/log") }),
        )
        .result(format!(
            "log tail: test {} ... FAILED (assertion failed at {}:{})",
            site.test, site.test_file, line
        )),
    );
    p.tool(
        plan,
        c.lead,
        ToolCall::new(
            "read_file",
            "source-repo",
            json!({ "path": site.source, "ref": site.branch }),
        )
        .reads(site.source)
        .result(format!("{src_lines} lines")),
    );
    let tests = p.tool(
        plan,
        c.lead,
        ToolCall::new(
            "read_file",
            "source-repo",
            json!({ "path": site.test_file, "ref": site.branch }),
        )
        .reads(site.test_file)
        .result(format!("{test_lines} lines")),
    );
    let prompt =
        format!("Test output and source of {} attached. Why does {} fail?", site.source, site.test);
    // The diagnosis reads all three results; it hangs off the one that finished last.
    let diagnosis = p.chat(
        tests.last,
        c.lead,
        true,
        prompt,
        format!("Cause: {}. Fix: {}.", site.cause, site.fix),
        &["write_file"],
    );
    let lines = p.int(2, 14);
    let removed = p.int(1, lines);
    let write = p.tool(
        diagnosis,
        c.lead,
        ToolCall::new(
            "write_file",
            "source-repo",
            json!({ "path": site.source, "branch": site.branch, "lines_changed": lines }),
        )
        .writes(site.source)
        .result(format!("wrote {} (+{lines} -{})", site.source, removed)),
    );
    let total = p.int(120, 480);
    let first_green = p.chance(0.7);
    let first = if first_green {
        format!("{total} passed, 0 failed")
    } else {
        format!("{} passed, 1 failed: {} (same assertion, another input)", total - 1, site.test)
    };
    let tester = c.helper.filter(|_| p.chance(0.35));
    let (run_parent, runner) = match tester {
        Some(helper) => {
            let create = p.chance(0.15);
            (
                p.delegate(
                    write.last,
                    c.lead,
                    helper,
                    format!("Run the test suite on {} and report failures", site.branch),
                    create,
                ),
                helper,
            )
        }
        None => (write.last, c.lead),
    };
    let mut run = p.tool(
        run_parent,
        runner,
        ToolCall::new(
            "run_tests",
            "ci-runner",
            json!({ "suite": "unit", "branch": site.branch, "filter": site.test_file }),
        )
        .reads(site.test_file)
        .result(first),
    );
    let mut green = run.ok && first_green;
    if run.ok && !first_green {
        let prompt = format!("Still failing: {}. Look at the change again.", site.test);
        let retry_plan = p.chat(
            run.last,
            c.lead,
            true,
            prompt,
            "The fix missed a second code path with the same logic; apply the same change there."
                .into(),
            &["write_file", "run_tests"],
        );
        p.tool(
            retry_plan,
            c.lead,
            ToolCall::new(
                "write_file",
                "source-repo",
                json!({ "path": site.source, "branch": site.branch, "lines_changed": 3 }),
            )
            .writes(site.source)
            .result(format!("wrote {} (+3 -2)", site.source)),
        );
        run = p.tool(
            retry_plan,
            runner,
            ToolCall::new(
                "run_tests",
                "ci-runner",
                json!({ "suite": "unit", "branch": site.branch }),
            )
            .reads(site.test_file)
            .result(format!("{total} passed, 0 failed")),
        );
        green = run.ok;
    }
    let answer = if green && write.ok {
        format!(
            "Fixed on {}: {}. The fix: {}. {} passes and the unit suite is green ({total} tests).",
            site.branch, site.cause, site.fix, site.test
        )
    } else {
        format!(
            "I found the cause ({}) and the fix ({}), but could not confirm it with a green test run on {}.",
            site.cause, site.fix, site.branch
        )
    };
    let text = format!("{answer}{}", caveat(p));
    p.output(run.last, c.lead, text)
}

fn data_report(p: &mut Planner<'_>, c: &Cast, start: usize) -> usize {
    let (kind, concept, table) = REPORT_KINDS[p.int(0, REPORT_KINDS.len() as u64 - 1) as usize];
    let alias = p.pick(&MAIL_ALIASES, "data-team@");
    let template = p.pick(
        &[
            "Can you put together the {kind} report for {week}, split by region?",
            "I need {kind} for {week} as a CSV, by day and region. {region} looked odd on the dashboard.",
            "Please refresh the {kind} numbers for {week} and send them to {alias}example.com.",
        ],
        "",
    );
    let text = p.fill(&template.replace("{kind}", kind).replace("{alias}", alias));
    p.subject = format!("{kind} {}", p.ctx.week);
    let input = p.input(start, c.lead, text.clone(), &[concept, "weekly report"]);
    let invoke = p.invoke(input, c.lead, format!("Produce the {kind} report for {}", p.ctx.week));
    let prompt = system_prompt(p, c.lead, "sql_query, write_file, send_email", &text);
    let plan = p.chat(
        invoke,
        c.lead,
        false,
        prompt,
        format!(
            "Plan: aggregate {table} by day and region in analytics-warehouse, compare with the previous week, write a CSV to object-store, email it."
        ),
        &["sql_query", "write_file", "send_email"],
    );
    let rows = 7 * p.int(3, 4);
    let total = if table == "orders" {
        let cents = p.int(2_000_000, 90_000_000);
        format!("{}.{:02} {}", cents / 100, cents % 100, p.ctx.currency)
    } else {
        format!("{} {table}", p.int(40, 4_000))
    };
    let current = p.tool(
        plan,
        c.lead,
        ToolCall::new(
            "sql_query",
            "analytics-warehouse",
            json!({ "query": format!("SELECT date_trunc('day', created_at) AS day, region, count(*), sum(total) FROM {table} WHERE created_at >= now() - interval '7 days' GROUP BY 1, 2 ORDER BY 1") }),
        )
        .reads(table)
        .result(format!("{rows} rows, total {total}")),
    );
    let change = p.int(1, 35);
    let up = p.chance(0.6);
    let direction = if up { "up" } else { "down" };
    let regions = p.int(3, 4);
    let previous = p.tool(
        current.last,
        c.lead,
        ToolCall::new(
            "sql_query",
            "analytics-warehouse",
            json!({ "query": format!("SELECT region, sum(total) FROM {table} WHERE created_at >= now() - interval '14 days' AND created_at < now() - interval '7 days' GROUP BY 1") }),
        )
        .reads(table)
        .result(format!("{regions} rows")),
    );
    let mut last = previous.last;
    let mut why = String::new();
    if let Some(helper) = c.helper
        && p.chance(0.35)
    {
        let task = format!(
            "Explain why {kind} in {} went {direction} {change}% week over week",
            p.ctx.region
        );
        let sub = p.delegate(previous.last, c.lead, helper, task.clone(), false);
        let prompt = system_prompt(p, helper, "vector_lookup", &task);
        let reason = if up {
            p.pick(
                &[
                    "The increase lines up with the pricing update announced in pricing-faq.md.",
                    "Most of the increase comes from a single large customer renewing early.",
                    "The increase follows the end-of-month billing run, as in previous months.",
                ],
                "",
            )
        } else {
            p.pick(
                &[
                    "A payments-gateway incident on two of the days explains about half of the drop.",
                    "The drop is mostly a public holiday in the region; the week before was unusually strong.",
                    "The drop follows a checkout latency regression that was fixed on Friday.",
                ],
                "",
            )
        };
        last = p.chat(sub, helper, false, prompt, reason.to_owned(), &[]);
        why = format!(" {reason}");
    }
    let file = format!("reports/{}-{}.csv", kind.replace(' ', "-"), p.ctx.week);
    let summary_prompt = format!("Summarise {kind} for {} in three sentences.", p.ctx.week);
    let headline = format!(
        "{kind} for {}: {direction} {change}% week over week (total {total}); {} moved the most.",
        p.ctx.week, p.ctx.region
    );
    let headline = capitalized(&headline);
    let summary = p.chat(last, c.lead, true, summary_prompt, format!("{headline}{why}"), &[]);
    let kib = p.int(2, 40);
    let written = p.tool(
        summary,
        c.lead,
        ToolCall::new(
            "write_file",
            "object-store",
            json!({ "path": file, "content_type": "text/csv", "rows": rows }),
        )
        .writes(file.clone())
        .result(format!("wrote {file} ({kib} KiB)")),
    );
    let mut last = written.last;
    if written.ok && (template.contains("{alias}") || p.chance(0.4)) {
        let message = p.int(100_000, 999_999);
        let mail = ToolCall::new(
            "send_email",
            "mail-relay",
            json!({ "to": format!("{alias}example.com"), "subject": format!("{kind} report {}", p.ctx.week), "attachments": [file] }),
        )
        .result(format!("queued, message id m-{message}"));
        last = p.tool(written.last, c.lead, mail).last;
    }
    let answer = if current.ok && written.ok {
        format!("The report is in {file}. {headline}{why}")
    } else {
        format!("I could not finish the {kind} report for {}.", p.ctx.week)
    };
    let text = format!("{answer}{}", caveat(p));
    p.output(last, c.lead, text)
}

/// The text with its first letter in upper case, for sentences that start with a pool word.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn support_ticket(p: &mut Planner<'_>, c: &Cast, start: usize) -> usize {
    let (template, concept, area, doc) = TICKETS[p.int(0, TICKETS.len() as u64 - 1) as usize];
    let (doc_name, doc_answer) = KB_DOCS[doc % KB_DOCS.len()];
    let mut text = p.fill(template);
    if let Some(previous) = &p.ctx.previous_ticket {
        text = format!("{text} (Same customer as {previous} last time.)");
    }
    p.subject = format!("ticket {}", p.ctx.ticket);
    let input = p.input(start, c.lead, text.clone(), &[concept, area]);
    let invoke = p.invoke(input, c.lead, p.fill("Answer ticket {ticket}"));
    let embed = p.embed(invoke, c.lead, format!("{concept} {area}"));
    let score = p.int(78, 96);
    let kb = p.tool(
        embed,
        c.lead,
        ToolCall::new(
            "vector_lookup",
            "search-index",
            json!({ "index": "knowledge-base", "query": format!("{concept} {area}"), "top_k": 5 }),
        )
        .reads(doc_name)
        .result(format!("top hit {doc_name} (score 0.{score}): {doc_answer}")),
    );
    let account = p.tool(
        invoke,
        c.lead,
        ToolCall::new("http_request", "auth-service", json!({ "method": "GET", "url": p.fill("https://auth-service.internal/v1/accounts/{customer}") }))
            .reads("accounts")
            .result(p.fill("200 OK: account {customer}, plan annual, region {region}, status active")),
    );
    let mut incident = String::new();
    if concept == "checkout failure"
        && let Some(helper) = c.helper
    {
        let task = p.fill("Check payments-gateway health in {region} for the last 6 hours");
        let create = p.chance(0.25);
        let sub = p.delegate(invoke, c.lead, helper, task.clone(), create);
        let errors = p.int(3, 28);
        let metrics = p.tool(
            sub,
            helper,
            ToolCall::new(
                "http_request",
                "metrics-store",
                json!({ "method": "GET", "url": p.fill("https://metrics-store.internal/api/v1/query?metric=checkout_errors&region={region}&range=6h") }),
            )
            .result(format!("error rate {errors}% since 07:40 UTC, HTTP 503 from payments-gateway")),
        );
        let prompt = system_prompt(p, helper, "http_request", &task);
        let finding = format!(
            "Checkout errors at {errors}% in {}; payments-gateway returns 503. This is an incident, not a customer issue.",
            p.ctx.region
        );
        p.chat(metrics.last, helper, false, prompt, finding.clone(), &[]);
        incident = format!(" {finding}");
    }
    // Without the knowledge-base hit the agent can only acknowledge the ticket.
    let (source, reply) = if kb.ok {
        (
            doc_name,
            format!(
                "Hi, thanks for reaching out. {doc_answer}. Let us know if anything is still unclear."
            ),
        )
    } else {
        (
            "a holding reply",
            "Hi, thanks for reaching out. We are looking into this and will get back to you within one business day.".to_owned(),
        )
    };
    let prompt = format!("Draft a reply for ticket {}. Context: {reply}", p.ctx.ticket);
    let draft = p.chat(account.last, c.lead, false, prompt, reply.clone(), &["http_request"]);
    let update = p.tool(
        draft,
        c.lead,
        ToolCall::new(
            "http_request",
            "ticket-service",
            json!({ "method": "PATCH", "url": p.fill("https://ticket-service.internal/v1/tickets/{ticket}"), "body": { "status": "waiting_on_customer", "reply": reply } }),
        )
        .writes(p.ctx.ticket.clone())
        .result(p.fill("200 OK: {ticket} updated, status waiting_on_customer")),
    );
    let answer = if update.ok {
        format!(
            "Replied on {} using {source} and set it to waiting on customer.{incident}",
            p.ctx.ticket
        )
    } else {
        format!(
            "Drafted a reply for {} based on {source}, but could not post it to ticket-service.{incident}",
            p.ctx.ticket
        )
    };
    let text = format!("{answer}{}", caveat(p));
    p.output(update.last, c.lead, text)
}

fn latency(p: &mut Planner<'_>, c: &Cast, start: usize) -> usize {
    let (file, cause, fix) = LATENCY_CAUSES[p.int(0, LATENCY_CAUSES.len() as u64 - 1) as usize];
    let service = if file.contains("orders-db") { "orders-db" } else { "search-index" };
    let template = p.pick(
        &[
            "p95 latency of {service} went from {p95_before} ms to {p95_after} ms since {weekday}. What changed?",
            "{area} feels slow in {region}: p95 on {service} is {p95_after} ms instead of the usual {p95_before} ms. Please investigate.",
            "We have a latency regression on {service} ({p95_before} -> {p95_after} ms p95). Can you find the cause before the release?",
        ],
        "",
    );
    let area = if service == "orders-db" { "Checkout" } else { "Search" };
    let text = p.fill(&template.replace("{service}", service).replace("{area}", area));
    p.subject = format!("{service} latency regression");
    let input = p.input(start, c.lead, text.clone(), &["latency regression", "p95 latency"]);
    let invoke =
        p.invoke(input, c.lead, format!("Find the cause of the {service} latency regression"));
    let prompt = system_prompt(p, c.lead, "delegate, sql_query, read_file", &text);
    let plan = p.chat(
        invoke,
        c.lead,
        true,
        prompt,
        "Plan: have a helper pull the latency metrics, check the deploy and config history, then read the changed file.".into(),
        &["http_request", "sql_query", "read_file"],
    );
    let mut when = format!("{} afternoon", p.ctx.weekday);
    let metrics_parent = match c.helper {
        Some(helper) => {
            let create = p.chance(0.5);
            p.delegate(
                plan,
                c.lead,
                helper,
                format!("Pull p95 latency and error rate for {service} over 7 days"),
                create,
            )
        }
        None => plan,
    };
    let metrics_agent = c.helper.unwrap_or(c.lead);
    let hour = p.int(9, 17);
    let minute = p.int(0, 59);
    let metrics = p.tool(
        metrics_parent,
        metrics_agent,
        ToolCall::new(
            "http_request",
            "metrics-store",
            json!({ "method": "GET", "url": format!("https://metrics-store.internal/api/v1/query?metric=p95_latency&service={service}&range=7d") }),
        )
        .result(format!("p95 stepped up at {} {hour:02}:{minute:02} UTC; error rate flat; traffic flat", p.ctx.weekday)),
    );
    if metrics.ok {
        when = format!("{} {hour:02}:{minute:02} UTC", p.ctx.weekday);
    }
    let mut last = metrics.last;
    if let Some(helper) = c.helper {
        let prompt = system_prompt(p, helper, "http_request", "Summarise the latency metrics");
        last = p.chat(metrics.last, helper, false, prompt, format!("The step happened at {when}, without a traffic change, so it is a change on our side."), &[]);
    }
    let change = p.int(4_000, 9_999);
    let file_lines = p.int(30, 400);
    let deploys = p.tool(
        last,
        c.lead,
        ToolCall::new(
            "sql_query",
            "analytics-warehouse",
            json!({ "query": format!("SELECT deployed_at, service, change_id, summary FROM deploys WHERE service = '{service}' ORDER BY deployed_at DESC LIMIT 10") }),
        )
        .reads("deploys")
        .result(format!("10 rows; closest to the step: change {change} touching {file}")),
    );
    let read = p.tool(
        deploys.last,
        c.lead,
        ToolCall::new("read_file", "source-repo", json!({ "path": file, "ref": "main" }))
            .reads(file)
            .result(format!("{file_lines} lines")),
    );
    let conclusion = format!("Root cause: {cause}. Suggested fix: {fix}.");
    let prompt = format!(
        "Metrics: step at {when}. Deploy history and {file} attached. What is the most likely cause?"
    );
    let concl = p.chat(read.last, c.lead, true, prompt, conclusion.clone(), &[]);
    let answer = if read.ok && deploys.ok {
        format!(
            "The {service} p95 went from {} to {} ms at {when}. {conclusion}",
            p.ctx.p95_before, p.ctx.p95_after
        )
    } else {
        format!(
            "The regression started at {when}, but I could not check the deploy history, so the cause is not confirmed. My best guess: {cause}."
        )
    };
    let text = format!("{answer}{}", caveat(p));
    p.output(concl, c.lead, text)
}

fn migration(p: &mut Planner<'_>, c: &Cast, start: usize) -> usize {
    let (file, table, what) = MIGRATIONS[p.int(0, MIGRATIONS.len() as u64 - 1) as usize];
    let template = p.pick(
        &[
            "Please review {file} before we run it on orders-db tonight.",
            "Is {file} safe to run on orders-db during business hours?",
            "Can you check {file}? I am worried about locking the {table} table.",
        ],
        "",
    );
    let text = template.replace("{file}", file).replace("{table}", table);
    p.subject = format!("review {file}");
    let input = p.input(start, c.lead, text.clone(), &["schema migration", "table lock"]);
    let invoke = p.invoke(input, c.lead, format!("Review {file}"));
    let file_lines = p.int(6, 60);
    let read = p.tool(
        invoke,
        c.lead,
        ToolCall::new("read_file", "source-repo", json!({ "path": file, "ref": "main" }))
            .reads(file)
            .result(format!("{file_lines} lines: {what}")),
    );
    let rows = p.int(2, 90);
    let count = p.tool(
        read.last,
        c.lead,
        ToolCall::new("sql_query", "orders-db", json!({ "query": format!("SELECT reltuples::bigint FROM pg_class WHERE relname = '{table}'") }))
            .reads(table)
            .result(format!("about {rows} million rows")),
    );
    let risky = what.starts_with("moves") || (what.starts_with("adds an index") && rows > 40);
    let mut last = count.last;
    if let Some(helper) = c.helper
        && p.chance(0.4)
    {
        let create = p.chance(0.2);
        let sub = p.delegate(
            count.last,
            c.lead,
            helper,
            format!("Dry-run {file} against a copy of {table}"),
            create,
        );
        let lock = if risky { p.int(4_000, 90_000) } else { p.int(5, 300) };
        last = p
            .tool(
                sub,
                helper,
                ToolCall::new(
                    "run_tests",
                    "ci-runner",
                    json!({ "suite": "migrations", "target": file }),
                )
                .reads(file)
                .result(format!(
                    "dry run passed on a copy of {table}, longest lock held {lock} ms"
                )),
            )
            .last;
    }
    let verdict = if risky {
        format!(
            "Not safe during business hours: it {what} on a table with about {rows} million rows and holds a lock for too long. Run it in the maintenance window or split it into batches."
        )
    } else {
        format!(
            "Safe to run: it {what}; on about {rows} million rows the lock is held only briefly."
        )
    };
    let prompt =
        format!("Migration {file} ({what}), table {table} with {rows}M rows. Is it safe online?");
    let review = p.chat(last, c.lead, true, prompt, verdict.clone(), &[]);
    let text = format!("{verdict}{}", caveat(p));
    p.output(review, c.lead, text)
}

fn research(p: &mut Planner<'_>, c: &Cast, start: usize) -> usize {
    let (question, query, concept, notes) =
        RESEARCH_TOPICS[p.int(0, RESEARCH_TOPICS.len() as u64 - 1) as usize];
    p.subject = concept.to_owned();
    let input = p.input(start, c.lead, question.to_owned(), &[concept]);
    let invoke = p.invoke(input, c.lead, format!("Research: {question}"));
    let prompt = system_prompt(p, c.lead, "web_search, http_request, write_file", question);
    let plan = p.chat(
        invoke,
        c.lead,
        false,
        prompt,
        format!("Search for '{query}', read the two best sources, write notes to {notes}."),
        &["web_search", "http_request"],
    );
    let results = p.int(6, 10);
    let search = p.tool(
        plan,
        c.lead,
        ToolCall::new("web_search", "web-search-api", json!({ "query": query, "max_results": 10 }))
            .result(format!("{results} results")),
    );
    let mut sources = Vec::new();
    for _ in 0..2 {
        let host = p.pick(&DOC_HOSTS, "docs.example.com");
        let url =
            format!("https://{host}/articles/{}-{}", concept.replace(' ', "-"), p.int(10, 99));
        let kib = p.int(8, 120);
        let fetched = p.tool(
            search.last,
            c.lead,
            ToolCall::new("http_request", "egress-proxy", json!({ "method": "GET", "url": url }))
                .reads(url.clone())
                .result(format!("200 OK, {kib} KiB of text")),
        );
        if fetched.ok {
            sources.push(url);
        }
    }
    let embed = p.embed(search.last, c.lead, query.to_owned());
    let related = p.int(0, 4);
    let notes_hit = p.tool(
        embed,
        c.lead,
        ToolCall::new(
            "vector_lookup",
            "search-index",
            json!({ "index": "team-notes", "query": query, "top_k": 5 }),
        )
        .result(format!("{related} related notes")),
    );
    let summary = match concept {
        "webhook retry" => {
            "Use idempotency keys on every webhook, retry with exponential backoff and jitter, cap the delay, and dead-letter after a day."
        }
        "schema migration" => {
            "Expand and contract: add new columns nullable, backfill in batches, switch reads, then drop the old column in a later release."
        }
        "latency regression" => {
            "Route a small share of traffic to the canary, compare p95 and error rate against the baseline, and stop the rollout automatically on a significant gap."
        }
        _ => {
            "Keep raw traces for a short window, redact customer messages before long-term storage, and keep only aggregates after that."
        }
    };
    let prompt = format!("Summarise these sources on '{query}' for an engineer.");
    let sum = p.chat(notes_hit.last, c.lead, true, prompt, summary.to_owned(), &["write_file"]);
    let note = p.tool(
        sum,
        c.lead,
        ToolCall::new("write_file", "object-store", json!({ "path": notes, "sources": sources }))
            .writes(notes)
            .result(format!("wrote {notes}")),
    );
    let saved =
        if note.ok { format!(" Notes with sources are in {notes}.") } else { String::new() };
    let text = format!("{summary}{saved}{}", caveat(p));
    p.output(note.last, c.lead, text)
}

/// A second turn after the answer: the user asks for one more small thing.
fn follow_up(p: &mut Planner<'_>, c: &Cast, output: usize, scenario: Scenario) -> usize {
    // "How do we prevent this?" only makes sense after something went wrong.
    let kind = match (p.int(0, 2), scenario) {
        (2, Scenario::Research | Scenario::DataReport | Scenario::Migration) => 1,
        (kind, _) => kind,
    };
    let subject = if p.subject.is_empty() { scenario.name().to_owned() } else { p.subject.clone() };
    match kind {
        0 => {
            let alias = p.pick(&MAIL_ALIASES, "support-leads@");
            let to = format!("{alias}example.com");
            let input = p.follow_up(
                output,
                c.lead,
                format!("Thanks. Can you email a short summary to {to}?"),
            );
            let invoke = p.invoke(input, c.lead, format!("Email a summary of {subject} to {to}"));
            let prompt =
                format!("Write a three-line summary for {to} of this answer: {}", p.answer);
            let gist =
                p.answer.split(". ").next().unwrap_or_default().trim_end_matches('.').to_owned();
            let body =
                format!("Hi all, quick update on {subject}: {gist}. Details are in session notes.");
            let draft = p.chat(invoke, c.lead, false, prompt, body.clone(), &["send_email"]);
            let message = p.int(100_000, 999_999);
            let mail = ToolCall::new(
                "send_email",
                "mail-relay",
                json!({ "to": to, "subject": format!("Update: {subject}"), "body": body }),
            )
            .result(format!("queued, message id m-{message}"));
            let sent = p.approved_tool(draft, c.lead, mail, &c.user);
            let text = if sent.ok {
                format!("Sent the summary to {to}.")
            } else {
                format!("I could not send the email to {to}.{}", caveat(p))
            };
            p.output(sent.last, c.lead, text)
        }
        1 => {
            let path = format!("notes/{}.md", slug(&subject));
            let input = p.follow_up(
                output,
                c.lead,
                "Please save this as a note so the team can find it later.".into(),
            );
            let invoke = p.invoke(input, c.lead, format!("Save the answer to {path}"));
            let saved = p.tool(
                invoke,
                c.lead,
                ToolCall::new(
                    "write_file",
                    "object-store",
                    json!({ "path": path, "content_type": "text/markdown", "title": subject }),
                )
                .writes(path.clone())
                .result(format!("wrote {path}")),
            );
            let text = if saved.ok {
                format!("Saved to {path}.")
            } else {
                format!("Saving failed.{}", caveat(p))
            };
            p.output(saved.last, c.lead, text)
        }
        _ => {
            let input = p.follow_up(
                output,
                c.lead,
                "What should we do so this does not happen again?".into(),
            );
            let invoke =
                p.invoke(input, c.lead, format!("Suggest how to prevent a repeat of {subject}"));
            let advice = p.pick(
                &[
                    "Add an alert for this case, write a regression test, and link this session from the runbook.",
                    "Add a dashboard panel for it and a check in CI, and put a short entry in escalation-runbook.md.",
                    "Make the failing step idempotent so it can be retried safely, and alert when retries exceed three per hour.",
                ],
                "",
            );
            let prompt = format!("The user asks how to prevent a repeat of {subject}.");
            let chat = p.chat(invoke, c.lead, true, prompt, advice.to_owned(), &[]);
            p.output(chat, c.lead, advice.to_owned())
        }
    }
}

/// A file-name friendly form: lower case, runs of other characters become one dash.
fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// Chooses an agent for a role list: the first role the trace has, then one of its instances.
pub(crate) fn cast_role(
    p_roles: &[usize],
    agents: usize,
    pick: impl FnOnce(usize) -> usize,
) -> Option<usize> {
    let role = p_roles.iter().copied().find(|&r| r < agents)?;
    // Instances of a role sit every AGENTS.len() slots: research-agent, research-agent-2, ...
    let instances = (agents - role).div_ceil(AGENTS.len());
    Some(role + AGENTS.len() * pick(instances))
}
