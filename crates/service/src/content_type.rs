//! The `Content-Type` a file's name suggests: `mime_guess`'s answer, with
//! the most common extensions looked up by a `match` first. `mime_guess`
//! binary-searches a table of 1,400 extensions with case-folding compares,
//! about 1,150 instructions of every small GET (3.7% of it; bench/RESULTS.md).

/// The media type for `name`'s extension, `application/octet-stream` when
/// none is known. Always what `mime_guess::from_path(name).first_raw()`
/// answers (the test below holds the table to it).
pub(crate) fn of(name: &str) -> &'static str {
    // As `Path::extension`: a leading dot starts a name, not an extension.
    let ext = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext,
        _ => return guess(name),
    };
    common(ext).unwrap_or_else(|| guess(name))
}

fn guess(name: &str) -> &'static str {
    mime_guess::from_path(name)
        .first_raw()
        .unwrap_or("application/octet-stream")
}

/// Lower-case extensions only; anything else asks `mime_guess`.
fn common(ext: &str) -> Option<&'static str> {
    Some(match ext {
        "txt" => "text/plain",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" => "text/javascript",
        "json" => "application/json",
        "xml" => "text/xml",
        "csv" => "text/csv",
        "md" => "text/markdown",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "tar" => "application/x-tar",
        "mp4" => "video/mp4",
        "mp3" => "audio/mpeg",
        "bin" => "application/octet-stream",
        "wasm" => "application/wasm",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_table_agrees_with_mime_guess() {
        for ext in [
            "txt", "html", "htm", "css", "js", "json", "xml", "csv", "md", "png", "jpg", "jpeg",
            "gif", "svg", "webp", "ico", "pdf", "zip", "gz", "tar", "mp4", "mp3", "bin", "wasm",
        ] {
            let name = format!("a.{ext}");
            assert_eq!(common(ext), Some(guess(&name)), "{ext}");
            assert_eq!(of(&name), guess(&name));
        }
        for name in [
            "README",
            "a.TXT",
            "a.JPG",
            "x.unknownext",
            ".txt",
            "..txt",
            "a.b.c",
            "a.b.txt",
            "dir.d/x",
            "dir.txt/x",
            "a.",
            "",
        ] {
            assert_eq!(of(name), guess(name), "{name}");
        }
    }
}
