// Command pause is the sandbox ("pause") container of the real-node cluster (hack/realnode.sh):
// it holds the pod's namespaces open, reaps children (when the pod shares its PID namespace) and
// exits on SIGINT or SIGTERM. Built locally, so containerd never pulls registry.k8s.io/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
