//! Scalar int8 quantization and the dot products the index is built on.
//!
//! The loops are written over fixed-width chunks (`chunks_exact`) with one accumulator per lane,
//! so the compiler turns them into SIMD code on the baseline target without `unsafe` or
//! intrinsics; the lane layout also fixes the order of floating-point additions, so a dot product
//! is bit-identical wherever it is computed. The integer products of widened codes, the inner
//! loop of a search, a join and an assignment, run an AVX2 kernel where the CPU has one
//! ([`simd`](crate::simd)): integer sums do not depend on their order, so the result is the same.

/// Lanes of the integer dot products: eight SSE registers of i32 accumulators.
const INT_LANES: usize = 32;

/// Largest code magnitude: codes are symmetric, `-127..=127`.
pub(crate) const CODE_MAX: f32 = 127.0;

/// Quantizes `v` to int8 codes: appends `v[i] × 127 / max|v|` rounded to the nearest integer
/// (ties to even) for every component to `out`, and returns the scale `‖v‖ / ‖codes‖`, so that
/// `codes × scale` has the length of `v`.
///
/// The step between codes is `max|v| / 127`; each component is reconstructed within about half
/// a step. Because the scale normalizes the codes rather than mapping the largest one back,
/// `scale_a × scale_b × dot_i8(a, b)` of two unit vectors is exactly the cosine of their codes:
/// identical vectors score 1 (within f32 rounding) and no other code can outscore them, which
/// keeps near-duplicate vectors in a sensible order.
///
/// The zero vector has scale 0 and all-zero codes. Non-finite components are coded 0 and count
/// for neither the step nor the length.
pub fn quantize(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let norm2 = dot_f32(v, v);
    let max = max_abs(v);
    let inv = CODE_MAX / max;
    if !(norm2.is_finite() && inv.is_finite()) {
        // Non-finite or huge components (squares overflow), or only subnormal ones.
        return quantize_wide(v, out);
    }
    let start = out.len();
    out.resize(start + v.len(), 0);
    if max == 0.0 {
        return 0.0;
    }
    for (o, &x) in out[start..].iter_mut().zip(v) {
        let y = (x * inv).clamp(-CODE_MAX, CODE_MAX);
        // Adding 1.5 × 2²³ rounds to an integer (ties to even) held in the low mantissa bits:
        // unlike `f32::round` and a saturating `as`, this vectorizes on the baseline target.
        *o = ((y + ROUNDER).to_bits() as i32 - ROUNDER_BITS) as i8;
    }
    let code_norm = f64::from(dot_i8(&out[start..], &out[start..])).sqrt();
    if code_norm > 0.0 { (f64::from(norm2).sqrt() / code_norm) as f32 } else { 0.0 }
}

/// `1.5 × 2²³`: adding it to a float of magnitude below 2²² rounds it to an integer.
const ROUNDER: f32 = 12_582_912.0;
/// The bits of [`ROUNDER`], whose low mantissa bits then hold the integer.
const ROUNDER_BITS: i32 = 0x4B40_0000;

/// [`quantize`] in f64, for vectors [`quantize`]'s f32 arithmetic cannot take.
fn quantize_wide(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let finite = |x: f32| if x.is_finite() { f64::from(x) } else { 0.0 };
    let max = v.iter().fold(0.0f64, |m, &x| m.max(finite(x).abs()));
    let start = out.len();
    out.resize(start + v.len(), 0);
    if max == 0.0 {
        return 0.0;
    }
    let inv = f64::from(CODE_MAX) / max;
    for (o, &x) in out[start..].iter_mut().zip(v) {
        *o = (finite(x) * inv).round_ties_even().clamp(-127.0, 127.0) as i8;
    }
    let code_norm = f64::from(dot_i8(&out[start..], &out[start..])).sqrt();
    let norm = v.iter().map(|&x| finite(x) * finite(x)).sum::<f64>().sqrt();
    if code_norm > 0.0 { (norm / code_norm) as f32 } else { 0.0 }
}

/// `max |v[i]|` over eight lanes, so that it vectorizes; NaN components are skipped.
fn max_abs(v: &[f32]) -> f32 {
    let max = |m: f32, x: f32| if x.abs() > m { x.abs() } else { m };
    let chunks = v.chunks_exact(8);
    let tail = chunks.remainder().iter().fold(0.0f32, |m, &x| max(m, x));
    let mut acc = [0.0f32; 8];
    for c in chunks {
        for j in 0..8 {
            acc[j] = max(acc[j], c[j]);
        }
    }
    acc.iter().fold(tail, |m, &x| max(m, x))
}

/// An integer dot product over 32 lanes of i32 accumulators, which the compiler turns into
/// `pmaddwd` on the baseline x86-64 target. Extra elements of the longer slice are ignored;
/// sums wrap rather than overflow (they cannot below 131,072 dimensions of int8 codes).
#[inline(always)]
fn dot_lanes<A: Copy, B: Copy>(
    a: &[A],
    b: &[B],
    fa: impl Fn(A) -> i32,
    fb: impl Fn(B) -> i32,
) -> i32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (ca, cb) = (a.chunks_exact(INT_LANES), b.chunks_exact(INT_LANES));
    let tail = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .fold(0i32, |s, (&x, &y)| s.wrapping_add(fa(x) * fb(y)));
    let mut acc = [0i32; INT_LANES];
    for (x, y) in ca.zip(cb) {
        for j in 0..INT_LANES {
            acc[j] = acc[j].wrapping_add(fa(x[j]) * fb(y[j]));
        }
    }
    acc.iter().fold(tail, |s, &x| s.wrapping_add(x))
}

/// Dot product of two int8 code vectors, exact in i32. Extra elements of the longer slice are
/// ignored.
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    dot_lanes(a, b, i32::from, i32::from)
}

/// [`dot_i8`] against codes stored as bytes (each byte is an `i8` in two's complement), as
/// [`ListView`](crate::ListView) hands them out without copying.
pub fn dot_i8_bytes(a: &[i8], b: &[u8]) -> i32 {
    dot_lanes(a, b, i32::from, |y| i32::from(y as i8))
}

/// Codes widened to i16 once, for a vector scored against many others: the inner loop then
/// skips one of the two sign extensions.
pub(crate) fn widen(codes: &[i8]) -> Vec<i16> {
    codes.iter().map(|&c| i16::from(c)).collect()
}

/// [`dot_i8`] of widened codes: the AVX2 kernel where the CPU has it, else the portable one
/// (the same i32, see [`simd`](crate::simd)).
pub(crate) fn dot_wide(a: &[i16], b: &[i16]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::has_avx2() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { crate::simd::dot_wide_avx2(a, b) };
    }
    dot_wide_portable(a, b)
}

/// [`dot_wide`] on the baseline target.
pub(crate) fn dot_wide_portable(a: &[i16], b: &[i16]) -> i32 {
    dot_lanes(a, b, i32::from, i32::from)
}

/// [`dot_i8_bytes`] of widened codes: the AVX2 kernel where the CPU has it, else the portable
/// one (the same i32, see [`simd`](crate::simd)).
pub(crate) fn dot_wide_bytes(a: &[i16], b: &[u8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::has_avx2() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { crate::simd::dot_wide_bytes_avx2(a, b) };
    }
    dot_wide_bytes_portable(a, b)
}

/// [`dot_wide_bytes`] on the baseline target.
pub(crate) fn dot_wide_bytes_portable(a: &[i16], b: &[u8]) -> i32 {
    dot_lanes(a, b, i32::from, |y| i32::from(y as i8))
}

/// Dot product of two f32 vectors. Extra elements of the longer slice are ignored.
///
/// The summation order is fixed (eight four-lane accumulators, summed pairwise, then the tail),
/// so the result is the same bit for bit on every call with the same inputs, and whichever
/// kernel runs: the AVX2 one where the CPU has it (the same accumulators, two to a register;
/// see [`simd`](crate::simd)), else the portable one.
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::has_avx2() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { crate::simd::dot_f32_avx2(a, b) };
    }
    dot_f32_portable(a, b)
}

/// [`dot_f32`] on the baseline target.
pub(crate) fn dot_f32_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (ca, cb) = (a.chunks_exact(32), b.chunks_exact(32));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    let mut acc = [[0.0f32; 4]; 8];
    for (x, y) in ca.zip(cb) {
        for r in 0..8 {
            for l in 0..4 {
                acc[r][l] += x[r * 4 + l] * y[r * 4 + l];
            }
        }
    }
    let mut s = [0.0f32; 4];
    for l in 0..4 {
        s[l] = ((acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]))
            + ((acc[4][l] + acc[5][l]) + (acc[6][l] + acc[7][l]));
    }
    ((s[0] + s[1]) + (s[2] + s[3])) + tail
}

/// Scales `v` to unit length in place; the zero vector (or a non-finite norm) is left as it is.
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = dot_f32(v, v).sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_round_trip_is_within_half_a_step() {
        let v: Vec<f32> = (0..300).map(|i| ((i as f32) * 0.37).sin() * 0.2).collect();
        let mut codes = Vec::new();
        let scale = quantize(&v, &mut codes);
        assert_eq!(codes.len(), v.len());
        let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        let step = max / 127.0;
        // The scale is the step corrected for the rounding of all codes: within a percent.
        assert!((scale / step - 1.0).abs() < 0.01, "{scale} {step}");
        for (x, &c) in v.iter().zip(&codes) {
            assert!((x - f32::from(c) * scale).abs() <= step * 0.6, "{x} {c}");
        }
        assert!(codes.iter().any(|&c| c.abs() == 127));
        // The decoded vector has the length of the input.
        let norm = dot_f32(&v, &v).sqrt();
        let decoded = (dot_i8(&codes, &codes) as f32).sqrt() * scale;
        assert!((norm - decoded).abs() < 1e-6 * norm, "{norm} {decoded}");
    }

    #[test]
    fn zero_and_non_finite_vectors_quantize_to_zero_scale() {
        let mut codes = vec![5];
        assert_eq!(quantize(&[0.0; 4], &mut codes), 0.0);
        assert_eq!(codes, [5, 0, 0, 0, 0]);
        codes.clear();
        let scale = quantize(&[f32::NAN, 1.0, f32::INFINITY, -0.5], &mut codes);
        assert_eq!(codes, [0, 127, 0, -64]);
        codes.clear();
        // Ties go to even, on both paths.
        quantize(&[127.0, 0.5, 1.5, -2.5], &mut codes);
        assert_eq!(codes, [127, 0, 2, -2]);
        codes.clear();
        quantize(&[127.0, 0.5, 1.5, -2.5, f32::NAN], &mut codes);
        assert_eq!(codes, [127, 0, 2, -2, 0]);
        codes.clear();
        let expected = (1.25f64.sqrt() / f64::from(127 * 127 + 64 * 64).sqrt()) as f32;
        assert_eq!(scale, expected);
    }

    #[test]
    fn dot_products_match_naive() {
        for n in [0, 1, 15, 31, 32, 33, 64, 255, 256, 257] {
            let a: Vec<i8> = (0..n).map(|i| ((i * 37 + 11) % 255) as i8).collect();
            let b: Vec<i8> = (0..n).map(|i| ((i * 91 + 3) % 253) as i8).collect();
            let naive: i32 = a.iter().zip(&b).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
            assert_eq!(dot_i8(&a, &b), naive);
            let bytes: Vec<u8> = b.iter().map(|&x| x as u8).collect();
            assert_eq!(dot_i8_bytes(&a, &bytes), naive);
            assert_eq!(dot_wide(&widen(&a), &widen(&b)), naive);
            assert_eq!(dot_wide_bytes(&widen(&a), &bytes), naive);

            let fa: Vec<f32> = (0..n).map(|i| (i as f32 * 0.1).cos()).collect();
            let fb: Vec<f32> = (0..n).map(|i| (i as f32 * 0.3).sin()).collect();
            let naive: f64 = fa.iter().zip(&fb).map(|(&x, &y)| f64::from(x) * f64::from(y)).sum();
            assert!((f64::from(dot_f32(&fa, &fb)) - naive).abs() < 1e-4, "{n}");
        }
    }

    #[test]
    fn identical_codes_score_one() {
        let v: Vec<f32> = (0..256).map(|i| ((i * 37 % 101) as f32 - 50.0) / 300.0).collect();
        let mut codes = Vec::new();
        let scale = quantize(&v, &mut codes);
        let norm2 = dot_f32(&v, &v);
        let cos = scale * scale * dot_i8(&codes, &codes) as f32 / norm2;
        assert!((cos - 1.0).abs() < 1e-6, "{cos}");
    }

    #[test]
    fn quantize_survives_extreme_magnitudes() {
        let mut codes = Vec::new();
        let scale = quantize(&[3e38, -3e38, 1e38], &mut codes);
        assert_eq!(codes, [127, -127, 42]);
        assert!(scale.is_finite() && scale > 0.0);
        codes.clear();
        let scale = quantize(&[1e-45, 0.0, -1e-45], &mut codes);
        assert_eq!(codes, [127, 0, -127]);
        assert!(scale.is_finite());
        // The fast path agrees with the f64 path on ordinary vectors.
        let v: Vec<f32> = (0..300).map(|i| ((i * 37 % 101) as f32 - 50.0) / 300.0).collect();
        let (mut fast, mut wide) = (Vec::new(), Vec::new());
        let (a, b) = (quantize(&v, &mut fast), quantize_wide(&v, &mut wide));
        assert_eq!(fast, wide);
        assert!((a - b).abs() <= 1e-6 * b, "{a} {b}");
    }

    proptest::proptest! {
        /// Whichever kernel runs, the integer dot product is the portable one's, bit for bit:
        /// codes of any length (tails included), and i16 inputs beyond widened codes.
        #[test]
        fn the_dispatched_kernels_equal_the_portable_ones(
            a in proptest::collection::vec(proptest::num::i8::ANY, 0..600),
            b in proptest::collection::vec(proptest::num::i8::ANY, 0..600),
            x in proptest::collection::vec(proptest::num::i16::ANY, 0..300),
            y in proptest::collection::vec(proptest::num::i16::ANY, 0..300),
        ) {
            let (wa, wb) = (widen(&a), widen(&b));
            let bytes: Vec<u8> = b.iter().map(|&c| c as u8).collect();
            proptest::prop_assert_eq!(dot_wide_bytes(&wa, &bytes), dot_wide_bytes_portable(&wa, &bytes));
            proptest::prop_assert_eq!(dot_wide(&wa, &wb), dot_wide_portable(&wa, &wb));
            proptest::prop_assert_eq!(dot_wide(&wa, &wb), dot_i8(&a, &b));
            proptest::prop_assert_eq!(dot_wide(&x, &y), dot_wide_portable(&x, &y));
        }

        /// The f32 dot product is the portable one's bit for bit, whichever kernel runs: any
        /// lengths (tails included, unequal ones cut to the shorter) and values of mixed signs
        /// and magnitudes, where another order of additions rounds differently.
        #[test]
        fn the_dispatched_f32_kernel_equals_the_portable_one(
            a in proptest::collection::vec(-1.0f32..1.0, 0..300),
            b in proptest::collection::vec((-1.0f32..1.0, -12i32..12), 0..300),
        ) {
            let b: Vec<f32> = b.iter().map(|&(y, e)| y * 2f32.powi(e)).collect();
            let (fast, portable) = (dot_f32(&a, &b), dot_f32_portable(&a, &b));
            proptest::prop_assert_eq!(fast.to_bits(), portable.to_bits(), "{} {}", fast, portable);
        }
    }

    #[test]
    fn the_avx2_kernels_wrap_as_the_portable_ones_do() {
        // Four −32768s make the one pair sum that overflows i32.
        let a = vec![i16::MIN; 64];
        assert_eq!(dot_wide(&a, &a), dot_wide_portable(&a, &a));
        assert_eq!(dot_wide_portable(&a, &a), 0);
        let codes = vec![-128i8; 4096];
        let bytes: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
        assert_eq!(dot_wide_bytes(&widen(&codes), &bytes), 4096 * 16384);
    }

    #[test]
    fn extreme_codes_do_not_overflow() {
        let a = vec![-128i8; 4096];
        assert_eq!(dot_i8(&a, &a), 4096 * 16384);
    }
}
