//! `Recent`: what was answered lately for a short key, in a table of fixed size (direct-mapped:
//! a key's slot is chosen by its hash, and the next key of that slot replaces it). The explorer's
//! caches keep canonical keys by world in one: a state's successors repeat (one world by several
//! actions or outcomes), and so do those of the states expanded one after the other, so about
//! half the keys are answered here, at a fixed cost in memory that does not grow with the run.

/// A world's key: a few words (`Recent::find`).
pub const KEY_WORDS: usize = 5;
pub type Key = [u64; KEY_WORDS];

/// Up to `slots` answers of up to `V` bytes, each with its key of `K` words.
pub struct Recent<const V: usize, const K: usize = KEY_WORDS> {
    /// A slot's key (all zero: an empty slot; no key is).
    keys: Vec<[u64; K]>,
    /// A slot's answer: its length, then it.
    answers: Vec<[u8; V]>,
    n: usize,
}

impl<const V: usize, const K: usize> Recent<V, K> {
    /// A table of `slots` slots (a power of two), allocated when first used.
    pub fn new(slots: usize) -> Self {
        assert!(slots.is_power_of_two() && (2..=256).contains(&V));
        Recent { keys: Vec::new(), answers: Vec::new(), n: slots }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.keys.capacity() * std::mem::size_of::<[u64; K]>() + self.answers.capacity() * V
    }

    /// Forgets every answer.
    pub fn clear(&mut self) {
        self.keys.fill([0; K]);
    }

    /// The answer kept for `key` (not all zero) (Ok), or the slot to keep it in once known
    /// (`put`) (Err).
    pub fn find(&mut self, key: &[u64; K]) -> Result<&[u8], usize> {
        if self.keys.is_empty() {
            self.keys = vec![[0; K]; self.n];
            self.answers = vec![[0; V]; self.n];
        }
        // FxHash's round a word; the top bits, the best mixed, choose the slot
        let h = key.iter().fold(0u64, |h, x| (h.rotate_left(5) ^ x).wrapping_mul(0xf135_7aea_2e62_a9c5));
        let at = h.rotate_left(self.n.trailing_zeros()) as usize & (self.n - 1);
        if self.keys[at] == *key {
            let a = &self.answers[at];
            return Ok(&a[1..1 + a[0] as usize]);
        }
        Err(at)
    }

    /// Keeps `answer` (fewer than `V` bytes; longer ones are not kept) for `key` in the slot
    /// `at` that `find` named for it.
    pub fn put(&mut self, at: usize, key: &[u64; K], answer: &[u8]) {
        if answer.len() >= V {
            return;
        }
        self.keys[at] = *key;
        let a = &mut self.answers[at];
        a[0] = answer.len() as u8;
        a[1..1 + answer.len()].copy_from_slice(answer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(w: u64) -> Key {
        [w, 1, 2, 3, 4]
    }

    #[test]
    fn answers_what_was_put_and_nothing_else() {
        let mut r: Recent<8> = Recent::new(4);
        let Err(at) = r.find(&key(7)) else { panic!("an empty table answered") };
        r.put(at, &key(7), b"xyz");
        assert_eq!(r.find(&key(7)), Ok(&b"xyz"[..]));
        assert!(r.find(&key(8)).is_err());
        // too long to keep
        let Err(at) = r.find(&key(9)) else { panic!() };
        r.put(at, &key(9), b"12345678");
        assert!(r.find(&key(9)).is_err());
        r.clear();
        assert!(r.find(&key(7)).is_err());
    }

    #[test]
    fn keys_of_two_words_answer_as_keys_of_five() {
        let mut r: Recent<9, 2> = Recent::new(8);
        let Err(at) = r.find(&[5, 6]) else { panic!("an empty table answered") };
        r.put(at, &[5, 6], b"12345678");
        assert_eq!(r.find(&[5, 6]), Ok(&b"12345678"[..]));
        assert!(r.find(&[5, 7]).is_err());
        assert_eq!(r.bytes(), 8 * (16 + 9));
    }

    #[test]
    fn a_key_of_the_same_slot_replaces_the_one_before() {
        let mut r: Recent<4> = Recent::new(1);
        let Err(at) = r.find(&key(1)) else { panic!() };
        r.put(at, &key(1), b"1");
        let Err(at) = r.find(&key(2)) else { panic!() };
        r.put(at, &key(2), b"2");
        assert!(r.find(&key(1)).is_err());
        assert_eq!(r.find(&key(2)), Ok(&b"2"[..]));
    }
}
