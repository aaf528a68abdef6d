module wirespeed/bench/go-multipart

go 1.22
