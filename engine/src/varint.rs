//! Variable-length numbers in byte strings: LEB128 (7 bits a byte, high bit set on all but the
//! last) and zigzag for signed values (small magnitudes, small codes). One writer for the state,
//! step-record and successor-stream encodings.

/// `v` as LEB128.
pub fn put_var(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The LEB128 number at `b[*i..]`; `*i` moves past it.
pub fn get_var(b: &[u8], i: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let x = b[*i];
        *i += 1;
        v |= ((x & 0x7F) as u64) << shift;
        if x < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// A signed value as a varint (zigzag).
pub fn put_zz(out: &mut Vec<u8>, v: i64) {
    put_var(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// The zigzag number at `b[*i..]`.
pub fn get_zz(b: &[u8], i: &mut usize) -> i64 {
    let v = get_var(b, i);
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `values` one after the other with `put` and reads them back with `get`.
    fn round_trip<T: Copy + PartialEq + std::fmt::Debug>(
        values: &[T],
        put: fn(&mut Vec<u8>, T),
        get: fn(&[u8], &mut usize) -> T,
    ) {
        let mut out = Vec::new();
        for &v in values {
            put(&mut out, v);
        }
        let mut i = 0;
        for &v in values {
            assert_eq!(get(&out, &mut i), v);
        }
        assert_eq!(i, out.len());
    }

    #[test]
    fn numbers_round_trip_and_small_ones_take_one_byte() {
        round_trip(&[0u64, 1, 0x7F, 0x80, 0x3FFF, 0x4000, u32::MAX as u64, u64::MAX], put_var, get_var);
        let mut one = Vec::new();
        put_var(&mut one, 0x7F);
        assert_eq!(one.len(), 1);
        one.clear();
        put_var(&mut one, 0x80);
        assert_eq!(one, vec![0x80, 0x01]);
    }

    #[test]
    fn signed_numbers_round_trip_and_sign_is_not_lost() {
        round_trip(&[0i64, -1, 1, -64, 63, -65, i32::MIN as i64, i32::MAX as i64, i64::MIN], put_zz, get_zz);
        let mut a = Vec::new();
        let mut b = Vec::new();
        put_zz(&mut a, -1);
        put_zz(&mut b, 1);
        assert_ne!(a, b);
        assert_eq!(a.len(), 1);
    }
}
