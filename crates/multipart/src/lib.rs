//! wirespeed-multipart (in progress)
