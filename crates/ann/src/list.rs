//! Inverted lists packed as one blob each, and a zero-copy view over a stored blob.
//!
//! # Storage layout
//!
//! [`encode_list`] writes, all little-endian:
//!
//! | bytes            | field                              |
//! |------------------|------------------------------------|
//! | 0..4             | magic `CGIL`                       |
//! | 4..8             | format version, u32 = 1            |
//! | 8..12            | dim, u32                           |
//! | 12..16           | count (members), u32               |
//! | 16..             | count records of `12 + dim` bytes  |
//!
//! A record is the member's id (i64), its scale (f32, finite, ≥ 0) and its `dim` int8 codes
//! (see [`quantize`](crate::quantize)). Members keep the order they were given in.

use crate::blob::{BlobKind, HEADER};
use crate::centroids::Centroids;
use crate::error::Error;
use crate::parallel::map_ranges;
use crate::quant::quantize;
use crate::train::rows;

const BLOB: BlobKind = BlobKind { magic: b"CGIL", version: 1, what: WHAT };
const WHAT: &str = "inverted list";

/// Bytes of a member record before its codes: id and scale.
const RECORD_HEAD: usize = 12;

/// Packs the members of one inverted list, `(id, scale, codes)` each, as one blob (see the
/// module docs for the layout). Every `codes` slice must have `dim` elements: shorter ones are
/// padded with zeros and longer ones cut, so the blob always parses.
pub fn encode_list(dim: usize, members: &[(i64, f32, &[i8])]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + members.len() * (RECORD_HEAD + dim));
    BLOB.write_header(&mut out, dim, members.len());
    for (id, scale, codes) in members {
        push_record(&mut out, dim, *id, *scale, codes.iter().map(|&c| c as u8));
    }
    out
}

/// Appends `members` to an encoded list: the same as encoding the old members followed by the
/// new ones.
///
/// # Errors
///
/// [`Error::Corrupt`] if `blob` does not parse as a list of `dim`.
pub fn append_to_list(
    dim: usize,
    blob: &[u8],
    members: &[(i64, f32, &[i8])],
) -> Result<Vec<u8>, Error> {
    let view = ListView::parse(dim, blob)?;
    let count = view.len() + members.len();
    let count =
        u32::try_from(count).map_err(|_| corrupt(format!("{count} members overflow the count")))?;
    let mut out = Vec::with_capacity(blob.len() + members.len() * (RECORD_HEAD + dim));
    out.extend_from_slice(blob);
    out[12..16].copy_from_slice(&count.to_le_bytes());
    for (id, scale, codes) in members {
        push_record(&mut out, dim, *id, *scale, codes.iter().map(|&c| c as u8));
    }
    Ok(out)
}

/// Quantizes `vectors` (row `i` has id `ids[i]` and goes to list `assignment[i]`) and encodes
/// every list of `centroids` as one blob, members in row order: `result[l]` is list `l`'s blob,
/// empty lists included. Quantization runs on `threads` threads; the blobs do not depend on it.
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
    /// Every list's blob so far: its header (count patched by [`ListsBuilder::finish`]) and
    /// its members in the order they were pushed.
    blobs: Vec<Vec<u8>>,
    counts: Vec<u32>,
}

impl<'c> ListsBuilder<'c> {
    /// No members yet, one empty list per centroid.
    pub fn new(centroids: &'c Centroids) -> ListsBuilder<'c> {
        let dim = centroids.dim();
        let blobs = (0..centroids.len())
            .map(|_| {
                let mut b = Vec::new();
                BLOB.write_header(&mut b, dim, 0);
                b
            })
            .collect();
        ListsBuilder { centroids, blobs, counts: vec![0; centroids.len()] }
    }

    /// Assigns every row of `vectors` to its nearest list ([`assign`](crate::assign)) and adds
    /// it there, after the members pushed before; returns the rows' lists.
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
    /// `threads` threads and adds each row to its list, after the members pushed before.
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
        let lists = self.blobs.len();
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
                let blob = &mut self.blobs[assignment[row] as usize];
                push_record(blob, dim, ids[row], *scale, codes.iter().map(|&c| c as u8));
                row += 1;
            }
        }
        self.counts = counts;
        Ok(())
    }

    /// Every list's blob, `result[l]` for list `l`, empty lists included.
    pub fn finish(self) -> Vec<Vec<u8>> {
        let mut blobs = self.blobs;
        for (blob, count) in blobs.iter_mut().zip(&self.counts) {
            // The count is the header's last field (see the module docs).
            blob[12..16].copy_from_slice(&count.to_le_bytes());
        }
        blobs
    }
}

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

/// An encoded inverted list checked once, for a list kept and searched many times (a cache):
/// its views are made without checking every member again.
#[derive(Debug, Clone)]
pub struct CheckedList {
    dim: usize,
    blob: Vec<u8>,
}

impl CheckedList {
    /// Checks `blob` as [`ListView::parse`] does and keeps it.
    ///
    /// # Errors
    ///
    /// As [`ListView::parse`].
    pub fn new(dim: usize, blob: Vec<u8>) -> Result<CheckedList, Error> {
        ListView::parse(dim, &blob)?;
        Ok(CheckedList { dim, blob })
    }

    /// The list's view, without a second pass over its members.
    pub fn view(&self) -> ListView<'_> {
        // The blob parsed when it was checked, so its records start after the header and
        // hold whole members.
        ListView { dim: self.dim, records: self.blob.get(HEADER..).unwrap_or_default() }
    }
}

/// A zero-copy view over an encoded inverted list.
#[derive(Debug, Clone, Copy)]
pub struct ListView<'a> {
    dim: usize,
    records: &'a [u8],
}

impl<'a> ListView<'a> {
    /// Checks `blob` and views it as a list of `dim`-dimensional members.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] if the blob is short or truncated, has the wrong magic, version or
    /// dimension, or a member scale that is negative or not finite. Never panics.
    pub fn parse(dim: usize, blob: &'a [u8]) -> Result<ListView<'a>, Error> {
        let (count, records) = BLOB.read_header(blob, dim)?;
        if count.checked_mul(RECORD_HEAD + dim) != Some(records.len()) {
            return Err(corrupt(format!(
                "{} bytes for {count} members of {dim} dimensions",
                blob.len()
            )));
        }
        let view = ListView { dim, records };
        if view.iter().any(|(_, scale, _)| !(scale.is_finite() && scale >= 0.0)) {
            return Err(corrupt("a member scale is negative or not finite".to_owned()));
        }
        Ok(view)
    }

    /// The dimension of the members.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.records.len() / (RECORD_HEAD + self.dim)
    }

    /// Whether the list has no members.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The members in stored order, as `(id, scale, codes)`.
    ///
    /// The codes are the stored bytes, each an `i8` in two's complement (`byte as i8`): safe Rust
    /// cannot view bytes as `i8` without copying. [`dot_i8_bytes`](crate::dot_i8_bytes) scores
    /// them against `i8` codes directly.
    pub fn iter(&self) -> impl Iterator<Item = (i64, f32, &'a [u8])> + use<'a> {
        self.records.chunks_exact(RECORD_HEAD + self.dim).map(|r| {
            let (head, codes) = r.split_at(RECORD_HEAD);
            let id = i64::from_le_bytes([
                head[0], head[1], head[2], head[3], head[4], head[5], head[6], head[7],
            ]);
            let scale = f32::from_le_bytes([head[8], head[9], head[10], head[11]]);
            (id, scale, codes)
        })
    }
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
        assert_eq!(b.len(), 16 + 3 * 15);
        let view = ListView::parse(3, &b).unwrap();
        assert_eq!(view.len(), 3);
        assert!(!view.is_empty());
        let back: Vec<(i64, f32, Vec<i8>)> =
            view.iter().map(|(i, s, c)| (i, s, as_i8(c))).collect();
        assert_eq!(back, members());
        let empty = encode_list(3, &[]);
        let view = ListView::parse(3, &empty).unwrap();
        assert!(view.is_empty());
        assert_eq!(view.iter().count(), 0);
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
        assert!(corrupt(ListView::parse(3, &b[..b.len() - 1])));
        assert!(corrupt(ListView::parse(3, &b[..b.len() - 15])));
        assert!(corrupt(ListView::parse(4, &b)));
        let mut extra = b.clone();
        extra.push(0);
        assert!(corrupt(ListView::parse(3, &extra)));
        let mut x = b.clone();
        x[1] = b'X';
        assert!(corrupt(ListView::parse(3, &x)));
        let mut x = b.clone();
        x[4] = 2;
        assert!(corrupt(ListView::parse(3, &x)));
        let mut x = b.clone();
        x[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(corrupt(ListView::parse(3, &x)));
        let mut x = b.clone();
        x[16 + 8..16 + 12].copy_from_slice(&f32::INFINITY.to_le_bytes());
        assert!(corrupt(ListView::parse(3, &x)));
        let mut x = b.clone();
        x[16 + 8..16 + 12].copy_from_slice(&(-1.0f32).to_le_bytes());
        assert!(corrupt(ListView::parse(3, &x)));
    }
}
