//! wirespeed-extract (in progress)
