// Command pause is the pod sandbox's process: it holds the pod's namespaces open, reaps the
// children it inherits, and exits 0 on SIGINT or SIGTERM. A stand-in for Kubernetes' own
// pause image, built here because no registry is reachable; standard library only, static.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
