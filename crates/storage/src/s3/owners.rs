//! Who owns each object, for a user's quota. The owner is object metadata
//! (`x-amz-meta-wirespeed-owner`, written with the object), which a listing
//! does not return: learning it costs a `HEAD` per object. So the owners
//! learnt are kept, each with the version it was read from (size and
//! modification time, whose sub-second part is a hash of the ETag:
//! `file_meta`), and a listed object whose version is unchanged is not
//! asked again. A new version (replaced on this node, another node or by
//! another tool) is a miss, so an owner is never taken from a former
//! version. At most [`MAX_OWNERS`] are kept; the whole cache is dropped
//! when full (the next walk asks again).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use super::S3Storage;
use crate::Meta;
use wirespeed_path::RelPath;

/// Owners kept at most (a few MiB).
pub const MAX_OWNERS: usize = 65_536;

type Version = (u64, Option<SystemTime>);

/// See the module doc.
#[derive(Debug, Default)]
pub(crate) struct Owners {
    known: Mutex<HashMap<String, (Version, Option<String>)>>,
}

impl Owners {
    fn get(&self, key: &str, version: Version) -> Option<Option<String>> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        let (v, owner) = known.get(key)?;
        (*v == version).then(|| owner.clone())
    }

    fn put(&self, key: String, version: Version, owner: Option<String>) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= MAX_OWNERS {
            known.clear();
        }
        known.insert(key, (version, owner));
    }
}

impl S3Storage {
    /// The owner recorded with `key`: one `HEAD` (remembered).
    pub(super) async fn read_owner(&self, key: &RelPath) -> Option<String> {
        let path = self.path(key).ok()?;
        let o = super::object::S3Object::open(self, path.clone())
            .await
            .ok()?;
        let m = crate::Object::meta(&o);
        self.owners
            .put(path.to_string(), (m.size, m.modified), o.owner.clone());
        o.owner
    }

    /// The owner of `key` as listed with `meta`: remembered, or asked.
    pub(super) async fn listed_owner(&self, key: &RelPath, meta: &Meta) -> Option<String> {
        let path = self.path(key).ok()?;
        match self.owners.get(path.as_ref(), (meta.size, meta.modified)) {
            Some(owner) => owner,
            None => self.read_owner(key).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_version_is_a_miss_and_the_cache_stays_bounded() {
        let o = Owners::default();
        let t = Some(SystemTime::UNIX_EPOCH);
        o.put("a".into(), (3, t), Some("alice".into()));
        assert_eq!(o.get("a", (3, t)), Some(Some("alice".into())));
        assert_eq!(o.get("a", (4, t)), None);
        for i in 0..MAX_OWNERS + 10 {
            o.put(format!("k{i}"), (1, t), None);
        }
        assert!(o.known.lock().unwrap().len() <= MAX_OWNERS);
    }
}
