//! Stored (uncompressed) zip, APPNOTE 6.3.x. Files: a local header
//! without CRC or sizes (general purpose bit 3), the bytes, a data
//! descriptor. Folders: a local header alone (nothing to describe). ZIP64
//! appears only where a value does not fit: an extra field on entries of
//! 4 GiB or more (and in the central record of one lying past 4 GiB), the
//! ZIP64 end records when the archive needs them; some readers (JDK 22+)
//! refuse archives that use ZIP64 where it is not needed.

use crate::time::dos;
use crate::{Entry, Kind};

const LOCAL_SIG: u32 = 0x0403_4b50;
const DESCRIPTOR_SIG: u32 = 0x0807_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const ZIP64_END_SIG: u32 = 0x0606_4b50;
const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
const END_SIG: u32 = 0x0605_4b50;
/// A 32-bit field at this value means "see the ZIP64 extra field".
const MAX32: u64 = 0xFFFF_FFFF;
const MAX16: usize = 0xFFFF;
/// Bit 3: CRC and sizes follow the data (the data descriptor).
const FLAG_DESCRIPTOR: u16 = 1 << 3;
/// Bit 11: the name is UTF-8.
const FLAG_UTF8: u16 = 1 << 11;
/// Version made by: Unix (3, so the external attributes carry the mode), 6.3.
const MADE_BY: u16 = (3 << 8) | 63;

fn le16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn le32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn le64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// The name as stored: folders end in `/`.
pub(crate) fn stored_name_len(e: &Entry) -> usize {
    e.name.len() + usize::from(e.kind == Kind::Dir)
}

fn push_name(e: &Entry, out: &mut Vec<u8>) {
    out.extend_from_slice(e.name.as_bytes());
    if e.kind == Kind::Dir {
        out.push(b'/');
    }
}

/// The sizes do not fit 32 bits (0xFFFFFFFF itself is the escape value).
fn big(e: &Entry) -> bool {
    e.size >= MAX32
}

fn flags(e: &Entry) -> u16 {
    let utf8 = if e.name.is_ascii() { 0 } else { FLAG_UTF8 };
    match e.kind {
        Kind::File => FLAG_DESCRIPTOR | utf8,
        Kind::Dir => utf8,
    }
}

fn needed(e: &Entry, offset: u64) -> u16 {
    if big(e) || offset >= MAX32 {
        45
    } else {
        20
    }
}

pub(crate) fn local_len(e: &Entry, _offset: u64) -> u64 {
    30 + stored_name_len(e) as u64 + if big(e) { 20 } else { 0 }
}

pub(crate) fn local_header(e: &Entry, offset: u64, out: &mut Vec<u8>) {
    let (time, date) = dos(e.mtime);
    le32(out, LOCAL_SIG);
    le16(out, needed(e, offset));
    le16(out, flags(e));
    le16(out, 0); // stored
    le16(out, time);
    le16(out, date);
    le32(out, 0); // CRC: in the descriptor (0 for a folder)
                  // Sizes: in the descriptor (bit 3), or the ZIP64 escape; a folder has none.
    let sizes = if big(e) { MAX32 as u32 } else { 0 };
    le32(out, sizes);
    le32(out, sizes);
    le16(out, stored_name_len(e) as u16);
    le16(out, if big(e) { 20 } else { 0 });
    push_name(e, out);
    if big(e) {
        // Both sizes, as the spec requires in a local header; their values
        // follow in the descriptor.
        le16(out, 0x0001);
        le16(out, 16);
        le64(out, 0);
        le64(out, 0);
    }
}

pub(crate) fn descriptor_len(e: &Entry) -> u64 {
    match (e.kind, big(e)) {
        (Kind::Dir, _) => 0,
        (Kind::File, false) => 16,
        (Kind::File, true) => 24,
    }
}

pub(crate) fn descriptor(e: &Entry, crc: u32, out: &mut Vec<u8>) {
    if e.kind == Kind::Dir {
        return;
    }
    le32(out, DESCRIPTOR_SIG);
    le32(out, crc);
    if big(e) {
        le64(out, e.size);
        le64(out, e.size);
    } else {
        le32(out, e.size as u32);
        le32(out, e.size as u32);
    }
}

/// The ZIP64 extra field of a central record: the sizes when they do not
/// fit, the offset when it does not (in that order); 0 bytes if neither.
fn central_extra_len(e: &Entry, offset: u64) -> u64 {
    let n = 16 * u64::from(big(e)) + 8 * u64::from(offset >= MAX32);
    if n == 0 {
        0
    } else {
        4 + n
    }
}

pub(crate) fn central_len(e: &Entry, offset: u64) -> u64 {
    46 + stored_name_len(e) as u64 + central_extra_len(e, offset)
}

pub(crate) fn central(e: &Entry, offset: u64, crc: u32, out: &mut Vec<u8>) {
    let (time, date) = dos(e.mtime);
    let crc = if e.kind == Kind::Dir { 0 } else { crc };
    le32(out, CENTRAL_SIG);
    le16(out, MADE_BY);
    le16(out, needed(e, offset));
    le16(out, flags(e));
    le16(out, 0);
    le16(out, time);
    le16(out, date);
    le32(out, crc);
    let size32 = e.size.min(MAX32) as u32;
    le32(out, size32);
    le32(out, size32);
    le16(out, stored_name_len(e) as u16);
    le16(out, central_extra_len(e, offset) as u16);
    le16(out, 0); // comment
    le16(out, 0); // disk
    le16(out, 0); // internal attributes
    let (unix_type, dos_dir) = match e.kind {
        Kind::File => (0o100_000, 0),
        Kind::Dir => (0o040_000, 0x10),
    };
    le32(out, ((unix_type | (e.mode & 0o7777)) << 16) | dos_dir);
    le32(out, offset.min(MAX32) as u32);
    push_name(e, out);
    let extra = central_extra_len(e, offset);
    if extra > 0 {
        le16(out, 0x0001);
        le16(out, (extra - 4) as u16);
        if big(e) {
            le64(out, e.size);
            le64(out, e.size);
        }
        if offset >= MAX32 {
            le64(out, offset);
        }
    }
}

fn needs_zip64_end(count: usize, cd_size: u64, cd_offset: u64) -> bool {
    count >= MAX16 || cd_size >= MAX32 || cd_offset >= MAX32
}

pub(crate) fn end_len(count: usize, cd_size: u64, cd_offset: u64) -> u64 {
    if needs_zip64_end(count, cd_size, cd_offset) {
        56 + 20 + 22
    } else {
        22
    }
}

pub(crate) fn end(count: usize, cd_size: u64, cd_offset: u64, out: &mut Vec<u8>) {
    let zip64 = needs_zip64_end(count, cd_size, cd_offset);
    if zip64 {
        let record_at = cd_offset + cd_size;
        le32(out, ZIP64_END_SIG);
        le64(out, 44); // the record's size after this field
        le16(out, MADE_BY);
        le16(out, 45);
        le32(out, 0); // this disk
        le32(out, 0); // the disk with the central directory
        le64(out, count as u64);
        le64(out, count as u64);
        le64(out, cd_size);
        le64(out, cd_offset);
        le32(out, ZIP64_LOCATOR_SIG);
        le32(out, 0);
        le64(out, record_at);
        le32(out, 1); // disks
    }
    let count16 = count.min(MAX16) as u16;
    le32(out, END_SIG);
    le16(out, 0);
    le16(out, 0);
    le16(out, count16);
    le16(out, count16);
    le32(out, cd_size.min(MAX32) as u32);
    le32(out, cd_offset.min(MAX32) as u32);
    le16(out, 0); // comment
}
