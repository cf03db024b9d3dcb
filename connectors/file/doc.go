// Package file reads recordings from files into a topology and writes
// particles out as line protocol.
//
// [Source] reads line-protocol files, plain or gzip-compressed, and emits
// their particles; malformed lines are rejected with their file and line
// and the rest goes on. [Sink] is an operation that writes every particle
// it receives as one line of line protocol; placed as the last bolt, its
// synchronization buffer makes the output come out in event-time order.
package file
