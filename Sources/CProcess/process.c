// CProcess: see include/CProcess.h for why this exists.
#include "CProcess.h"

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

// MARK: - Small async-signal-safe helpers (system calls and stack memory only)

/// Blocks every signal, glibc's internal ones too (the raw call: pthread_sigmask leaves those two open).
static void block_all_signals(sigset_t *old) {
    sigset_t all;
    sigfillset(&all);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, old, (size_t)(_NSIG / 8));
}

static void restore_signals(const sigset_t *old) {
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, (size_t)(_NSIG / 8));
}

/// Reads /proc/<pid>/stat (or /proc/self/stat for 0) and picks the parent, the group and the start time.
static int read_stat(pid_t pid, pid_t *parent, pid_t *group, uint64_t *start) {
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
    return read_stat(pid, NULL, NULL, &start) == 0 ? start : 0;
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
static void close_from(int low, int on_exec) {
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

/// A guardian message: 16 bytes, so that a write is atomic (PIPE_BUF) and reads split on message bounds.
typedef struct {
    int32_t op;
    int32_t pid;
    uint64_t start;
} guardian_message;

enum { guardian_add = 1, guardian_forget = 2 };

// MARK: - Spawn

typedef struct {
    const CProcess_spawn_request *request;
    pid_t server;
    /// Written by the child before it exits (shared memory: CLONE_VM); read after CLONE_VFORK returns.
    volatile int error;
    volatile int step;
} spawn_arguments;

__attribute__((noreturn)) static void fail_in_child(spawn_arguments *arguments, int step) {
    arguments->error = errno;
    arguments->step = step;
    _exit(127);
}

/// The child, on its own stack in the parent's memory until execve: system calls only.
static int spawn_child(void *raw) {
    spawn_arguments *arguments = raw;
    const CProcess_spawn_request *request = arguments->request;

    // Its own process group, so that the whole group can be killed.
    if (setpgid(0, 0) != 0) fail_in_child(arguments, CProcess_step_setpgid);
    // Killed when the thread that spawned it exits (with the server, however it ends)...
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail_in_child(arguments, CProcess_step_pdeathsig);
    // ...which may already have happened: then the program must not run.
    if (getppid() != arguments->server) _exit(127);

    if (dup2(request->stdin_fd, 0) < 0 || dup2(request->stdout_fd, 1) < 0 || dup2(request->stderr_fd, 2) < 0)
        fail_in_child(arguments, CProcess_step_dup2);
    if (chdir(request->directory) != 0) fail_in_child(arguments, CProcess_step_chdir);
    // Nothing of the server's but 0, 1 and 2 reaches the program (the guardian's pipe closes at exec too).
    close_from(3, 1);

    // Known to the guardian before the program can start anything. SIGPIPE is blocked here: a dead
    // guardian leaves one pending, which setting SIG_IGN below discards.
    if (request->guardian_fd >= 0) {
        guardian_message message = {guardian_add, (int32_t)getpid(), CProcess_start_time(0)};
        ssize_t written;
        do written = write(request->guardian_fd, &message, sizeof message); while (written < 0 && errno == EINTR);
    }

    // Default dispositions (the server ignores SIGPIPE and has handlers), then an empty mask.
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &action, NULL);
    action.sa_handler = SIG_DFL;
    for (int signal = 1; signal < _NSIG; signal++) {
        if (signal != SIGKILL && signal != SIGSTOP) sigaction(signal, &action, NULL);  // glibc's own: EINVAL
    }
    sigset_t none;
    sigemptyset(&none);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, (size_t)(_NSIG / 8));

    execve(request->path, request->argv, request->envp);

    int error = errno;
    sigset_t all;
    block_all_signals(&all);
    if (request->guardian_fd >= 0) CProcess_guardian_forget(request->guardian_fd, getpid());
    errno = error;
    fail_in_child(arguments, CProcess_step_execve);
}

int CProcess_spawn(const CProcess_spawn_request *request, pid_t *pid, int *failed_step) {
    *failed_step = CProcess_step_none;
    if (request->stdin_fd < 3 || request->stdout_fd < 3 || request->stderr_fd < 3) {
        *failed_step = CProcess_step_dup2;
        return EINVAL;
    }
    // The child's stack; glibc's posix_spawn maps one per call the same way.
    const size_t stack_size = 64 * 1024;
    void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE,
                       -1, 0);
    if (stack == MAP_FAILED) {
        *failed_step = CProcess_step_clone;
        return errno;
    }
    spawn_arguments arguments = {request, getpid(), 0, CProcess_step_none};
    // No handler of the server's may run in the child while it shares the server's memory.
    sigset_t old;
    block_all_signals(&old);
    pid_t child = clone(spawn_child, (char *)stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &arguments);
    int clone_error = errno;
    restore_signals(&old);
    munmap(stack, stack_size);
    if (child < 0) {
        *failed_step = CProcess_step_clone;
        return clone_error;
    }
    // CLONE_VFORK: the child has exec'd or exited by now.
    if (arguments.error != 0 || arguments.step != CProcess_step_none) {
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
        *failed_step = arguments.step;
        return arguments.error != 0 ? arguments.error : EIO;
    }
    *pid = child;
    return 0;
}

// MARK: - The guardian

/// Known extension process groups, by leader pid: linear probing with backward-shift deletion, in memory
/// mapped by the guardian itself (no malloc after fork).
typedef struct {
    pid_t pid;  // 0: free
    int pidfd;  // -1 when it could not be opened
    uint64_t start;
} guardian_entry;

typedef struct {
    guardian_entry *slots;
    size_t capacity;  // a power of two
    size_t count;
} guardian_table;

static size_t slot_of(const guardian_table *table, pid_t pid) {
    return ((size_t)(uint32_t)pid * 2654435761u) & (table->capacity - 1);
}

static int table_allocate(guardian_table *table, size_t capacity) {
    void *memory = mmap(NULL, capacity * sizeof(guardian_entry), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
    if (memory == MAP_FAILED) return -1;
    table->slots = memory;  // zero-filled: every slot free
    table->capacity = capacity;
    table->count = 0;
    return 0;
}

static guardian_entry *table_find(guardian_table *table, pid_t pid) {
    for (size_t i = slot_of(table, pid);; i = (i + 1) & (table->capacity - 1)) {
        if (table->slots[i].pid == pid) return &table->slots[i];
        if (table->slots[i].pid == 0) return NULL;
    }
}

static void table_put(guardian_table *table, guardian_entry entry);

static void table_grow(guardian_table *table) {
    guardian_table bigger;
    if (table_allocate(&bigger, table->capacity * 2) != 0) return;  // stays full at 3/4: still correct
    for (size_t i = 0; i < table->capacity; i++) {
        if (table->slots[i].pid != 0) table_put(&bigger, table->slots[i]);
    }
    munmap(table->slots, table->capacity * sizeof(guardian_entry));
    *table = bigger;
}

static void table_put(guardian_table *table, guardian_entry entry) {
    if ((table->count + 1) * 4 > table->capacity * 3) {
        table_grow(table);
        if ((table->count + 1) * 4 > table->capacity * 3 && table->count + 1 >= table->capacity) return;
    }
    size_t i = slot_of(table, entry.pid);
    while (table->slots[i].pid != 0) i = (i + 1) & (table->capacity - 1);
    table->slots[i] = entry;
    table->count++;
}

static void table_remove(guardian_table *table, guardian_entry *entry) {
    size_t mask = table->capacity - 1;
    size_t hole = (size_t)(entry - table->slots);
    table->slots[hole].pid = 0;
    table->count--;
    // Move later entries of the same run back so that lookups never stop early at the hole.
    for (size_t i = (hole + 1) & mask; table->slots[i].pid != 0; i = (i + 1) & mask) {
        size_t home = slot_of(table, table->slots[i].pid);
        // The entry at i may fill the hole if its home is not in (hole, i] (cyclically).
        int movable = hole <= i ? (home <= hole || home > i) : (home <= hole && home > i);
        if (movable) {
            table->slots[hole] = table->slots[i];
            table->slots[i].pid = 0;
            hole = i;
        }
    }
}

static void guardian_add_group(guardian_table *table, pid_t pid, uint64_t start) {
    if (pid <= 0 || table_find(table, pid)) return;
    int pidfd = CProcess_pidfd_open(pid);
    // Read after opening: if the process still runs, the pidfd and the start time name the same one.
    if (start == 0 || CProcess_start_time(pid) != start) {
        if (pidfd >= 0) close(pidfd);
        return;  // gone already (reaped: its group was killed) or never ours
    }
    guardian_entry entry = {pid, pidfd, start};
    table_put(table, entry);
}

static void guardian_forget_group(guardian_table *table, pid_t pid) {
    guardian_entry *entry = pid > 0 ? table_find(table, pid) : NULL;
    if (!entry) return;
    if (entry->pidfd >= 0) close(entry->pidfd);
    table_remove(table, entry);
}

/// The server is gone: SIGKILL to every group still known, and to each leader (in case it left its group).
static void guardian_kill_all(guardian_table *table) {
    for (size_t i = 0; i < table->capacity; i++) {
        guardian_entry *entry = &table->slots[i];
        if (entry->pid == 0) continue;
        if (entry->pidfd >= 0) {
            if (CProcess_pidfd_signal(entry->pidfd, SIGKILL, 1) != 0 && errno == EINVAL) {
                // Before Linux 6.9: by number, only while the leader (even a zombie) still holds it.
                if (CProcess_pidfd_signal(entry->pidfd, 0, 0) == 0) kill(-entry->pid, SIGKILL);
            }
            CProcess_pidfd_signal(entry->pidfd, SIGKILL, 0);
        } else if (CProcess_start_time(entry->pid) == entry->start) {
            kill(-entry->pid, SIGKILL);
            kill(entry->pid, SIGKILL);
        }
    }
}

__attribute__((noreturn)) static void guardian_main(int input) {
    // Keep nothing of the server's but the pipe: no listening socket, no database file, no pipe to a
    // client may outlive the server here.
    if (input != 3) {
        if (dup2(input, 3) < 0) _exit(1);
        input = 3;
    }
    close_from(4, 0);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3; fd++) {
        if (null >= 0) dup2(null, fd); else close(fd);
    }
    if (null > 2) close(null);
    // Its own session: terminal signals (Ctrl-C) and group kills aimed at the server do not reach it.
    setsid();
    prctl(PR_SET_NAME, "nse-guardian", 0, 0, 0);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    for (int signal = 1; signal < _NSIG; signal++) {
        if (signal != SIGKILL && signal != SIGSTOP) sigaction(signal, &action, NULL);
    }
    action.sa_handler = SIG_IGN;
    const int ignored[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) sigaction(ignored[i], &action, NULL);
    sigset_t none;
    sigemptyset(&none);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, (size_t)(_NSIG / 8));
    // One pidfd per live extension: as many descriptors as the hard limit allows.
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }

    guardian_table table;
    if (table_allocate(&table, 1024) != 0) _exit(1);
    char buffer[4096];
    size_t filled = 0;
    for (;;) {
        ssize_t length = read(input, buffer + filled, sizeof buffer - filled);
        if (length < 0 && errno == EINTR) continue;
        if (length <= 0) break;  // end of file: the server is gone
        filled += (size_t)length;
        size_t used = 0;
        while (filled - used >= sizeof(guardian_message)) {
            guardian_message message;
            memcpy(&message, buffer + used, sizeof message);
            used += sizeof message;
            if (message.op == guardian_add) guardian_add_group(&table, message.pid, message.start);
            else if (message.op == guardian_forget) guardian_forget_group(&table, message.pid);
        }
        memmove(buffer, buffer + used, filled - used);
        filled -= used;
    }
    guardian_kill_all(&table);
    _exit(0);
}

/// Moves `fd` to 3 or higher (close-on-exec): a child dup2s its pipes onto 0, 1 and 2 first.
static int above_stdio(int fd) {
    if (fd < 0 || fd > 2) return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return moved;
}

pid_t CProcess_guardian_start(int *write_fd) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    fds[0] = above_stdio(fds[0]);
    fds[1] = above_stdio(fds[1]);
    if (fds[0] < 0 || fds[1] < 0) {
        if (fds[0] >= 0) close(fds[0]);
        if (fds[1] >= 0) close(fds[1]);
        return -1;
    }
    sigset_t old;
    block_all_signals(&old);
    // _Fork: no atfork handlers (libdispatch's, the Swift runtime's) run; the child runs only the C above.
    pid_t pid = _Fork();
    if (pid == 0) {
        close(fds[1]);
        guardian_main(fds[0]);
    }
    int error = errno;
    restore_signals(&old);
    close(fds[0]);
    if (pid < 0) {
        close(fds[1]);
        errno = error;
        return -1;
    }
    int flags = fcntl(fds[1], F_GETFL);
    if (flags >= 0) fcntl(fds[1], F_SETFL, flags | O_NONBLOCK);
    *write_fd = fds[1];
    return pid;
}

void CProcess_guardian_add(int write_fd, pid_t pid, uint64_t start) {
    guardian_message message = {guardian_add, (int32_t)pid, start};
    ssize_t written;
    do written = write(write_fd, &message, sizeof message); while (written < 0 && errno == EINTR);
}

void CProcess_guardian_forget(int write_fd, pid_t pid) {
    guardian_message message = {guardian_forget, (int32_t)pid, 0};
    ssize_t written;
    do written = write(write_fd, &message, sizeof message); while (written < 0 && errno == EINTR);
}
