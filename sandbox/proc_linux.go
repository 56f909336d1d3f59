package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// childAttributes makes the compiler die with the server, whatever ends it.
func childAttributes(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// compilerNice is the niceness of the compiler process: a compilation
// yields the processors to the server's requests and runs, which someone
// waits for (a module being compiled runs meanwhile in the interpreter, or
// its install waits a little longer).
const compilerNice = 10

// lowerPriority makes every thread of this process, and so the threads
// they start, run at compilerNice.
func lowerPriority() {
	for range 2 { // a thread started while the first pass ran
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				syscall.Setpriority(syscall.PRIO_PROCESS, tid, compilerNice)
			}
		}
	}
}

// residentBytes reads a process's resident memory.
func residentBytes(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}
