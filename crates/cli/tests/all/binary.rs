//! The `bosun` binary as the loader meets it.

/// `SHT_RELA`: relocations with addends (`.rela.dyn`).
const SHT_RELA: u32 = 4;
/// `SHT_RELR`: packed relative relocations (`.relr.dyn`).
const SHT_RELR: u32 = 19;
/// `SHT_DYNAMIC`: the dynamic section, what the loader reads first.
const SHT_DYNAMIC: u32 = 6;
/// `DT_NEEDED`: a shared library the loader must load.
const DT_NEEDED: u64 = 1;

/// One section header of a 64-bit little-endian ELF file.
struct Section {
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
}

/// Every section header of a 64-bit little-endian ELF file.
fn section_headers(elf: &[u8]) -> Vec<Section> {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not a 64-bit ELF file");
    assert_eq!(elf[5], 1, "not a little-endian ELF file");
    let table = usize::try_from(u64_at(elf, 0x28)).unwrap();
    let entry = usize::from(u16_at(elf, 0x3A));
    let count = usize::from(u16_at(elf, 0x3C));
    (0..count)
        .map(|i| {
            let header = table + i * entry;
            Section {
                kind: u32_at(elf, header + 4),
                offset: u64_at(elf, header + 0x18),
                size: u64_at(elf, header + 0x20),
                link: u32_at(elf, header + 0x28),
            }
        })
        .collect()
}

fn u16_at(elf: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(elf[at..at + 2].try_into().unwrap())
}

fn u32_at(elf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(elf[at..at + 4].try_into().unwrap())
}

fn u64_at(elf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(elf[at..at + 8].try_into().unwrap())
}

/// The type and size of every section of a 64-bit little-endian ELF file.
fn sections(elf: &[u8]) -> Vec<(u32, u64)> {
    section_headers(elf)
        .iter()
        .map(|s| (s.kind, s.size))
        .collect()
}

/// The shared libraries an ELF file names in `DT_NEEDED`, as the loader reads them.
fn needed_libraries(elf: &[u8]) -> Vec<String> {
    let headers = section_headers(elf);
    let dynamic = headers
        .iter()
        .find(|s| s.kind == SHT_DYNAMIC)
        .expect("a dynamically linked binary has a dynamic section");
    let strings = &headers[usize::try_from(dynamic.link).unwrap()];
    let strings_at = usize::try_from(strings.offset).unwrap();
    let start = usize::try_from(dynamic.offset).unwrap();
    let end = start + usize::try_from(dynamic.size).unwrap();
    (start..end)
        .step_by(16)
        .map(|at| (u64_at(elf, at), u64_at(elf, at + 8)))
        .filter(|&(tag, _)| tag == DT_NEEDED)
        .map(|(_, name)| {
            let from = strings_at + usize::try_from(name).unwrap();
            let len = elf[from..].iter().position(|&b| b == 0).unwrap();
            String::from_utf8(elf[from..from + len].to_vec()).unwrap()
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

/// Where the C toolchain has libgcc's unwinder as an archive, the build script links it into the
/// binary, so the loader no longer finds, maps and binds `libgcc_s.so.1` at every start. A build
/// that lost it (the archive after `-lgcc_s` on the link line, the probe broken) fails here.
#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn the_unwinder_is_linked_in_where_the_toolchain_has_it() {
    let elf = std::fs::read(env!("CARGO_BIN_EXE_bosun")).unwrap();
    let needed = needed_libraries(&elf);
    assert!(
        needed.iter().any(|lib| lib.starts_with("libc.so")),
        "the dynamic section was not read right: {needed:?}"
    );
    match env!("BOSUN_UNWINDER") {
        "static" => assert!(
            !needed.iter().any(|lib| lib.starts_with("libgcc_s")),
            "the binary still loads libgcc_s: {needed:?}"
        ),
        other => {
            assert_eq!(other, "shared", "unknown BOSUN_UNWINDER value");
            eprintln!("this toolchain has no libgcc_eh.a; nothing to check");
        }
    }
}
