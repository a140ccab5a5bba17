//! Protected paths: files that make other programs run code. Git runs `core.fsmonitor`,
//! `core.hooksPath`, aliases and hooks from `.git/`; Bosun reads its own policy and plugins from
//! `.bosun/`; agents read skills from `.agents/`; editors and shells run tasks and hooks from
//! `.vscode/`, `.idea/`, `.husky/`, `.envrc` and `.pre-commit-config.yaml`; `.gitmodules` names
//! what git fetches; `AGENTS.md` and `CLAUDE.md` are instructions every later prompt carries. Writing one of them is asked about in every mode but `full`, whoever writes
//! (a built-in, a plugin, a command's declared writes), unless a user rule names the path.
//! Reads stay as the mode and rules say.

/// Directories protected wherever they appear in a path (a nested repository's `.git` too).
pub const PROTECTED_DIRS: [&str; 6] = [".git", ".bosun", ".agents", ".husky", ".vscode", ".idea"];

/// File names protected wherever they appear (lower case; compared without case).
/// `AGENTS.md` and `CLAUDE.md` are instruction files: they feed every later system prompt.
pub const PROTECTED_FILES: [&str; 5] = [
    ".envrc",
    ".gitmodules",
    ".pre-commit-config.yaml",
    "agents.md",
    "claude.md",
];

/// Whether writing the workspace-relative, normalised `path` is protected. Case is ignored, so
/// that `.GIT/config` on a case-insensitive filesystem is the same file.
pub fn is_protected(path: &str) -> bool {
    let path = path.to_ascii_lowercase();
    let mut components = path.split('/').filter(|c| !c.is_empty() && *c != ".");
    let mut last = None;
    for component in components.by_ref() {
        if PROTECTED_DIRS.contains(&component) {
            return true;
        }
        last = Some(component);
    }
    last.is_some_and(|name| PROTECTED_FILES.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_that_run_code_are_protected_in_every_spelling() {
        for path in [
            ".git",
            ".git/config",
            ".git/hooks/pre-commit",
            "./.git/config",
            ".GIT/CONFIG",
            "vendor/lib/.git/config",
            ".bosun/config.toml",
            ".bosun/plugins/x/plugin.toml",
            ".agents/skills/a/SKILL.md",
            ".husky/pre-commit",
            ".vscode/tasks.json",
            ".idea/workspace.xml",
            ".envrc",
            "sub/.envrc",
            ".gitmodules",
            ".pre-commit-config.yaml",
            "AGENTS.md",
            "docs/agents.md",
            "CLAUDE.md",
            "sub/Claude.md",
        ] {
            assert!(is_protected(path), "{path}");
        }
        for path in [
            ".",
            "src/main.rs",
            ".github/workflows/ci.yml",
            "git/config",
            ".gitignore",
            "docs/.git-notes.md",
            "bosun/config.toml",
            "AGENTS.md.bak",
            "docs/agents/readme.md",
        ] {
            assert!(!is_protected(path), "{path}");
        }
    }
}
