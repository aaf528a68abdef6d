//! A folder's listing on S3: `ListObjectsV2` pages with delimiter `/`.

use object_store::list::{PaginatedListOptions, PaginatedListStore};

use super::{file_meta, folders, S3Storage, DIR_META, LIST_PAGE};
use crate::{Entry, Listing, StorageError};
use wirespeed_path::is_reserved_name;

/// A folder's entries, one `ListObjectsV2` page per batch.
pub struct S3Listing {
    pub(super) storage: S3Storage,
    /// `PREFIX/key/` (or `PREFIX/` at the root).
    pub(super) prefix: String,
    pub(super) root: bool,
    pub(super) token: Option<String>,
    pub(super) first: bool,
    pub(super) done: bool,
}

impl Listing for S3Listing {
    async fn next_batch(&mut self) -> Result<Option<Vec<Entry>>, StorageError> {
        if self.done {
            return Ok(None);
        }
        let opts = PaginatedListOptions {
            delimiter: Some("/".into()),
            max_keys: Some(LIST_PAGE),
            page_token: self.token.take(),
            ..PaginatedListOptions::default()
        };
        let prefix = (!self.prefix.is_empty()).then_some(self.prefix.as_str());
        let page = self
            .storage
            .store
            .list_paginated(prefix, opts)
            .await
            .map_err(|e| self.storage.list_error(e))?;
        let marker = self.prefix.trim_end_matches('/');
        let mut entries =
            Vec::with_capacity(page.result.objects.len() + page.result.common_prefixes.len());
        let mut marker_seen = false;
        for p in &page.result.common_prefixes {
            if let Some(name) = p.filename() {
                entries.push(Entry {
                    name: name.to_string(),
                    meta: DIR_META,
                });
            }
        }
        for o in &page.result.objects {
            if o.location.as_ref() == marker
                || o.location.filename() == Some(folders::FOLDER_MARKER)
            {
                marker_seen = true;
                continue;
            }
            if let Some(name) = o.location.filename() {
                entries.push(Entry {
                    name: name.to_string(),
                    meta: file_meta(o),
                });
            }
        }
        entries.retain(|e| !is_reserved_name(&e.name));
        // S3 orders by whole key ("a-b" before "a/"), the listing by name:
        // each page is sorted; pages follow S3's order.
        entries.sort_unstable_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        let first = std::mem::replace(&mut self.first, false);
        if first && !self.root && entries.is_empty() && !marker_seen && page.page_token.is_none() {
            return Err(StorageError::NotFound);
        }
        self.token = page.page_token;
        self.done = self.token.is_none();
        Ok(Some(entries))
    }
}
