// CProcess: the guardian process that kills extensions' groups when the server dies
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
                // Before Linux 6.9 (no group signal through a pidfd): by number. Also when the leader has
                // been reaped already (PDEATHSIG killed it with the server, and init may reap it first):
                // the kernel does not hand out a number again while any process still has it as its process
                // group, so while the instance's grandchildren live the group is still theirs. Only once
                // the group is empty could the number name a new group, which would have to be made by a
                // new process in the few microseconds since (a race this accepts).
                kill(-entry->pid, SIGKILL);
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
    CProcessInternal_close_from(4, 0);
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
        while (filled - used >= sizeof(CProcessInternal_message)) {
            CProcessInternal_message message;
            memcpy(&message, buffer + used, sizeof message);
            used += sizeof message;
            if (message.op == CProcessInternal_guardian_add) guardian_add_group(&table, message.pid, message.start);
            else if (message.op == CProcessInternal_guardian_forget) guardian_forget_group(&table, message.pid);
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
    CProcessInternal_block_all_signals(&old);
    // _Fork: no atfork handlers (libdispatch's, the Swift runtime's) run; the child runs only the C above.
    pid_t pid = _Fork();
    if (pid == 0) {
        close(fds[1]);
        guardian_main(fds[0]);
    }
    int error = errno;
    CProcessInternal_restore_signals(&old);
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
    CProcessInternal_message message = {CProcessInternal_guardian_add, (int32_t)pid, start};
    ssize_t written;
    do written = write(write_fd, &message, sizeof message); while (written < 0 && errno == EINTR);
}

void CProcess_guardian_forget(int write_fd, pid_t pid) {
    CProcessInternal_message message = {CProcessInternal_guardian_forget, (int32_t)pid, 0};
    ssize_t written;
    do written = write(write_fd, &message, sizeof message); while (written < 0 && errno == EINTR);
}
