package filters

import "syscall"

// mapNoReserve keeps a guest's reserved memory out of the commit charge.
const mapNoReserve = syscall.MAP_NORESERVE
