// Package cputime reports the CPU time the process has used, on every
// platform: benchmarks on a shared machine compare it, per unit of work,
// because it changes less with the machine's other load than throughput.
//
// It is not a profiler: one figure for the whole process, user and
// system time together, at the operating system's resolution.
package cputime
