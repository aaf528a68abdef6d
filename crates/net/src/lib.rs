//! wirespeed-net (in progress)
