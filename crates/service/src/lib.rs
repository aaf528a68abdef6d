//! wirespeed-service (in progress)
