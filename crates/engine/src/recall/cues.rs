//! Structural cues of a question, by rules (no model): what kind of node the answer is, read from
//! the graph's structure rather than from its words.
//!
//! An [`super::Intent`] chooses which edges expansion prefers; a cue says which nodes answer. Cues
//! combine (a question can ask what failed after something), and each one is a property of the
//! graph, never a word of the data:
//!
//! | cue       | the question asks for…                         | fires on (whole words)                                                        | structural rule                                              |
//! |-----------|------------------------------------------------|-------------------------------------------------------------------------------|--------------------------------------------------------------|
//! | failure   | what went wrong                                | fail, failed, fails, failing, failure(s), error(s), errored, wrong, broke, broken, crash(ed), exception(s), outage(s), problem(s), issue(s), timeout(s) | events with `status` failed first; CAUSED_BY both ways       |
//! | after     | consequences, what came next                   | after, afterwards, next, then, followed, following, subsequently, consequence(s), result(s), resulted | from an anchor: CAUSED_BY into it (its children), FOLLOWS into it (the next event) |
//! | before    | antecedents, what came first                   | before, prior, preceded, preceding, earlier, beforehand                       | from an anchor: CAUSED_BY out of it (its parent), FOLLOWS out of it |
//! | request   | what a user asked, the task of a run           | ask, asked, asking, request(s), requested, task, want(ed), goal, prompt(ed)   | the run's first `observation.input` (else its first event with a `user_id`) |
//! | involved  | the participants of something named            | who, whom, involved, participants, participated                               | from an anchor: REFERENCES out of it (its agent, instruments, objects, participants) |
//! | decision  | what was decided                               | decide, decided, decides, decision(s), chose, chosen, choice, agreed          | memories of kind decision first (among the hits and of the session in scope) |
//!
//! "after" and "before" are read only when the question also names an anchor (an event, a
//! session): without one they say nothing about which nodes answer.

/// The cues of one question; see the module table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cues {
    /// The question asks what went wrong.
    pub(crate) failure: bool,
    /// The question asks what came after something.
    pub(crate) after: bool,
    /// The question asks what came before something.
    pub(crate) before: bool,
    /// The question asks what a user requested (a run's task).
    pub(crate) request: bool,
    /// The question asks who or what took part in something.
    pub(crate) involved: bool,
    /// The question asks what was decided.
    pub(crate) decision: bool,
}

const FAILURE: &[&str] = &[
    "fail",
    "failed",
    "fails",
    "failing",
    "failure",
    "failures",
    "error",
    "errors",
    "errored",
    "wrong",
    "broke",
    "broken",
    "crash",
    "crashed",
    "exception",
    "exceptions",
    "outage",
    "outages",
    "problem",
    "problems",
    "issue",
    "issues",
    "timeout",
    "timeouts",
];
const AFTER: &[&str] = &[
    "after",
    "afterwards",
    "afterward",
    "next",
    "then",
    "followed",
    "following",
    "subsequently",
    "consequence",
    "consequences",
    "result",
    "results",
    "resulted",
];
const BEFORE: &[&str] = &["before", "prior", "preceded", "preceding", "earlier", "beforehand"];
const REQUEST: &[&str] = &[
    "ask",
    "asked",
    "asking",
    "request",
    "requests",
    "requested",
    "task",
    "want",
    "wanted",
    "goal",
    "prompt",
    "prompted",
];
const INVOLVED: &[&str] = &["who", "whom", "involved", "participants", "participated"];
const DECISION: &[&str] = &[
    "decide",
    "decided",
    "decides",
    "decision",
    "decisions",
    "chose",
    "chosen",
    "choice",
    "agreed",
];

impl Cues {
    /// The cues of `question` (see the module table).
    pub(crate) fn of(question: &str) -> Cues {
        let words: Vec<String> = question
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .map(|w| w.trim_matches('\'').to_lowercase())
            .filter(|w| !w.is_empty())
            .collect();
        let any = |set: &[&str]| words.iter().any(|w| set.contains(&w.as_str()));
        Cues {
            failure: any(FAILURE),
            after: any(AFTER),
            before: any(BEFORE),
            request: any(REQUEST),
            involved: any(INVOLVED),
            decision: any(DECISION),
        }
    }

    /// The names of the cues that fired, for the pack's context state.
    pub(crate) fn names(self) -> Vec<&'static str> {
        [
            (self.failure, "failure"),
            (self.after, "after"),
            (self.before, "before"),
            (self.request, "request"),
            (self.involved, "involved"),
            (self.decision, "decision"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    /// The weight of a step from an anchor over `edge_type` (`out`: along the edge's direction)
    /// when a cue decides it; `None` leaves it to the intent. Edges point from the later or
    /// dependent node: a child is CAUSED_BY its parent, an event FOLLOWS the one before it.
    pub(crate) fn edge_weight(self, edge_type: &str, out: bool) -> Option<f64> {
        match (edge_type, out) {
            ("CAUSED_BY" | "FOLLOWS", false) if self.after && !self.before => {
                Some(if edge_type == "CAUSED_BY" { 0.95 } else { 0.9 })
            }
            ("CAUSED_BY" | "FOLLOWS", true) if self.after && !self.before => Some(0.3),
            ("CAUSED_BY" | "FOLLOWS", true) if self.before && !self.after => {
                Some(if edge_type == "CAUSED_BY" { 0.95 } else { 0.9 })
            }
            ("CAUSED_BY" | "FOLLOWS", false) if self.before && !self.after => Some(0.3),
            ("CAUSED_BY", _) if self.failure => Some(if out { 0.9 } else { 0.8 }),
            ("REFERENCES", true) if self.involved => Some(0.95),
            ("SAME_AS", _) if self.involved => Some(0.9),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_get_the_documented_cues() {
        let failure = Cues::of("Why did session s-1 fail?");
        assert!(failure.failure && !failure.after && !failure.request);
        assert!(Cues::of("What went wrong in the run?").failure);
        assert!(Cues::of("Which errors happened during s-2?").failure);
        assert!(Cues::of("problems in t-3").failure);
        let after = Cues::of("What happened after the call e-9 failed?");
        assert!(after.after && after.failure && !after.before);
        assert!(Cues::of("What came before e-9?").before);
        assert!(Cues::of("What did the user ask for in s-1?").request);
        assert!(Cues::of("What was the task?").request);
        assert!(Cues::of("Who was involved in e-9?").involved);
        assert!(Cues::of("What did we decide after the outage?").decision);
        assert_eq!(Cues::of("invoice rounding"), Cues::default());
    }

    #[test]
    fn cues_match_whole_words_only() {
        assert_eq!(Cues::of("the failsafe errand"), Cues::default());
        assert_eq!(Cues::of("taskbar wanting"), Cues::default());
    }

    #[test]
    fn after_walks_to_children_and_before_to_parents() {
        let after = Cues { after: true, ..Cues::default() };
        assert_eq!(after.edge_weight("CAUSED_BY", false), Some(0.95));
        assert_eq!(after.edge_weight("CAUSED_BY", true), Some(0.3));
        let before = Cues { before: true, ..Cues::default() };
        assert_eq!(before.edge_weight("CAUSED_BY", true), Some(0.95));
        assert_eq!(before.edge_weight("FOLLOWS", false), Some(0.3));
        let involved = Cues { involved: true, ..Cues::default() };
        assert_eq!(involved.edge_weight("REFERENCES", true), Some(0.95));
        assert_eq!(Cues::default().edge_weight("CAUSED_BY", true), None);
    }

    #[test]
    fn names_list_the_cues_that_fired() {
        assert_eq!(Cues::of("what failed after e-1").names(), vec!["failure", "after"]);
        assert!(Cues::default().names().is_empty());
    }
}
