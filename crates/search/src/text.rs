//! Which files have their words indexed: text-like by name, and text by
//! their first bytes (no NUL, valid UTF-8 but for a cut last character).

/// Extensions of files whose words are indexed.
const TEXT_EXTENSIONS: &[&str] = &[
    "txt", "text", "md", "markdown", "rst", "adoc", "org", "csv", "tsv", "json", "jsonl", "ndjson",
    "xml", "html", "htm", "css", "yaml", "yml", "toml", "ini", "cfg", "conf", "log", "sql", "tex",
    "rs", "c", "h", "cc", "cpp", "hpp", "go", "java", "kt", "py", "rb", "pl", "php", "js", "mjs",
    "ts", "tsx", "jsx", "sh", "bash", "zsh", "fish", "lua", "swift", "scala", "hs", "ml", "ex",
    "exs", "erl", "clj", "cs", "fs", "vb", "r", "jl", "dart", "vue", "svelte", "proto", "gradle",
    "cmake", "mk", "diff", "patch", "srt", "vtt", "bib",
];

/// Whether a file called `name` is text-like by its name (an extension in
/// the list, or one of the usual extension-less text files).
pub fn is_text_name(name: &str) -> bool {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => {
            TEXT_EXTENSIONS.iter().any(|t| t.eq_ignore_ascii_case(ext))
        }
        _ => matches!(
            name,
            "README" | "LICENSE" | "COPYING" | "Makefile" | "Dockerfile" | "CHANGELOG" | "NOTICE"
        ),
    }
}

/// Whether `head` (a file's first bytes; `complete` when it is the whole
/// file) reads as text: no NUL, and UTF-8 except for a character cut at
/// the end of an incomplete head.
pub fn looks_like_text(head: &[u8], complete: bool) -> bool {
    if memchr_nul(head) {
        return false;
    }
    match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => !complete && e.error_len().is_none(),
    }
}

fn memchr_nul(b: &[u8]) -> bool {
    b.contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_text_name("notes.MD"));
        assert!(is_text_name("README"));
        assert!(!is_text_name("photo.jpg"));
        assert!(!is_text_name(".md"));
    }

    #[test]
    fn heads() {
        assert!(looks_like_text("héllo".as_bytes(), true));
        assert!(!looks_like_text(b"a\0b", true));
        let cut = &"é".as_bytes()[..1];
        assert!(looks_like_text(cut, false));
        assert!(!looks_like_text(cut, true));
    }
}
