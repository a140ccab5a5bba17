//! The fuzz bodies over the seed corpus in `fuzz/seeds/`, plus a few thousand deterministic
//! mutations of it, so stable `cargo test` catches what the fuzzer would find first.

use std::path::Path;

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let seeds: Vec<Vec<u8>> = entries.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(seeds.len() >= 5, "{}: too few seeds", dir.display());
    seeds
}

/// xorshift64*: deterministic, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Flips, inserts, deletes and splices bytes, preferring characters that matter to globs and TOML.
fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    const INTERESTING: &[u8] = b"*?[]{},\\/.:\"'=\n#-_ aZ\x00\xff";
    let mut data = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(4) {
            0 if at < data.len() => data[at] = INTERESTING[rng.below(INTERESTING.len())],
            1 => data.insert(at, INTERESTING[rng.below(INTERESTING.len())]),
            2 if at < data.len() => {
                data.remove(at);
            }
            _ => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len());
                let to = (from + rng.below(16)).min(other.len());
                data.splice(at..at, other[from..to].iter().copied());
            }
        }
    }
    data
}

fn run(target: &str, body: fn(&[u8]), mutations: usize) {
    let seeds = seeds(target);
    for seed in &seeds {
        body(seed);
    }
    let mut rng = Rng(0x5EED_F00D_B05C);
    for _ in 0..mutations {
        body(&mutate(&mut rng, &seeds));
    }
}

#[test]
fn matcher_holds_over_seeds_and_mutations() {
    run("matcher", bosun_policy::fuzzing::matcher, 3000);
}

#[test]
fn rule_parser_holds_over_seeds_and_mutations() {
    run("rule_parser", bosun_policy::fuzzing::rule_parser, 3000);
}
