module container-overhead/tools/kubernetes/pause

go 1.19
