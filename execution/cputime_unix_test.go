//go:build unix

package execution

import "syscall"

// cpuSeconds is the CPU time the process has used, user and system, on
// every thread (the garbage collector's included).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
