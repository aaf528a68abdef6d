//! A picture's bytes in, a JPEG of at most [`MAX_SIDE`] pixels on its
//! longest side out: no I/O, so the worker pool calls it and the tests feed
//! it bytes.
//!
//! A JPEG is decoded by jpeg-decoder scaled in the DCT domain (1/2, 1/4 or
//! 1/8 of its size, chosen as the smallest that still covers the
//! thumbnail): a 12-megapixel photo is decoded at a sixteenth of its
//! pixels, which is where the speed comes from (Pillow's `draft` mode does
//! the same). PNG, GIF (its first frame) and WebP go through `image`.

use image::{DynamicImage, ImageFormat, RgbImage};

/// The longest side of a thumbnail, in pixels.
pub const MAX_SIDE: u32 = 512;

/// JPEG quality of a thumbnail: small files, no visible blocks at 512 px.
const QUALITY: u8 = 80;

/// The most bytes a decoder may allocate for one picture (a picture that
/// needs more gets no thumbnail, [`MakeError::TooLarge`]).
const MAX_ALLOC: u64 = 192 << 20;

/// The largest width or height a picture may declare.
const MAX_DIMENSION: u32 = 1 << 15;

/// Why a picture gave no thumbnail.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MakeError {
    /// Not a format a thumbnail is made from.
    #[error("no thumbnail for this kind of file")]
    Unsupported,
    /// A format we read, but these bytes are not a valid picture of it.
    #[error("the picture could not be decoded: {0}")]
    Corrupt(String),
    /// Bigger than the decoders may allocate.
    #[error("the picture is too large to make a thumbnail of")]
    TooLarge,
    /// The encoder refused (never expected for a decoded picture).
    #[error("the thumbnail could not be encoded: {0}")]
    Encode(String),
}

/// The kinds of picture a thumbnail is made from, by their first bytes.
pub fn sniff(bytes: &[u8]) -> Option<ImageFormat> {
    match image::guess_format(bytes).ok()? {
        f @ (ImageFormat::Jpeg | ImageFormat::Png | ImageFormat::Gif | ImageFormat::WebP) => {
            Some(f)
        }
        _ => None,
    }
}

/// A JPEG thumbnail of the picture in `bytes`.
pub fn thumbnail(bytes: &[u8]) -> Result<Vec<u8>, MakeError> {
    let picture = match sniff(bytes).ok_or(MakeError::Unsupported)? {
        ImageFormat::Jpeg => decode_jpeg(bytes)?,
        format => decode_other(bytes, format)?,
    };
    encode(&shrink(picture))
}

/// A JPEG decoded at the smallest DCT scale that covers the thumbnail,
/// turned as its EXIF orientation says.
fn decode_jpeg(bytes: &[u8]) -> Result<DynamicImage, MakeError> {
    let mut dec = jpeg_decoder::Decoder::new(bytes);
    dec.set_max_decoding_buffer_size(MAX_ALLOC as usize);
    dec.read_info().map_err(jpeg_error)?;
    let side = MAX_SIDE as u16;
    let (w, h) = dec.scale(side, side).map_err(jpeg_error)?;
    let pixels = dec.decode().map_err(jpeg_error)?;
    let info = dec.info().ok_or(MakeError::Corrupt("no frame".into()))?;
    let (w, h) = (u32::from(w), u32::from(h));
    let picture = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => {
            RgbImage::from_raw(w, h, pixels).map(DynamicImage::ImageRgb8)
        }
        jpeg_decoder::PixelFormat::L8 => {
            image::GrayImage::from_raw(w, h, pixels).map(DynamicImage::ImageLuma8)
        }
        jpeg_decoder::PixelFormat::L16 => {
            let wide = pixels
                .chunks_exact(2)
                .map(|p| u16::from_be_bytes([p[0], p[1]]))
                .collect();
            image::ImageBuffer::from_raw(w, h, wide).map(DynamicImage::ImageLuma16)
        }
        jpeg_decoder::PixelFormat::CMYK32 => {
            Some(DynamicImage::ImageRgb8(cmyk_to_rgb(w, h, &pixels)?))
        }
    };
    let mut picture = picture.ok_or(MakeError::Corrupt("short pixel data".into()))?;
    let orientation = dec
        .exif_data()
        .and_then(image::metadata::Orientation::from_exif_chunk);
    if let Some(o) = orientation {
        picture.apply_orientation(o);
    }
    Ok(picture)
}

/// Adobe's CMYK JPEGs store inverted ink; jpeg-decoder hands them over as
/// they are stored, so the conversion multiplies the stored values.
fn cmyk_to_rgb(w: u32, h: u32, pixels: &[u8]) -> Result<RgbImage, MakeError> {
    let rgb = pixels
        .chunks_exact(4)
        .flat_map(|p| {
            let k = u16::from(p[3]);
            [0, 1, 2].map(|i| ((u16::from(p[i]) * k) / 255) as u8)
        })
        .collect();
    RgbImage::from_raw(w, h, rgb).ok_or(MakeError::Corrupt("short pixel data".into()))
}

fn jpeg_error(e: jpeg_decoder::Error) -> MakeError {
    match e {
        jpeg_decoder::Error::Unsupported(_) => MakeError::Unsupported,
        e if e.to_string().contains("exceeds") => MakeError::TooLarge,
        e => MakeError::Corrupt(e.to_string()),
    }
}

fn decode_other(bytes: &[u8], format: ImageFormat) -> Result<DynamicImage, MakeError> {
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(bytes), format);
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_ALLOC);
    limits.max_image_width = Some(MAX_DIMENSION);
    limits.max_image_height = Some(MAX_DIMENSION);
    reader.limits(limits);
    reader.decode().map_err(|e| match e {
        image::ImageError::Limits(_) => MakeError::TooLarge,
        image::ImageError::Unsupported(_) => MakeError::Unsupported,
        e => MakeError::Corrupt(e.to_string()),
    })
}

/// At most [`MAX_SIDE`] on the longest side, proportions kept; pictures
/// already that small are left as they are. Transparency is laid on white
/// (a JPEG has none).
fn shrink(picture: DynamicImage) -> RgbImage {
    let (w, h) = (picture.width(), picture.height());
    let rgb = if picture.color().has_alpha() {
        on_white(&picture)
    } else {
        picture.into_rgb8()
    };
    if w.max(h) <= MAX_SIDE {
        return rgb;
    }
    let (tw, th) = fit(w, h);
    image::imageops::thumbnail(&rgb, tw, th)
}

fn on_white(picture: &DynamicImage) -> RgbImage {
    let rgba = picture.to_rgba8();
    let (w, h) = rgba.dimensions();
    let mut out = RgbImage::new(w, h);
    for (o, p) in out.pixels_mut().zip(rgba.pixels()) {
        let a = u16::from(p[3]);
        *o = image::Rgb([0, 1, 2].map(|i| ((u16::from(p[i]) * a + 255 * (255 - a)) / 255) as u8));
    }
    out
}

/// The thumbnail's size for a `w`×`h` picture larger than [`MAX_SIDE`].
pub fn fit(w: u32, h: u32) -> (u32, u32) {
    let long = w.max(h).max(1);
    let scale = |x: u32| ((u64::from(x) * u64::from(MAX_SIDE) / u64::from(long)) as u32).max(1);
    (scale(w), scale(h))
}

fn encode(rgb: &RgbImage) -> Result<Vec<u8>, MakeError> {
    let (w, h) = rgb.dimensions();
    let (Ok(w16), Ok(h16)) = (u16::try_from(w), u16::try_from(h)) else {
        return Err(MakeError::TooLarge);
    };
    let mut out = Vec::with_capacity(32 << 10);
    jpeg_encoder::Encoder::new(&mut out, QUALITY)
        .encode(rgb.as_raw(), w16, h16, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| MakeError::Encode(e.to_string()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(format: ImageFormat, w: u32, h: u32) -> Vec<u8> {
        let picture = RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 128]));
        let mut out = std::io::Cursor::new(Vec::new());
        if format == ImageFormat::Jpeg {
            let mut v = Vec::new();
            jpeg_encoder::Encoder::new(&mut v, 90)
                .encode(
                    picture.as_raw(),
                    w as u16,
                    h as u16,
                    jpeg_encoder::ColorType::Rgb,
                )
                .unwrap();
            return v;
        }
        DynamicImage::ImageRgb8(picture)
            .write_to(&mut out, format)
            .unwrap();
        out.into_inner()
    }

    fn size_of(jpeg: &[u8]) -> (u32, u32) {
        let mut d = jpeg_decoder::Decoder::new(jpeg);
        d.read_info().unwrap();
        let i = d.info().unwrap();
        (u32::from(i.width), u32::from(i.height))
    }

    #[test]
    fn every_format_shrinks_to_the_longest_side() {
        for format in [
            ImageFormat::Jpeg,
            ImageFormat::Png,
            ImageFormat::Gif,
            ImageFormat::WebP,
        ] {
            let out = thumbnail(&encoded(format, 1200, 600)).unwrap();
            assert_eq!(size_of(&out), (512, 256), "{format:?}");
        }
    }

    #[test]
    fn small_pictures_keep_their_size() {
        let out = thumbnail(&encoded(ImageFormat::Png, 40, 30)).unwrap();
        assert_eq!(size_of(&out), (40, 30));
    }

    #[test]
    fn not_a_picture_is_unsupported_and_a_broken_one_corrupt() {
        assert_eq!(thumbnail(b"hello, world"), Err(MakeError::Unsupported));
        let mut broken = encoded(ImageFormat::Png, 100, 100);
        broken.truncate(60);
        assert!(matches!(thumbnail(&broken), Err(MakeError::Corrupt(_))));
        let mut broken = encoded(ImageFormat::Jpeg, 100, 100);
        broken.truncate(200);
        assert!(thumbnail(&broken).is_err());
    }

    #[test]
    fn fit_keeps_proportions() {
        assert_eq!(fit(4032, 3024), (512, 384));
        assert_eq!(fit(100, 5000), (10, 512));
        assert_eq!(fit(10000, 1), (512, 1));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..2048)) {
            let _ = thumbnail(&bytes);
            let mut jpeg = vec![0xFF, 0xD8, 0xFF];
            jpeg.extend_from_slice(&bytes);
            let _ = thumbnail(&jpeg);
        }
    }
}
