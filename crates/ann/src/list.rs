//! Inverted lists packed as one blob each, and a zero-copy view over a stored blob.
//!
//! # Storage layout
//!
//! [`encode_list`] writes format 2, all little-endian:
//!
//! | bytes                  | field                                         |
//! |------------------------|-----------------------------------------------|
//! | 0..4                   | magic `CGIL`                                  |
//! | 4..8                   | format version, u32 = 2                       |
//! | 8..12                  | dim, u32                                      |
//! | 12..16                 | count (members), u32                          |
//! | 16..20                 | groups, u32                                   |
//! | 20..                   | groups records of `8 + dim` bytes             |
//! | then                   | count member ids, i64                         |
//!
//! Members whose int8 codes and scale are identical form one group: near-duplicate texts are
//! common in agent traces and embed to identical codes (at a million synthetic events, 1,000,000
//! members were 414,121 groups, and the largest list, 6 % of all members, was one group). A
//! group record is its scale (f32, finite, ≥ 0), its member count (u32, ≥ 1) and its `dim` int8
//! codes (see [`quantize`](crate::quantize)); the ids follow, group by group, ascending within a
//! group. Groups are ordered by their lowest id. So a blob is a function of the set of members,
//! whatever order they were given in, and a search scores a group once and stops at the first
//! of its ids that cannot enter its top list ([`scan`](crate::scan)).
//!
//! Format 1, which stores still hold until their next index build, still parses: `count`
//! records of `12 + dim` bytes after the header, each a member's id (i64), scale (f32) and codes,
//! in the order they were given; a record reads as a group of one.

use std::collections::HashMap;

use crate::blob::{BlobKind, HEADER};
use crate::centroids::Centroids;
use crate::error::Error;
use crate::parallel::map_ranges;
use crate::quant::quantize;
use crate::train::rows;

const BLOB: BlobKind = BlobKind { magic: b"CGIL", version: 2, what: WHAT };
/// The format before groups: one record per member.
const BLOB_V1: BlobKind = BlobKind { magic: b"CGIL", version: 1, what: WHAT };
const WHAT: &str = "inverted list";

/// Bytes of a format 1 member record before its codes: id and scale.
const RECORD_HEAD: usize = 12;
/// Bytes of a group record before its codes: scale and member count.
const GROUP_HEAD: usize = 8;
/// Bytes of the group count after the header.
const GROUPS_FIELD: usize = 4;
/// Bytes of a member id.
const ID: usize = 8;

/// Packs the members of one inverted list, `(id, scale, codes)` each, as one blob (see the
/// module docs for the layout). Every `codes` slice must have `dim` elements: shorter ones are
/// padded with zeros and longer ones cut, and a scale that is negative or not finite is stored
/// as 0, so the blob always parses. The blob does not depend on the order of `members`.
pub fn encode_list(dim: usize, members: &[(i64, f32, &[i8])]) -> Vec<u8> {
    let mut records = Vec::with_capacity(members.len() * (RECORD_HEAD + dim));
    for (id, scale, codes) in members {
        push_record(&mut records, dim, *id, *scale, codes.iter().map(|&c| c as u8));
    }
    group_records(dim, &records)
}

/// Appends `members` to an encoded list: the same as encoding the old members and the new ones
/// together.
///
/// # Errors
///
/// [`Error::Corrupt`] if `blob` does not parse as a list of `dim`, or the members would be more
/// than its count can say.
pub fn append_to_list(
    dim: usize,
    blob: &[u8],
    members: &[(i64, f32, &[i8])],
) -> Result<Vec<u8>, Error> {
    let view = ListView::parse(dim, blob)?;
    let count = view.len() + members.len();
    if u32::try_from(count).is_err() {
        return Err(corrupt(format!("{count} members overflow the count")));
    }
    let mut records = Vec::with_capacity(count * (RECORD_HEAD + dim));
    for (id, scale, codes) in view.iter() {
        push_record(&mut records, dim, id, scale, codes.iter().copied());
    }
    for (id, scale, codes) in members {
        push_record(&mut records, dim, *id, *scale, codes.iter().map(|&c| c as u8));
    }
    Ok(group_records(dim, &records))
}

/// An encoded list without the members `gone` names: the same bytes as encoding the members
/// kept (a forget takes a node's codes out of the list it is filed in).
///
/// # Errors
///
/// [`Error::Corrupt`] if `blob` does not parse as a list of `dim`.
pub fn without_members(
    dim: usize,
    blob: &[u8],
    gone: impl Fn(i64) -> bool,
) -> Result<Vec<u8>, Error> {
    let view = ListView::parse(dim, blob)?;
    let mut records = Vec::with_capacity(view.len() * (RECORD_HEAD + dim));
    for (id, scale, codes) in view.iter().filter(|(id, _, _)| !gone(*id)) {
        push_record(&mut records, dim, id, scale, codes.iter().copied());
    }
    Ok(group_records(dim, &records))
}

/// Quantizes `vectors` (row `i` has id `ids[i]` and goes to list `assignment[i]`) and encodes
/// every list of `centroids` as one blob: `result[l]` is list `l`'s blob, empty lists included.
/// Quantization runs on `threads` threads; the blobs do not depend on it.
///
/// # Errors
///
/// [`Error::Shape`] if `vectors` is not one row of `centroids.dim()` floats per id, or
/// `assignment` has a different length or names a list that does not exist.
pub fn encode_lists(
    ids: &[i64],
    vectors: &[f32],
    centroids: &Centroids,
    assignment: &[u32],
    threads: usize,
) -> Result<Vec<Vec<u8>>, Error> {
    let mut lists = ListsBuilder::new(centroids);
    lists.push_assigned(ids, vectors, assignment, threads)?;
    Ok(lists.finish())
}

/// The blobs of every list of an index, built from vectors handed over a page at a time: what
/// [`encode_lists`] gives for all the pages' rows at once, while only the members' int8 codes
/// (a quarter of their f32 size) are held, never the f32 rows of more than one page.
#[derive(Debug)]
pub struct ListsBuilder<'c> {
    centroids: &'c Centroids,
    /// Every list's members so far as format 1 records (id, scale, codes), grouped by
    /// [`ListsBuilder::finish`].
    records: Vec<Vec<u8>>,
    counts: Vec<u32>,
}

impl<'c> ListsBuilder<'c> {
    /// No members yet, one empty list per centroid.
    pub fn new(centroids: &'c Centroids) -> ListsBuilder<'c> {
        ListsBuilder {
            centroids,
            records: vec![Vec::new(); centroids.len()],
            counts: vec![0; centroids.len()],
        }
    }

    /// Assigns every row of `vectors` to its nearest list ([`assign`](crate::assign)) and adds
    /// it there; returns the rows' lists.
    ///
    /// # Errors
    ///
    /// As [`ListsBuilder::push_assigned`].
    pub fn push(
        &mut self,
        ids: &[i64],
        vectors: &[f32],
        threads: usize,
    ) -> Result<Vec<u32>, Error> {
        let assignment = crate::assign(self.centroids, vectors, threads)?;
        self.push_assigned(ids, vectors, &assignment, threads)?;
        Ok(assignment)
    }

    /// Quantizes `vectors` (row `i` has id `ids[i]` and goes to list `assignment[i]`) on
    /// `threads` threads and adds each row to its list.
    ///
    /// # Errors
    ///
    /// [`Error::Shape`] if `vectors` is not one row of the centroids' dimension per id,
    /// `assignment` has a different length or names a list that does not exist, or a list would
    /// have more members than its count can say; nothing is added then.
    pub fn push_assigned(
        &mut self,
        ids: &[i64],
        vectors: &[f32],
        assignment: &[u32],
        threads: usize,
    ) -> Result<(), Error> {
        let dim = self.centroids.dim();
        let n = rows(vectors, dim)?;
        if ids.len() != n || assignment.len() != n {
            return Err(Error::Shape {
                what: "lists",
                detail: format!("{n} vectors, {} ids, {} assignments", ids.len(), assignment.len()),
            });
        }
        let lists = self.records.len();
        let mut counts = self.counts.clone();
        for &l in assignment {
            let count = counts.get_mut(l as usize).ok_or_else(|| Error::Shape {
                what: "assignment",
                detail: format!("list {l} of {lists}"),
            })?;
            *count = count.checked_add(1).ok_or_else(|| Error::Shape {
                what: "assignment",
                detail: format!("list {l} has more than {} members", u32::MAX),
            })?;
        }
        let parts = map_ranges(n, threads, |r| {
            let mut codes = Vec::with_capacity(r.len() * dim);
            let scales: Vec<f32> = vectors[r.start * dim..r.end * dim]
                .chunks_exact(dim)
                .map(|v| quantize(v, &mut codes))
                .collect();
            (scales, codes)
        });
        let mut row = 0;
        for (scales, codes) in &parts {
            for (scale, codes) in scales.iter().zip(codes.chunks_exact(dim)) {
                let records = &mut self.records[assignment[row] as usize];
                push_record(records, dim, ids[row], *scale, codes.iter().map(|&c| c as u8));
                row += 1;
            }
        }
        self.counts = counts;
        Ok(())
    }

    /// Every list's blob, `result[l]` for list `l`, empty lists included.
    pub fn finish(self) -> Vec<Vec<u8>> {
        let dim = self.centroids.dim();
        // Each list's records are dropped once its blob is made, so the two are held together
        // for one list at a time.
        self.records.into_iter().map(|records| group_records(dim, &records)).collect()
    }
}

/// Appends a format 1 record (id, scale, `dim` codes) to `out`: the member as it is grouped.
fn push_record(
    out: &mut Vec<u8>,
    dim: usize,
    id: i64,
    scale: f32,
    codes: impl Iterator<Item = u8>,
) {
    out.extend_from_slice(&id.to_le_bytes());
    let scale = if scale.is_finite() && scale > 0.0 { scale } else { 0.0 };
    out.extend_from_slice(&scale.to_le_bytes());
    let start = out.len();
    out.extend(codes.take(dim));
    out.resize(start + dim, 0);
}

/// Encodes format 1 `records` (whole records of `dim` codes, scales already checked) as a
/// format 2 blob: grouped by identical scale and codes, groups by lowest id, ids ascending.
fn group_records(dim: usize, records: &[u8]) -> Vec<u8> {
    let records: Vec<&[u8]> = records.chunks_exact(RECORD_HEAD + dim).collect();
    let id_of = |r: &[u8]| i64::from_le_bytes(r[..ID].try_into().unwrap_or_default());
    // Ascending ids first, so each group's ids, and the groups' first ids, come out ascending.
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by_key(|&i| id_of(records[i]));
    // The group of each distinct (scale, codes), in order of its lowest id. Only the order of
    // `groups` is output; the map finds a record's group.
    let mut index: HashMap<&[u8], usize> = HashMap::with_capacity(records.len());
    let mut groups: Vec<(&[u8], Vec<i64>)> = Vec::new();
    for &i in &order {
        let (id, body) = (id_of(records[i]), &records[i][ID..]);
        let g = *index.entry(body).or_insert_with(|| {
            groups.push((body, Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(id);
    }
    let mut out = Vec::with_capacity(
        HEADER + GROUPS_FIELD + groups.len() * (GROUP_HEAD + dim) + records.len() * ID,
    );
    BLOB.write_header(&mut out, dim, records.len());
    out.extend_from_slice(&(groups.len() as u32).to_le_bytes());
    for (body, ids) in &groups {
        // `body` is the record's scale then codes.
        out.extend_from_slice(&body[..4]);
        out.extend_from_slice(&(ids.len() as u32).to_le_bytes());
        out.extend_from_slice(&body[4..]);
    }
    for (_, ids) in &groups {
        ids.iter().for_each(|id| out.extend_from_slice(&id.to_le_bytes()));
    }
    out
}

/// An encoded inverted list checked once, for a list kept and searched many times (a cache):
/// its views are made without checking every member again.
#[derive(Debug, Clone)]
pub struct CheckedList {
    dim: usize,
    blob: Vec<u8>,
    /// Where the parse found the parts, relative to the blob.
    parts: Parts,
}

impl CheckedList {
    /// Checks `blob` as [`ListView::parse`] does and keeps it.
    ///
    /// # Errors
    ///
    /// As [`ListView::parse`].
    pub fn new(dim: usize, blob: Vec<u8>) -> Result<CheckedList, Error> {
        let parts = ListView::parse(dim, &blob)?.parts(&blob);
        Ok(CheckedList { dim, blob, parts })
    }

    /// The list's view, without a second pass over its members.
    pub fn view(&self) -> ListView<'_> {
        ListView::from_parts(self.dim, &self.blob, self.parts)
    }
}

/// Where a checked blob's parts are: its member count, and for format 2 its group records' and
/// ids' byte ranges.
#[derive(Debug, Clone, Copy)]
struct Parts {
    count: usize,
    groups: (usize, usize),
    ids: Option<(usize, usize)>,
}

/// A zero-copy view over an encoded inverted list.
#[derive(Debug, Clone, Copy)]
pub struct ListView<'a> {
    dim: usize,
    count: usize,
    /// Format 2: the group records. Format 1: the member records.
    groups: &'a [u8],
    /// Format 2: the member ids, group by group. Format 1: `None`.
    ids: Option<&'a [u8]>,
}

impl<'a> ListView<'a> {
    /// Checks `blob` and views it as a list of `dim`-dimensional members.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] if the blob is short or truncated, has the wrong magic, version or
    /// dimension, a member scale that is negative or not finite, or (format 2) a group without
    /// members, group sizes that do not add up to the count, or ids not ascending within a
    /// group. Never panics.
    pub fn parse(dim: usize, blob: &'a [u8]) -> Result<ListView<'a>, Error> {
        let version = blob.get(4..8).map(|v| u32::from_le_bytes([v[0], v[1], v[2], v[3]]));
        let view = if version == Some(BLOB_V1.version) {
            let (count, records) = BLOB_V1.read_header(blob, dim)?;
            if count.checked_mul(RECORD_HEAD + dim) != Some(records.len()) {
                return Err(corrupt(format!(
                    "{} bytes for {count} members of {dim} dimensions",
                    blob.len()
                )));
            }
            ListView { dim, count, groups: records, ids: None }
        } else {
            parse_grouped(dim, blob)?
        };
        if view.groups().any(|g| !(g.scale.is_finite() && g.scale >= 0.0)) {
            return Err(corrupt("a member scale is negative or not finite".to_owned()));
        }
        Ok(view)
    }

    fn from_parts(dim: usize, blob: &'a [u8], parts: Parts) -> ListView<'a> {
        // The ranges were found by a parse of this very blob.
        let at = |(start, end): (usize, usize)| blob.get(start..end).unwrap_or_default();
        ListView { dim, count: parts.count, groups: at(parts.groups), ids: parts.ids.map(at) }
    }

    /// Where this view's parts lie in `blob`, the blob it was parsed from.
    fn parts(&self, blob: &[u8]) -> Parts {
        let offset = |part: &[u8]| {
            let start = part.as_ptr() as usize - blob.as_ptr() as usize;
            (start, start + part.len())
        };
        Parts { count: self.count, groups: offset(self.groups), ids: self.ids.map(offset) }
    }

    /// The dimension of the members.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the list has no members.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of distinct (scale, codes) groups: what a search scores.
    pub fn groups_len(&self) -> usize {
        self.groups.len() / (self.group_head() + self.dim)
    }

    fn group_head(&self) -> usize {
        if self.ids.is_some() { GROUP_HEAD } else { RECORD_HEAD }
    }

    /// The groups of members with identical scale and codes; a format 1 record is a group of
    /// one.
    pub(crate) fn groups(&self) -> impl Iterator<Item = Group<'a>> + use<'a> {
        let (dim, grouped) = (self.dim, self.ids.is_some());
        let mut ids = self.ids.unwrap_or_default();
        self.groups.chunks_exact(self.group_head() + dim).map(move |r| {
            if grouped {
                let scale = f32::from_le_bytes([r[0], r[1], r[2], r[3]]);
                let members = u32::from_le_bytes([r[4], r[5], r[6], r[7]]) as usize;
                let (own, rest) = ids.split_at(members.saturating_mul(ID).min(ids.len()));
                ids = rest;
                Group { scale, codes: &r[GROUP_HEAD..], ids: own }
            } else {
                let scale = f32::from_le_bytes([r[8], r[9], r[10], r[11]]);
                Group { scale, codes: &r[RECORD_HEAD..], ids: &r[..ID] }
            }
        })
    }

    /// The members as `(id, scale, codes)`: format 2 group by group, ids ascending within a
    /// group; format 1 in stored order.
    ///
    /// The codes are the stored bytes, each an `i8` in two's complement (`byte as i8`): safe Rust
    /// cannot view bytes as `i8` without copying. [`dot_i8_bytes`](crate::dot_i8_bytes) scores
    /// them against `i8` codes directly.
    pub fn iter(&self) -> impl Iterator<Item = (i64, f32, &'a [u8])> + use<'a> {
        self.groups().flat_map(|g| g.ids().map(move |id| (id, g.scale, g.codes)))
    }
}

/// Members with identical scale and codes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group<'a> {
    pub(crate) scale: f32,
    pub(crate) codes: &'a [u8],
    /// The members' ids, ascending, as little-endian i64s.
    ids: &'a [u8],
}

impl<'a> Group<'a> {
    /// The members' ids, ascending.
    pub(crate) fn ids(&self) -> impl Iterator<Item = i64> + use<'a> {
        self.ids
            .chunks_exact(ID)
            .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }
}

/// Checks a format 2 blob: sizes, group counts and ascending ids.
fn parse_grouped(dim: usize, blob: &[u8]) -> Result<ListView<'_>, Error> {
    let (count, body) = BLOB.read_header(blob, dim)?;
    let short = || corrupt(format!("{} bytes are too short for their counts", blob.len()));
    let groups = body.get(..GROUPS_FIELD).ok_or_else(short)?;
    let groups = u32::from_le_bytes([groups[0], groups[1], groups[2], groups[3]]) as usize;
    let body = &body[GROUPS_FIELD..];
    let group_bytes = groups.checked_mul(GROUP_HEAD + dim).ok_or_else(short)?;
    if count.checked_mul(ID).and_then(|n| n.checked_add(group_bytes)) != Some(body.len()) {
        return Err(corrupt(format!(
            "{} bytes for {count} members in {groups} groups of {dim} dimensions",
            blob.len()
        )));
    }
    let (records, ids) = body.split_at(group_bytes);
    let view = ListView { dim, count, groups: records, ids: Some(ids) };
    let mut members = 0usize;
    for r in records.chunks_exact(GROUP_HEAD + dim) {
        let size = u32::from_le_bytes([r[4], r[5], r[6], r[7]]) as usize;
        if size == 0 {
            return Err(corrupt("a group has no members".to_owned()));
        }
        members = members.saturating_add(size);
    }
    if members != count {
        return Err(corrupt(format!("groups of {members} members for a count of {count}")));
    }
    for g in view.groups() {
        let ascending = g.ids().zip(g.ids().skip(1)).all(|(a, b)| a <= b);
        if !ascending {
            return Err(corrupt("a group's ids are not ascending".to_owned()));
        }
    }
    Ok(view)
}

fn corrupt(detail: String) -> Error {
    BLOB.corrupt(detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members() -> Vec<(i64, f32, Vec<i8>)> {
        vec![
            (7, 0.5, vec![1, -2, 127]),
            (-3, 0.0, vec![0, 0, 0]),
            (i64::MAX, 1e-3, vec![-127, 5, -128]),
        ]
    }

    #[test]
    fn a_checked_list_views_as_a_parse_does_and_refuses_what_parse_refuses() {
        let checked = CheckedList::new(3, blob()).unwrap();
        let raw = blob();
        let parsed = ListView::parse(3, &raw).unwrap();
        assert!(checked.view().iter().eq(parsed.iter()));
        assert!(CheckedList::new(4, blob()).is_err());
        assert!(CheckedList::new(3, blob()[..20].to_vec()).is_err());
    }

    fn blob() -> Vec<u8> {
        let m = members();
        let refs: Vec<(i64, f32, &[i8])> =
            m.iter().map(|(i, s, c)| (*i, *s, c.as_slice())).collect();
        encode_list(3, &refs)
    }

    fn as_i8(b: &[u8]) -> Vec<i8> {
        b.iter().map(|&x| x as i8).collect()
    }

    #[test]
    fn encode_parse_round_trip() {
        let b = blob();
        // Header, group count, three groups of one, three ids.
        assert_eq!(b.len(), 16 + 4 + 3 * (8 + 3) + 3 * 8);
        let view = ListView::parse(3, &b).unwrap();
        assert_eq!(view.len(), 3);
        assert_eq!(view.groups_len(), 3);
        assert!(!view.is_empty());
        let back: Vec<(i64, f32, Vec<i8>)> =
            view.iter().map(|(i, s, c)| (i, s, as_i8(c))).collect();
        let mut expected = members();
        expected.sort_by_key(|m| m.0);
        assert_eq!(back, expected);
        let empty = encode_list(3, &[]);
        let view = ListView::parse(3, &empty).unwrap();
        assert!(view.is_empty());
        assert_eq!(view.iter().count(), 0);
    }

    #[test]
    fn identical_members_form_one_group_with_ascending_ids() {
        let (a, b) = (vec![1i8, 2, 3], vec![1i8, 2, 4]);
        let m: Vec<(i64, f32, &[i8])> =
            vec![(9, 0.5, &a), (4, 0.5, &b), (2, 0.5, &a), (7, 0.25, &a), (-1, 0.5, &a)];
        let blob = encode_list(3, &m);
        let view = ListView::parse(3, &blob).unwrap();
        assert_eq!((view.len(), view.groups_len()), (5, 3));
        let groups: Vec<(f32, Vec<i8>, Vec<i64>)> =
            view.groups().map(|g| (g.scale, as_i8(g.codes), g.ids().collect())).collect();
        // Groups by lowest id; a different scale is a different group.
        assert_eq!(
            groups,
            [
                (0.5, a.clone(), vec![-1, 2, 9]),
                (0.5, b.clone(), vec![4]),
                (0.25, a.clone(), vec![7])
            ]
        );
        // The order the members came in does not matter.
        let mut reversed = m.clone();
        reversed.reverse();
        assert_eq!(encode_list(3, &reversed), blob);
    }

    /// A list in format 1, as stores built before groups hold it.
    fn encode_v1(dim: usize, members: &[(i64, f32, &[i8])]) -> Vec<u8> {
        let mut out = Vec::new();
        BLOB_V1.write_header(&mut out, dim, members.len());
        for (id, scale, codes) in members {
            push_record(&mut out, dim, *id, *scale, codes.iter().map(|&c| c as u8));
        }
        out
    }

    #[test]
    fn format_1_lists_still_parse_and_read_as_groups_of_one() {
        let m = members();
        let refs: Vec<(i64, f32, &[i8])> =
            m.iter().map(|(i, s, c)| (*i, *s, c.as_slice())).collect();
        let old = encode_v1(3, &refs);
        assert_eq!(old.len(), 16 + 3 * 15);
        let view = ListView::parse(3, &old).unwrap();
        assert_eq!((view.len(), view.groups_len()), (3, 3));
        let back: Vec<(i64, f32, Vec<i8>)> =
            view.iter().map(|(i, s, c)| (i, s, as_i8(c))).collect();
        assert_eq!(back, m, "stored order");
        let checked = CheckedList::new(3, old.clone()).unwrap();
        assert!(checked.view().iter().eq(view.iter()));
        // Appending to an old list writes the new format.
        assert_eq!(append_to_list(3, &old, &[]).unwrap(), blob());
        assert!(ListView::parse(3, &old[..old.len() - 1]).is_err());
        let mut x = old.clone();
        x[16 + 8..16 + 12].copy_from_slice(&(-1.0f32).to_le_bytes());
        assert!(ListView::parse(3, &x).is_err());
    }

    #[test]
    fn append_equals_encoding_everything() {
        let m = members();
        let refs: Vec<(i64, f32, &[i8])> =
            m.iter().map(|(i, s, c)| (*i, *s, c.as_slice())).collect();
        let first = encode_list(3, &refs[..1]);
        assert_eq!(append_to_list(3, &first, &refs[1..]).unwrap(), blob());
        assert!(matches!(append_to_list(4, &first, &refs[1..]), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn without_members_equals_encoding_the_members_kept() {
        let m = members();
        let refs: Vec<(i64, f32, &[i8])> =
            m.iter().map(|(i, s, c)| (*i, *s, c.as_slice())).collect();
        let gone = refs[1].0;
        let kept: Vec<(i64, f32, &[i8])> = refs.iter().copied().filter(|r| r.0 != gone).collect();
        assert_eq!(without_members(3, &blob(), |id| id == gone).unwrap(), encode_list(3, &kept));
        assert_eq!(without_members(3, &blob(), |_| false).unwrap(), blob());
        assert_eq!(without_members(3, &blob(), |_| true).unwrap(), encode_list(3, &[]));
        assert!(matches!(without_members(4, &blob(), |_| true), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn encode_lists_equals_encoding_each_list() {
        let dim = 3;
        let ids = [5, -1, 9, 2];
        let vectors = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.6, 0.8, 0.0, 0.0, 0.0, 0.0];
        let centroids =
            Centroids::from_rows(dim, vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]).unwrap();
        let assignment = [0, 1, 1, 0];
        let blobs = encode_lists(&ids, &vectors, &centroids, &assignment, 2).unwrap();
        assert_eq!(blobs.len(), 3);
        let mut codes = Vec::new();
        let scales: Vec<f32> = vectors.chunks(dim).map(|v| quantize(v, &mut codes)).collect();
        for (l, blob) in blobs.iter().enumerate() {
            let members: Vec<(i64, f32, &[i8])> = (0..4)
                .filter(|&i| assignment[i] == l as u32)
                .map(|i| (ids[i], scales[i], &codes[i * dim..(i + 1) * dim]))
                .collect();
            assert_eq!(*blob, encode_list(dim, &members), "list {l}");
        }
        assert!(ListView::parse(dim, &blobs[2]).unwrap().is_empty());
        let shape = |r: Result<Vec<Vec<u8>>, Error>| matches!(r, Err(Error::Shape { .. }));
        assert!(shape(encode_lists(&ids[..3], &vectors, &centroids, &assignment, 1)));
        assert!(shape(encode_lists(&ids, &vectors[..11], &centroids, &assignment, 1)));
        assert!(shape(encode_lists(&ids, &vectors, &centroids, &[0, 1, 3, 0], 1)));
    }

    #[test]
    fn short_codes_are_padded_and_bad_scales_zeroed() {
        let b = encode_list(3, &[(1, f32::NAN, &[4][..]), (2, -1.0, &[1, 2, 3, 4][..])]);
        let view = ListView::parse(3, &b).unwrap();
        let back: Vec<(i64, f32, Vec<i8>)> =
            view.iter().map(|(i, s, c)| (i, s, as_i8(c))).collect();
        assert_eq!(back, [(1, 0.0, vec![4, 0, 0]), (2, 0.0, vec![1, 2, 3])]);
    }

    #[test]
    fn corrupt_blobs_are_refused() {
        let b = blob();
        let corrupt = |r: Result<ListView<'_>, Error>| matches!(r, Err(Error::Corrupt { .. }));
        assert!(corrupt(ListView::parse(3, &[])));
        assert!(corrupt(ListView::parse(3, &b[..15])));
        assert!(corrupt(ListView::parse(3, &b[..19])));
        assert!(corrupt(ListView::parse(3, &b[..b.len() - 1])));
        assert!(corrupt(ListView::parse(3, &b[..b.len() - 8])));
        assert!(corrupt(ListView::parse(4, &b)));
        assert!(CheckedList::new(3, b[..b.len() - 1].to_vec()).is_err());
        let mut extra = b.clone();
        extra.push(0);
        assert!(corrupt(ListView::parse(3, &extra)));
        let patched = |at: usize, bytes: &[u8]| {
            let mut x = b.clone();
            x[at..at + bytes.len()].copy_from_slice(bytes);
            x
        };
        assert!(corrupt(ListView::parse(3, &patched(1, b"X"))));
        assert!(corrupt(ListView::parse(3, &patched(4, &[3]))));
        assert!(corrupt(ListView::parse(3, &patched(12, &u32::MAX.to_le_bytes()))));
        assert!(corrupt(ListView::parse(3, &patched(16, &u32::MAX.to_le_bytes()))));
        // The first group: its scale, then its member count.
        assert!(corrupt(ListView::parse(3, &patched(20, &f32::INFINITY.to_le_bytes()))));
        assert!(corrupt(ListView::parse(3, &patched(20, &(-1.0f32).to_le_bytes()))));
        assert!(corrupt(ListView::parse(3, &patched(24, &0u32.to_le_bytes()))));
        assert!(corrupt(ListView::parse(3, &patched(24, &2u32.to_le_bytes()))));
        // Two members in one group with their ids descending.
        let one = [1i8, 1, 1];
        let two = encode_list(3, &[(1, 0.5, &one[..]), (2, 0.5, &one[..])]);
        let ids_at = two.len() - 16;
        let mut x = two.clone();
        x[ids_at..ids_at + 8].copy_from_slice(&3i64.to_le_bytes());
        assert!(corrupt(ListView::parse(3, &x)));
        assert!(ListView::parse(3, &two).is_ok());
    }
}
