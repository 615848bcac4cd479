//! model/modes.py ConcreteMode's member ids: Python's `random.Random(seed)` (MT19937, seeded as
//! CPython seeds it from an int) and `uuid.UUID(int=getrandbits(128), version=4)`, so the native
//! concrete mode hands out exactly the ids the Python model does.

const N: usize = 624;
const M: usize = 397;

pub struct PyRandom {
    mt: [u32; N],
    mti: usize,
}

impl PyRandom {
    /// `random.Random(seed)` for a seed 0 <= seed < 2**32.
    pub fn new(seed: u32) -> PyRandom {
        let mut r = PyRandom { mt: [0; N], mti: N };
        r.init_genrand(19650218);
        // init_by_array with the key [seed]
        let key = [seed];
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1664525)).wrapping_add(key[j]).wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                r.mt[0] = r.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1566083941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                r.mt[0] = r.mt[N - 1];
                i = 1;
            }
        }
        r.mt[0] = 0x8000_0000;
        r.mti = N;
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..N {
            let prev = self.mt[i - 1] ^ (self.mt[i - 1] >> 30);
            self.mt[i] = 1812433253u32.wrapping_mul(prev).wrapping_add(i as u32);
        }
        self.mti = N;
    }

    pub fn next_u32(&mut self) -> u32 {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const MATRIX_A: u32 = 0x9908_b0df;
        if self.mti >= N {
            for k in 0..N {
                let y = (self.mt[k] & UPPER) | (self.mt[(k + 1) % N] & LOWER);
                let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
                self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ mag;
            }
            self.mti = 0;
        }
        let mut y = self.mt[self.mti];
        self.mti += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// `getrandbits(128)`: four words, the first the least significant.
    pub fn bits128(&mut self) -> u128 {
        let mut v: u128 = 0;
        for i in 0..4 {
            v |= (self.next_u32() as u128) << (32 * i);
        }
        v
    }

    /// `str(uuid.UUID(int=getrandbits(128), version=4))`.
    pub fn uuid4(&mut self) -> String {
        let mut v = self.bits128();
        v &= !(0xc000u128 << 48);
        v |= 0x8000u128 << 48;
        v &= !(0xf000u128 << 64);
        v |= 4u128 << 76;
        let h = format!("{v:032x}");
        format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
    }
}

#[cfg(test)]
mod tests {
    use super::PyRandom;

    #[test]
    fn member_ids_are_python_concrete_modes() {
        // model.modes.ConcreteMode(0).new_member_id(g, "c"), three times
        let mut r = PyRandom::new(0);
        let ids: Vec<String> = (0..3).map(|_| format!("c-{}", r.uuid4())).collect();
        assert_eq!(
            ids,
            [
                "c-e3e70682-c209-4cac-a29f-6fbed82c07cd",
                "c-f728b4fa-4248-4e3a-8a5d-2f346baa9455",
                "c-eb1167b3-67a9-4378-bc65-c1e582e2e662"
            ]
        );
    }
}
