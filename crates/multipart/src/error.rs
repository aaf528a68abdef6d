//! The one error type of the crate.

/// Everything that can go wrong while parsing a multipart body or its
/// Content-Type. Every variant maps to a 4xx for the service (400, or 413 for
/// the limit variants — see [`MultipartError::is_limit`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MultipartError {
    /// The boundary is empty, longer than 70 bytes, ends in a space or holds
    /// a byte outside RFC 2046 `bchars`.
    #[error("invalid multipart boundary: {0}")]
    InvalidBoundary(&'static str),
    /// The Content-Type value could not be parsed as `type/subtype *(; param)`.
    #[error("malformed Content-Type: {0}")]
    MalformedContentType(&'static str),
    /// The Content-Type is not `multipart/*`.
    #[error("Content-Type is not multipart/*")]
    NotMultipart,
    /// The Content-Type has no `boundary` parameter.
    #[error("multipart Content-Type without a boundary parameter")]
    MissingBoundary,
    /// A part's header block is longer than [`crate::Limits::max_header_bytes`].
    #[error("part header block exceeds {limit} bytes")]
    HeadersTooLarge {
        /// The configured limit.
        limit: usize,
    },
    /// A part header line is not `token ":" OWS value OWS CRLF`, or a header
    /// we interpret (Content-Disposition) has broken syntax.
    #[error("malformed part header: {0}")]
    MalformedHeader(&'static str),
    /// A bare LF where multipart requires CRLF: in a part header block, or
    /// ending the first delimiter line (an LF-only body). LF-only bodies are
    /// rejected on purpose; see the crate docs.
    #[error("bare LF line ending (multipart requires CRLF)")]
    BareLf,
    /// More transport padding (spaces/tabs) after a boundary than we are
    /// willing to buffer.
    #[error("more than {limit} bytes of whitespace after a boundary")]
    PaddingTooLong {
        /// The (fixed) limit, [`crate::MAX_PADDING`].
        limit: usize,
    },
    /// The body has more parts than [`crate::Limits::max_parts`].
    #[error("more than {limit} parts")]
    TooManyParts {
        /// The configured limit.
        limit: usize,
    },
    /// A non-file part (no `filename`) is larger than
    /// [`crate::Limits::max_field_bytes`].
    #[error("form field exceeds {limit} bytes")]
    FieldTooLarge {
        /// The configured limit.
        limit: u64,
    },
    /// Input ended (`finish()`) before the close delimiter `--boundary--`.
    #[error("body ended before the final boundary")]
    MissingFinalBoundary,
}

impl MultipartError {
    /// True for the errors caused by a configured limit (the service answers
    /// 413 for these, 400 for the rest).
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            Self::HeadersTooLarge { .. }
                | Self::TooManyParts { .. }
                | Self::FieldTooLarge { .. }
                | Self::PaddingTooLong { .. }
        )
    }
}
