//! `Recent`: what was answered lately for a short key, in a table of fixed size (direct-mapped:
//! a key's slot is chosen by its hash, and the next key of that slot replaces it). The explorer's
//! caches keep canonical keys by world in one: a state's successors repeat (one world by several
//! actions or outcomes), and so do those of the states expanded one after the other, so about
//! half the keys are answered here, at a fixed cost in memory that does not grow with the run.

/// The longest key (`Recent::find`), in bytes.
pub const KEY: usize = 39;
const KEY_AREA: usize = KEY + 1;

/// Up to `slots` answers of up to `V` bytes, each with its key.
pub struct Recent<const V: usize> {
    /// A slot: the key (its length, then it, zero-padded to `KEY_AREA`), the answer's length
    /// (0: an empty slot), the answer.
    slots: Vec<u8>,
    n: usize,
    /// The key `find` last looked for.
    probe: [u8; KEY_AREA],
}

/// The 8 bytes of `b` at `i`, as a number.
fn word(b: &[u8], i: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(x)
}

impl<const V: usize> Recent<V> {
    const SLOT: usize = KEY_AREA + 1 + V;

    /// A table of `slots` slots (a power of two), allocated when first used.
    pub fn new(slots: usize) -> Self {
        assert!(slots.is_power_of_two() && V < 256);
        Recent { slots: Vec::new(), n: slots, probe: [0; KEY_AREA] }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.slots.capacity()
    }

    /// Forgets every answer.
    pub fn clear(&mut self) {
        self.slots.fill(0);
    }

    /// Looks up the key `write` puts in the buffer it is given (at most `KEY` bytes, answering
    /// how many; None: a key that cannot be kept). Ok: where the answer is (`get`); Err: the slot
    /// for `put` once it is known.
    pub fn find(&mut self, write: impl FnOnce(&mut [u8]) -> Option<usize>) -> Option<Result<std::ops::Range<usize>, usize>> {
        if self.slots.is_empty() {
            self.slots = vec![0; self.n * Self::SLOT];
        }
        self.probe = [0; KEY_AREA];
        let len = write(&mut self.probe[1..])?;
        self.probe[0] = u8::try_from(len).ok()?;
        let words: [u64; KEY_AREA / 8] = std::array::from_fn(|i| word(&self.probe, 8 * i));
        // FxHash's round a word; the top bits, the best mixed, choose the slot
        let h = words.iter().fold(0u64, |h, x| (h.rotate_left(5) ^ x).wrapping_mul(0xf135_7aea_2e62_a9c5));
        let at = (h.rotate_left(self.n.trailing_zeros()) as usize & (self.n - 1)) * Self::SLOT;
        let s = &self.slots[at..at + Self::SLOT];
        if s[KEY_AREA] != 0 && words.iter().enumerate().all(|(i, x)| word(s, 8 * i) == *x) {
            let v = at + KEY_AREA + 1;
            return Some(Ok(v..v + s[KEY_AREA] as usize));
        }
        Some(Err(at))
    }

    /// The answer at `r` (from `find`).
    pub fn get(&self, r: std::ops::Range<usize>) -> &[u8] {
        &self.slots[r]
    }

    /// Keeps `answer` (1 to `V` bytes; others are not kept) for the key `find` last looked for,
    /// in the slot `at` it named.
    pub fn put(&mut self, at: usize, answer: &[u8]) {
        if answer.is_empty() || answer.len() > V {
            return;
        }
        let s = &mut self.slots[at..at + Self::SLOT];
        s[..KEY_AREA].copy_from_slice(&self.probe);
        s[KEY_AREA] = answer.len() as u8;
        s[KEY_AREA + 1..KEY_AREA + 1 + answer.len()].copy_from_slice(answer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: &[u8]) -> impl FnOnce(&mut [u8]) -> Option<usize> + '_ {
        move |buf: &mut [u8]| {
            buf.get_mut(..b.len())?.copy_from_slice(b);
            Some(b.len())
        }
    }

    #[test]
    fn answers_what_was_put_and_nothing_else() {
        let mut r: Recent<8> = Recent::new(4);
        let Some(Err(at)) = r.find(key(b"abc")) else { panic!("an empty table answered") };
        r.put(at, b"xyz");
        let Some(Ok(got)) = r.find(key(b"abc")) else { panic!("not found again") };
        assert_eq!(r.get(got), b"xyz");
        // a key that is a prefix of another, or the same bytes followed by zeros, is another key
        assert!(matches!(r.find(key(b"ab")), Some(Err(_))));
        assert!(matches!(r.find(key(b"abc\0")), Some(Err(_))));
        // too long to keep
        assert!(r.find(key(&[1; KEY + 1])).is_none());
        r.clear();
        assert!(matches!(r.find(key(b"abc")), Some(Err(_))));
    }

    #[test]
    fn a_key_of_the_same_slot_replaces_the_one_before() {
        let mut r: Recent<4> = Recent::new(1);
        let Some(Err(at)) = r.find(key(b"one")) else { panic!() };
        r.put(at, b"1");
        let Some(Err(at)) = r.find(key(b"two")) else { panic!() };
        r.put(at, b"2");
        assert!(matches!(r.find(key(b"one")), Some(Err(_))));
        let Some(Ok(got)) = r.find(key(b"two")) else { panic!() };
        assert_eq!(r.get(got), b"2");
    }
}
