module container-overhead/tools/loadgen

go 1.19
