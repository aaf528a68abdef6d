//! wirespeed-base64 (in progress)
