//! Dates a question names ("on 13 October, 2023", "in May 2023", "October 13, 2023", "in
//! 2022"): the periods it is about. Events outside every named period are out of focus.
//!
//! A month name counts only next to a day or a year number, so "may" and "march" in a sentence
//! are words, not months. A day and a month without a year name no period (no year to place
//! them in). Periods are calendar days, months or years in UTC; a day is widened by one day on
//! each side, since the day something happened and the day it was written down differ.

use chrono::{DateTime, Duration, FixedOffset, NaiveDate, TimeZone, Utc};

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// A half-open period `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Period {
    pub(crate) start: DateTime<Utc>,
    pub(crate) end: DateTime<Utc>,
}

impl Period {
    /// Whether `at` falls in the period.
    pub(crate) fn contains(&self, at: DateTime<FixedOffset>) -> bool {
        let at = at.with_timezone(&Utc);
        self.start <= at && at < self.end
    }
}

/// The month (1–12) a word names, full or as its three-letter abbreviation (`sept` too).
fn month(word: &str) -> Option<u32> {
    let w = word.trim_end_matches('.');
    if w.len() < 3 {
        return None;
    }
    let at = MONTHS.iter().position(|m| *m == w || (w.len() <= 4 && m.starts_with(w)))?;
    u32::try_from(at + 1).ok()
}

/// A day of the month: `13`, `13th`, `1st`, `2nd`, `3rd`.
fn day(word: &str) -> Option<u32> {
    let digits = ["st", "nd", "rd", "th"].iter().find_map(|s| word.strip_suffix(s)).unwrap_or(word);
    let d: u32 = digits.parse().ok()?;
    (digits.len() <= 2 && (1..=31).contains(&d)).then_some(d)
}

/// A year from 1900 to 2199.
fn year(word: &str) -> Option<i32> {
    let y: i32 = word.parse().ok()?;
    (word.len() == 4 && (1900..2200).contains(&y)).then_some(y)
}

fn utc(date: NaiveDate) -> Option<DateTime<Utc>> {
    Utc.from_local_datetime(&date.and_hms_opt(0, 0, 0)?).single()
}

fn day_period(y: i32, m: u32, d: u32) -> Option<Period> {
    let date = NaiveDate::from_ymd_opt(y, m, d)?;
    let start = utc(date)? - Duration::days(1);
    Some(Period { start, end: start + Duration::days(3) })
}

fn month_period(y: i32, m: u32) -> Option<Period> {
    let start = utc(NaiveDate::from_ymd_opt(y, m, 1)?)?;
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    Some(Period { start, end: utc(NaiveDate::from_ymd_opt(ny, nm, 1)?)? })
}

fn year_period(y: i32) -> Option<Period> {
    let start = utc(NaiveDate::from_ymd_opt(y, 1, 1)?)?;
    Some(Period { start, end: utc(NaiveDate::from_ymd_opt(y + 1, 1, 1)?)? })
}

/// The periods `text` names.
pub(crate) fn named_periods(text: &str) -> Vec<Period> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut used = vec![false; words.len()];
    let mut periods = Vec::new();
    let get = |i: usize| words.get(i).map(String::as_str);
    for (i, w) in words.iter().enumerate() {
        let Some(m) = month(w) else { continue };
        // day month [year] | month day [year] | month year
        // "13 October", "13th of October"
        let before = i.checked_sub(1).and_then(|j| match get(j) {
            Some("of") => j.checked_sub(1).and_then(|k| get(k).and_then(day).map(|d| (k, d))),
            other => other.and_then(day).map(|d| (j, d)),
        });
        let after = get(i + 1).filter(|n| year(n).is_none()).and_then(day).map(|d| (i + 1, d));
        let dayed = before.or(after);
        let year_at = dayed.map_or(i, |(j, _)| j.max(i)) + 1;
        let Some(y) = get(year_at).and_then(year) else { continue };
        let period = match dayed {
            Some((_, d)) => day_period(y, m, d),
            None => month_period(y, m),
        };
        // Its words are a date even when no such day exists: the year alone is not meant.
        used[i] = true;
        used[year_at] = true;
        if let Some((j, _)) = dayed {
            used[j] = true;
        }
        periods.extend(period);
    }
    for (i, w) in words.iter().enumerate() {
        if used[i] {
            continue;
        }
        if let Some(period) = year(w).and_then(year_period) {
            periods.push(period);
            used[i] = true;
        }
    }
    periods
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any text, however odd (huge numbers, "31st of Feb", unicode), reads without a panic
        /// into periods of one to three days, a month or a year.
        #[test]
        fn any_text_gives_sane_periods(text in "(\\PC|[0-9]{1,5}(st|th)?|(may|june|of|dec) ){0,12}") {
            for p in named_periods(&text) {
                let days = (p.end - p.start).num_days();
                prop_assert!(matches!(days, 3 | 28..=31 | 365 | 366), "{days} days");
            }
        }
    }

    fn at(s: &str) -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn spans(text: &str) -> Vec<(String, String)> {
        named_periods(text)
            .iter()
            .map(|p| (p.start.date_naive().to_string(), p.end.date_naive().to_string()))
            .collect()
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_owned(), b.to_owned())
    }

    #[test]
    fn days_months_and_years_in_the_usual_orders() {
        let day = [pair("2023-10-12", "2023-10-15")];
        assert_eq!(spans("What did she paint on October 13, 2023?"), day.clone());
        assert_eq!(spans("what happened on 13 October, 2023"), day.clone());
        assert_eq!(spans("on the 13th of Oct 2023"), day.clone());
        assert_eq!(spans("on 13th Oct. 2023"), day);
        assert_eq!(spans("What did John host in May 2023?"), [pair("2023-05-01", "2023-06-01")]);
        assert_eq!(spans("in December, 2023"), [pair("2023-12-01", "2024-01-01")]);
        assert_eq!(spans("plans for 2024"), [pair("2024-01-01", "2025-01-01")]);
    }

    #[test]
    fn month_names_without_a_number_are_words() {
        assert!(spans("May I ask what the march was about?").is_empty());
        assert!(spans("on 13 October").is_empty(), "no year to place it in");
        assert!(spans("room 12345 and 99 problems").is_empty());
        assert!(spans("on 31 February 2023").is_empty(), "no such day");
    }

    #[test]
    fn every_date_is_read_and_a_year_is_not_read_twice() {
        assert_eq!(
            spans("Where did Maria go on 3 June, 2023 and in 2022?"),
            [pair("2023-06-02", "2023-06-05"), pair("2022-01-01", "2023-01-01")]
        );
    }

    #[test]
    fn a_period_holds_its_instants_and_not_the_next_one() {
        let periods = named_periods("in May 2023");
        let may = periods[0];
        assert!(may.contains(at("2023-05-01T00:00:00Z")));
        assert!(may.contains(at("2023-05-31T23:59:59Z")));
        assert!(!may.contains(at("2023-06-01T00:00:00Z")));
        assert!(may.contains(at("2023-06-01T01:00:00+02:00")), "compared in UTC");
    }
}
