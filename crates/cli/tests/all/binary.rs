//! The `bosun` binary as the loader meets it.

/// `SHT_RELA`: relocations with addends (`.rela.dyn`).
const SHT_RELA: u32 = 4;
/// `SHT_RELR`: packed relative relocations (`.relr.dyn`).
const SHT_RELR: u32 = 19;

/// The type and size of every section of a 64-bit little-endian ELF file.
fn sections(elf: &[u8]) -> Vec<(u32, u64)> {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not a 64-bit ELF file");
    assert_eq!(elf[5], 1, "not a little-endian ELF file");
    let u16_at = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().unwrap());
    let u32_at = |at: usize| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
    let table = usize::try_from(u64_at(0x28)).unwrap();
    let entry = usize::from(u16_at(0x3A));
    let count = usize::from(u16_at(0x3C));
    (0..count)
        .map(|i| {
            let header = table + i * entry;
            (u32_at(header + 4), u64_at(header + 0x20))
        })
        .collect()
}

/// The build script packs the binary's relative relocations where the linker can (a `DT_RELR`
/// table of kilobytes instead of 3 MB of `.rela.dyn` read and kept resident by every command).
/// A build that lost the packing — the link argument dropped, the probe broken — fails here.
#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn relative_relocations_are_packed_where_the_toolchain_can() {
    let elf = std::fs::read(env!("CARGO_BIN_EXE_bosun")).unwrap();
    let sections = sections(&elf);
    let relr: u64 = sections
        .iter()
        .filter(|s| s.0 == SHT_RELR)
        .map(|s| s.1)
        .sum();
    let rela: u64 = sections
        .iter()
        .filter(|s| s.0 == SHT_RELA)
        .map(|s| s.1)
        .sum();
    match env!("BOSUN_RELR") {
        "packed" => {
            assert!(relr > 0, "the binary has no .relr.dyn section");
            assert!(
                rela < 256 * 1024,
                "the binary still carries {rela} bytes of .rela relocations"
            );
        }
        other => {
            assert_eq!(other, "unsupported", "unknown BOSUN_RELR value");
            eprintln!("this toolchain cannot pack relative relocations; nothing to check");
        }
    }
}
