//! Per-session slot values (order ids, amounts, ...) and `{slot}` template filling.
//!
//! One session talks about one order, one customer, one ticket: the same values
//! show up in the request, the tool arguments and the answer, the way they would
//! in a real run, so a search for an order id finds the whole story.

use chrono::{DateTime, Datelike, FixedOffset};
use rand::Rng;
use rand::rngs::SmallRng;

use crate::vocab::{CURRENCIES, REGIONS, WEEKDAYS};

/// Identifiers a returning user brings into a later session.
#[derive(Clone)]
pub(crate) struct Carry {
    pub(crate) order: String,
    pub(crate) customer: String,
    pub(crate) amount: String,
    pub(crate) currency: &'static str,
    pub(crate) ticket: String,
}

/// The slot values of one session.
pub(crate) struct Ctx {
    pub(crate) order: String,
    pub(crate) customer: String,
    pub(crate) amount: String,
    pub(crate) currency: &'static str,
    pub(crate) refund: String,
    pub(crate) ticket: String,
    pub(crate) job: String,
    pub(crate) week: String,
    pub(crate) days: String,
    pub(crate) region: &'static str,
    pub(crate) weekday: &'static str,
    pub(crate) p95_before: String,
    pub(crate) p95_after: String,
    /// The ticket of the user's previous session, when they come back about the same customer.
    pub(crate) previous_ticket: Option<String>,
    /// Whether order and customer were carried over from the user's previous session.
    pub(crate) returning: bool,
}

impl Ctx {
    /// Draws fresh slot values; `carry` (if any) replaces the ids a returning user mentions.
    pub(crate) fn new(rng: &mut SmallRng, at: &DateTime<FixedOffset>, carry: Option<Carry>) -> Ctx {
        let cents: u32 = rng.random_range(1_500..250_000);
        let currency = CURRENCIES[rng.random_range(0..CURRENCIES.len())];
        let before: u32 = rng.random_range(80..260);
        let factor = rng.random_range(1.6..4.5);
        let week = at.iso_week();
        let mut ctx = Ctx {
            order: format!("ORD-{}", rng.random_range(10_000..100_000u32)),
            customer: format!("CUS-{}", rng.random_range(1_000..10_000u32)),
            amount: format!("{}.{:02} {currency}", cents / 100, cents % 100),
            currency,
            refund: format!("RF-{}", rng.random_range(100_000..1_000_000u32)),
            ticket: format!("TCK-{}", rng.random_range(2_000..9_000u32)),
            job: format!("{}", rng.random_range(18_000..40_000u32)),
            week: format!("{}-W{:02}", week.year(), week.week()),
            days: format!("{}", rng.random_range(2..15u32)),
            region: REGIONS[rng.random_range(0..REGIONS.len())],
            weekday: WEEKDAYS[rng.random_range(0..WEEKDAYS.len())],
            p95_before: format!("{before}"),
            p95_after: format!("{}", (f64::from(before) * factor).round()),
            previous_ticket: None,
            returning: false,
        };
        if let Some(carry) = carry {
            ctx.order = carry.order;
            ctx.customer = carry.customer;
            ctx.amount = carry.amount;
            ctx.currency = carry.currency;
            ctx.previous_ticket = Some(carry.ticket);
            ctx.returning = true;
        }
        ctx
    }

    /// The ids worth remembering for the user's next session.
    pub(crate) fn carry(&self) -> Carry {
        Carry {
            order: self.order.clone(),
            customer: self.customer.clone(),
            amount: self.amount.clone(),
            currency: self.currency,
            ticket: self.ticket.clone(),
        }
    }

    fn slot(&self, key: &str) -> Option<&str> {
        Some(match key {
            "order" => &self.order,
            "customer" => &self.customer,
            "amount" => &self.amount,
            "refund" => &self.refund,
            "ticket" => &self.ticket,
            "job" => &self.job,
            "week" => &self.week,
            "days" => &self.days,
            "region" => self.region,
            "weekday" => self.weekday,
            "p95_before" => &self.p95_before,
            "p95_after" => &self.p95_after,
            _ => return None,
        })
    }

    /// Replaces every `{slot}` in `template`; unknown slots stay verbatim so a typo is visible.
    pub(crate) fn fill(&self, template: &str) -> String {
        let mut out = String::with_capacity(template.len() + 32);
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            match after.find('}').and_then(|close| self.slot(&after[..close]).map(|v| (close, v))) {
                Some((close, value)) => {
                    out.push_str(value);
                    rest = &after[close + 1..];
                }
                None => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn fill_replaces_known_slots_and_keeps_unknown_ones() {
        let mut rng = SmallRng::seed_from_u64(1);
        let at = DateTime::parse_from_rfc3339("2026-11-16T08:00:00+00:00").unwrap();
        let ctx = Ctx::new(&mut rng, &at, None);
        let text = ctx.fill("order {order} in {week}, {nope} and {");
        assert_eq!(text, format!("order {} in 2026-W47, {{nope}} and {{", ctx.order));
    }
}
