package devstack

import "syscall"

// syscallZero probes a process for existence without signalling it.
var syscallZero = syscall.Signal(0)
