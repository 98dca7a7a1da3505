// CProcess: what the spawn, the guardian and the small helpers share (not part of the module's API).
#pragma once
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef PIDFD_SIGNAL_PROCESS_GROUP
#define PIDFD_SIGNAL_PROCESS_GROUP (1UL << 2)
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

// Every helper here is async-signal-safe: system calls and stack memory only (they run between fork or
// clone and exec, and in the guardian).

/// Blocks every signal, glibc's internal ones too (the raw call: pthread_sigmask leaves those two open).
void CProcessInternal_block_all_signals(sigset_t *old);
void CProcessInternal_restore_signals(const sigset_t *old);
/// Reads /proc/<pid>/stat (/proc/self/stat for 0): the parent, the group and the start time; 0 or -1.
int CProcessInternal_read_stat(pid_t pid, pid_t *parent, pid_t *group, uint64_t *start);
/// Closes (or, with `on_exec`, marks close-on-exec) every descriptor from `low` up.
void CProcessInternal_close_from(int low, int on_exec);

/// A guardian message: 16 bytes, so that a write is atomic (PIPE_BUF) and reads split on message bounds.
typedef struct {
    int32_t op;
    int32_t pid;
    uint64_t start;
} CProcessInternal_message;

enum { CProcessInternal_guardian_add = 1, CProcessInternal_guardian_forget = 2 };

