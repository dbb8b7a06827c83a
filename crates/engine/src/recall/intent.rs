//! The intent of a question, by rules (no model): it picks which edges expansion follows.
//!
//! | intent   | the question asks…                 | a rule fires on (first match wins, in this order)                      |
//! |----------|------------------------------------|-------------------------------------------------------------------------|
//! | why      | for causes                         | why, what caused, cause of, reason, because, how come, what led to, root cause, due to |
//! | when     | for time and order                 | when, what time, what date, which day/month/year, how long, before, after, since, until, timeline, first, last time |
//! | overview | for the big picture                | summary, summarize, overview, recap, overall, so far, what happened, in general, high-level |
//! | related  | for similar things                 | similar, related, like this, same kind, other times, again, also happened |
//! | who/what | for the actors and things involved | who, whom, whose, which tool/agent/user/service, what tool, involved, used |
//! | lookup   | for a fact (the default)           | anything else                                                          |

/// What a question asks for; chooses the edge weights of expansion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Intent {
    /// Causes: CAUSED_BY first.
    Why,
    /// Time and order: FOLLOWS first.
    When,
    /// The actors and things involved: REFERENCES and SAME_AS first.
    WhoWhat,
    /// Similar things: SIMILAR_TO first.
    Related,
    /// The big picture: SUMMARIZES first.
    Overview,
    /// A fact: a little of everything.
    Lookup,
}

impl Intent {
    /// Every intent.
    pub const ALL: [Intent; 6] = [
        Intent::Why,
        Intent::When,
        Intent::WhoWhat,
        Intent::Related,
        Intent::Overview,
        Intent::Lookup,
    ];

    /// The intent's name (`why`, `when`, `who_what`, `related`, `overview`, `lookup`).
    pub fn name(self) -> &'static str {
        match self {
            Intent::Why => "why",
            Intent::When => "when",
            Intent::WhoWhat => "who_what",
            Intent::Related => "related",
            Intent::Overview => "overview",
            Intent::Lookup => "lookup",
        }
    }

    /// The intent named `name` (also `who` and `what` for who/what).
    pub fn parse(name: &str) -> Option<Intent> {
        match name.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "why" => Some(Intent::Why),
            "when" => Some(Intent::When),
            "who_what" | "who" | "what" | "whowhat" => Some(Intent::WhoWhat),
            "related" => Some(Intent::Related),
            "overview" => Some(Intent::Overview),
            "lookup" => Some(Intent::Lookup),
            _ => None,
        }
    }

    /// How much a step over `edge_type` is worth for this intent, by direction (`out`: from the
    /// node the step starts at along the edge's direction). 0 means "do not follow".
    ///
    /// Edges point from the later or dependent node: an event is CAUSED_BY its parent, FOLLOWS
    /// the event before it, REFERENCES its entities; a summary SUMMARIZES its events.
    pub fn edge_weight(self, edge_type: &str, out: bool) -> f64 {
        use Intent::{Lookup, Overview, Related, When, WhoWhat, Why};
        // (out, in) per intent.
        let (o, i) = match (edge_type, self) {
            ("CAUSED_BY", Why) => (0.95, 0.6),
            ("CAUSED_BY", When) => (0.6, 0.6),
            ("CAUSED_BY", _) => (0.5, 0.4),
            ("FOLLOWS", When) => (0.9, 0.9),
            ("FOLLOWS", Why) => (0.6, 0.3),
            ("FOLLOWS", Lookup | WhoWhat | Related) => (0.6, 0.6),
            ("FOLLOWS", Overview) => (0.3, 0.3),
            ("REFERENCES", WhoWhat) => (0.9, 0.7),
            ("REFERENCES", _) => (0.5, 0.4),
            ("SAME_AS", WhoWhat) => (0.9, 0.9),
            ("SAME_AS", _) => (0.6, 0.6),
            ("RELATED_TO", WhoWhat | Related) => (0.6, 0.6),
            ("RELATED_TO", _) => (0.3, 0.3),
            ("SIMILAR_TO", Related) => (0.9, 0.9),
            ("SIMILAR_TO", _) => (0.5, 0.5),
            // A summary reaches down to what it summarises; an event up to its summary.
            ("SUMMARIZES", Overview) => (0.9, 0.9),
            ("SUMMARIZES", _) => (0.2, 0.3),
            // Decision memory (seed 003): why → SUPERSEDES / OUTCOME_OF, when → TEMPORAL.
            ("SUPERSEDES" | "OUTCOME_OF", Why) => (0.9, 0.9),
            ("IMPLEMENTS" | "RELATES_TO", Why | Related) => (0.7, 0.7),
            ("TEMPORAL", When) => (0.8, 0.8),
            // Decision receipts (seed 004) are provenance anchors: a why-question walks from a
            // receipt to the inputs and policies behind it, and from an input to its receipts.
            ("USED_INPUT", Why) => (0.9, 0.85),
            ("CHECKED_POLICY" | "INVOKED_EXCEPTION" | "APPROVED_BY", Why) => (0.8, 0.5),
            ("USED_INPUT", _) => (0.6, 0.5),
            ("ACTED_BY" | "APPROVED_BY", WhoWhat) => (0.9, 0.6),
            ("FOR_TASK", When | Related) => (0.6, 0.6),
            // Edge types from extension modules: followed, weakly.
            (_, _) => (0.3, 0.3),
        };
        if out { o } else { i }
    }
}

/// Rules, in order: the first intent whose phrases occur in the question wins.
const RULES: &[(Intent, &[&str])] = &[
    (
        Intent::Why,
        &[
            "why",
            "what caused",
            "cause of",
            "caused",
            "reason",
            "because",
            "how come",
            "what led to",
            "led to",
            "root cause",
            "due to",
        ],
    ),
    (
        Intent::When,
        &[
            "when",
            "what time",
            "what date",
            "which day",
            "which month",
            "which year",
            "what day",
            "what month",
            "what year",
            "how long",
            "before",
            "after",
            "since",
            "until",
            "timeline",
            "first time",
            "last time",
        ],
    ),
    (
        Intent::Overview,
        &[
            "summary",
            "summarize",
            "summarise",
            "overview",
            "recap",
            "overall",
            "so far",
            "what happened",
            "in general",
            "high-level",
            "high level",
        ],
    ),
    (
        Intent::Related,
        &["similar", "related", "like this", "same kind", "other times", "again", "also happened"],
    ),
    (
        Intent::WhoWhat,
        &[
            "who",
            "whom",
            "whose",
            "which tool",
            "which agent",
            "which user",
            "which service",
            "what tool",
            "what agent",
            "what service",
            "involved",
            "used",
        ],
    ),
];

/// Classify a question by the rules of the module table.
pub fn classify(question: &str) -> Intent {
    let words = normalise(question);
    for (intent, phrases) in RULES {
        if phrases.iter().any(|p| contains_phrase(&words, p)) {
            return *intent;
        }
    }
    Intent::Lookup
}

/// Lower-case words separated by single spaces, padded, so phrases match whole words.
fn normalise(text: &str) -> String {
    let mut out = String::from(" ");
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '\'')) {
        if !word.is_empty() {
            out.push_str(&word.to_lowercase());
            out.push(' ');
        }
    }
    out
}

fn contains_phrase(words: &str, phrase: &str) -> bool {
    words.contains(&format!(" {phrase} "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_get_the_documented_intents() {
        let cases = [
            ("Why did the deploy fail?", Intent::Why),
            ("What caused the timeout on orders-db?", Intent::Why),
            ("What led to the rollback", Intent::Why),
            ("When did Caroline go to the support group?", Intent::When),
            ("What happened before the crash?", Intent::When),
            ("How long did the migration take?", Intent::When),
            ("Give me an overview of yesterday", Intent::Overview),
            ("Summarize the session", Intent::Overview),
            ("Any similar failures?", Intent::Related),
            ("Did this happen again?", Intent::Related),
            ("Who approved the refund?", Intent::WhoWhat),
            ("Which tool read the config?", Intent::WhoWhat),
            ("What did Caroline research?", Intent::Lookup),
            ("invoice rounding", Intent::Lookup),
            ("", Intent::Lookup),
        ];
        for (q, want) in cases {
            assert_eq!(classify(q), want, "{q}");
        }
    }

    #[test]
    fn rules_match_whole_words_only() {
        assert_eq!(classify("Whynot is a tool name"), Intent::Lookup);
        assert_eq!(classify("the reasoning engine"), Intent::Lookup);
        assert_eq!(classify("whoever"), Intent::Lookup);
    }

    #[test]
    fn names_round_trip() {
        for intent in Intent::ALL {
            assert_eq!(Intent::parse(intent.name()), Some(intent));
        }
        assert_eq!(Intent::parse("who"), Some(Intent::WhoWhat));
        assert_eq!(Intent::parse("because"), None);
    }

    #[test]
    fn every_intent_prefers_its_own_edges() {
        let best = |intent: Intent| {
            ["CAUSED_BY", "FOLLOWS", "REFERENCES", "SIMILAR_TO", "SUMMARIZES"]
                .into_iter()
                .max_by(|a, b| intent.edge_weight(a, true).total_cmp(&intent.edge_weight(b, true)))
                .unwrap_or_default()
        };
        assert_eq!(best(Intent::Why), "CAUSED_BY");
        assert_eq!(best(Intent::When), "FOLLOWS");
        assert_eq!(best(Intent::WhoWhat), "REFERENCES");
        assert_eq!(best(Intent::Related), "SIMILAR_TO");
        assert_eq!(best(Intent::Overview), "SUMMARIZES");
    }
}
