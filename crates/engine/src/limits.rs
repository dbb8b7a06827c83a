//! Bounds on the work one question may ask for: its length in characters and in words.
//!
//! Recall and search cost grows with the question (every word is a term to look up, a
//! token to embed, a name to match), so every interface refuses a question over these limits
//! before any work starts, with an error that names the limit: the server's HTTP routes and MCP
//! tools (configurable on `ctxgraph serve`) and the CLI (the defaults).

use crate::error::Error;

/// Default largest question, in characters (Unicode scalar values).
pub const MAX_QUESTION_CHARS: usize = 4_096;
/// Default largest question, in words (runs of non-whitespace).
pub const MAX_QUESTION_WORDS: usize = 256;

/// How large a question may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuestionLimits {
    /// Most characters.
    pub max_chars: usize,
    /// Most words.
    pub max_words: usize,
}

impl Default for QuestionLimits {
    fn default() -> Self {
        QuestionLimits { max_chars: MAX_QUESTION_CHARS, max_words: MAX_QUESTION_WORDS }
    }
}

impl QuestionLimits {
    /// Refuse `text` (the request field `field`) when it is over a limit: `limit.question_chars`
    /// or `limit.question_words`. Stops counting just past the limit, so a refusal costs what
    /// an accepted question does.
    pub fn check(&self, field: &str, text: &str) -> Result<(), Error> {
        if text.chars().nth(self.max_chars).is_some() {
            return Err(Error::Limit {
                code: "limit.question_chars",
                message: format!(
                    "{field} of {} bytes has more than {} characters: ask a shorter question",
                    text.len(),
                    self.max_chars
                ),
            });
        }
        if text.split_whitespace().nth(self.max_words).is_some() {
            return Err(Error::Limit {
                code: "limit.question_words",
                message: format!(
                    "{field} has more than {} words: ask a shorter question",
                    self.max_words
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_at_the_limits_pass_and_over_them_are_refused() {
        let limits = QuestionLimits { max_chars: 10, max_words: 3 };
        assert!(limits.check("question", "ab cd éf").is_ok());
        assert!(limits.check("question", "éééééééééé").is_ok(), "characters, not bytes");
        let long = limits.check("question", "abcdefghijk").unwrap_err();
        assert_eq!(long.code(), "limit.question_chars");
        assert!(long.to_string().contains("question") && long.to_string().contains("10"));
        let wordy = limits.check("query", "a b c d").unwrap_err();
        assert_eq!(wordy.code(), "limit.question_words");
        assert!(wordy.to_string().contains("query"));
        assert!(wordy.is_user_error());
    }

    #[test]
    fn defaults_refuse_a_huge_question() {
        let huge = "word ".repeat(1_000_000);
        assert_eq!(
            QuestionLimits::default().check("question", &huge).unwrap_err().code(),
            "limit.question_chars"
        );
        let many = "a ".repeat(MAX_QUESTION_WORDS + 1);
        assert_eq!(
            QuestionLimits::default().check("question", &many).unwrap_err().code(),
            "limit.question_words"
        );
    }
}
