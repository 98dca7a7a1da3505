// CProcess: small process helpers: /proc, pidfds, descriptors, signals, thread names
// (see include/CProcess.h for why this exists).
#include "CProcess.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/// Blocks every signal, glibc's internal ones too (the raw call: pthread_sigmask leaves those two open).
void CProcessInternal_block_all_signals(sigset_t *old) {
    sigset_t all;
    sigfillset(&all);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, old, (size_t)(_NSIG / 8));
}

void CProcessInternal_restore_signals(const sigset_t *old) {
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, (size_t)(_NSIG / 8));
}

/// Reads /proc/<pid>/stat (or /proc/self/stat for 0) and picks the parent, the group and the start time.
int CProcessInternal_read_stat(pid_t pid, pid_t *parent, pid_t *group, uint64_t *start) {
    char path[40] = "/proc/self/stat";
    if (pid > 0) {
        // "/proc/" + decimal + "/stat", without snprintf.
        char digits[12];
        int n = 0;
        for (unsigned value = (unsigned)pid; value > 0 && n < 11; value /= 10) digits[n++] = (char)('0' + value % 10);
        int at = 0;
        for (const char *p = "/proc/"; *p; p++) path[at++] = *p;
        while (n > 0) path[at++] = digits[--n];
        for (const char *p = "/stat"; *p; p++) path[at++] = *p;
        path[at] = 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buffer[1024];
    ssize_t length;
    do length = read(fd, buffer, sizeof buffer - 1); while (length < 0 && errno == EINTR);
    close(fd);
    if (length <= 0) return -1;
    buffer[length] = 0;
    // The command name is in parentheses and may contain anything: the fields start after the last ')'.
    char *p = NULL;
    for (char *q = buffer; *q; q++) if (*q == ')') p = q;
    if (!p) return -1;
    p++;
    uint64_t fields[20];
    int field = -1;  // -1: the state letter comes first
    while (*p && field < 20) {
        while (*p == ' ') p++;
        if (!*p) break;
        if (field < 0) {
            while (*p && *p != ' ') p++;
        } else {
            uint64_t value = 0;
            int negative = 0;
            if (*p == '-') { negative = 1; p++; }
            while (*p >= '0' && *p <= '9') value = value * 10 + (uint64_t)(*p++ - '0');
            while (*p && *p != ' ') p++;
            fields[field] = negative ? 0 : value;
        }
        field++;
    }
    // fields[k] is field k + 4 of proc(5): 4 ppid, 5 pgrp, ..., 22 starttime.
    if (field < 19) return -1;
    if (parent) *parent = (pid_t)fields[0];
    if (group) *group = (pid_t)fields[1];
    if (start) *start = fields[18];
    return 0;
}

uint64_t CProcess_start_time(pid_t pid) {
    uint64_t start = 0;
    return CProcessInternal_read_stat(pid, NULL, NULL, &start) == 0 ? start : 0;
}

void CProcess_name_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

int CProcess_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int CProcess_pidfd_signal(int pidfd, int signal, int group) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, group ? PIDFD_SIGNAL_PROCESS_GROUP : 0);
}

/// Closes (or, with `on_exec`, marks close-on-exec) every descriptor from `low` up.
void CProcessInternal_close_from(int low, int on_exec) {
    if (syscall(SYS_close_range, (unsigned)low, ~0U, on_exec ? CLOSE_RANGE_CLOEXEC : 0U) == 0) return;
    // Before Linux 5.9 (5.11 for the flag): one by one, up to the descriptor limit.
    struct rlimit limit;
    int top = 65536;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < 65536)
        top = (int)limit.rlim_cur;
    for (int fd = low; fd < top; fd++) {
        if (on_exec) {
            int flags = fcntl(fd, F_GETFD);
            if (flags >= 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
        } else {
            close(fd);
        }
    }
}

