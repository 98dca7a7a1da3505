// CProcess: starting and guarding exec extensions' processes (used only by Sources/ExtensionRuntime).
//
// Why C: an extension's process must die with the server, even when the server is killed with SIGKILL.
// The kernel does that for the direct child through PR_SET_PDEATHSIG, which the child must set on itself
// between fork and exec; posix_spawn has no attribute for it. So CProcess_spawn does what glibc's
// posix_spawn does (a CLONE_VM | CLONE_VFORK child on its own stack, all signals blocked around it) and
// adds the prctl. What runs in the child is async-signal-safe system calls only.
//
// The extension's own children (a shell script's `sleep`) are not the server's children, so no PDEATHSIG
// reaches them. CProcess_guardian_start forks one small guardian process per runtime that learns every
// extension's process group (from the child itself, before exec) and kills the groups that are still alive
// when its pipe from the server reaches end-of-file, which happens when the server dies in any way.
//
// The PDEATHSIG trap: Linux sends it when the *thread* that created the child exits, not the process.
// Spawn only from threads that live as long as the runtime (ExtensionRuntime's Launcher).
#pragma once
#ifdef __linux__
#include <stdint.h>
#include <sys/types.h>

/// What to start: every pointer must stay valid for the call.
typedef struct {
    /// The program (an absolute path: nothing is looked up in PATH).
    const char *path;
    /// NULL-terminated, argv[0] included.
    char *const *argv;
    /// NULL-terminated `NAME=value` strings: the whole environment.
    char *const *envp;
    /// The working directory.
    const char *directory;
    /// Become 0, 1 and 2 in the child (each must be 3 or higher).
    int stdin_fd;
    int stdout_fd;
    int stderr_fd;
    /// The guardian's pipe (CProcess_guardian_start), or -1: the child registers itself there before exec.
    int guardian_fd;
} CProcess_spawn_request;

/// What failed in the child (CProcess_spawn's `failed_step`).
enum {
    CProcess_step_none = 0,
    CProcess_step_setpgid = 1,
    CProcess_step_pdeathsig = 2,
    CProcess_step_dup2 = 3,
    CProcess_step_chdir = 4,
    CProcess_step_execve = 5,
    CProcess_step_clone = 6,
    CProcess_step_pipe = 7,
};

/// Starts `request->path` in its own process group, with PR_SET_PDEATHSIG(SIGKILL) (it dies when the
/// calling thread does), default signal dispositions, an empty signal mask, only descriptors 0, 1 and 2,
/// in `request->directory`. The child exits 127 without running the program when the server is already
/// gone. Returns once the child has exec'd (or failed to).
/// - Returns: 0 with `*pid` set, or an errno value with `*failed_step` set (the child is reaped then).
int CProcess_spawn(const CProcess_spawn_request *request, pid_t *pid, int *failed_step);

/// Forks the guardian (see the header comment) and returns its pid with `*write_fd`, the server's end of
/// its pipe (close-on-exec, non-blocking; closing it makes the guardian kill what it knows and exit), or
/// -1 with errno. The guardian is this process's child: reap it after closing the pipe.
pid_t CProcess_guardian_start(int *write_fd);

/// Tells the guardian about the process group led by `pid` (started at `start`, CProcess_start_time), as a
/// child does itself before exec: for a guardian started after the process was. Never blocks.
void CProcess_guardian_add(int write_fd, pid_t pid, uint64_t start);

/// Tells the guardian that the process group led by `pid` is gone (its leader was reaped and the group
/// killed). Never blocks: a full pipe drops the message (the guardian keeps a harmless stale entry).
void CProcess_guardian_forget(int write_fd, pid_t pid);

/// A pidfd for `pid` (pidfd_open, Linux 5.3), or -1 with errno.
int CProcess_pidfd_open(pid_t pid);

/// Sends `signal` through a pidfd: to its process, or (with `group`) to every member of the process group
/// that process led when the pidfd was opened. The group is found by identity, not by number, so it works
/// after the leader was reaped and can never reach a group that reused the number (Linux 6.9,
/// PIDFD_SIGNAL_PROCESS_GROUP). 0, or -1 with errno (EINVAL: the kernel lacks the group flag; ESRCH: no
/// such process or no member left).
int CProcess_pidfd_signal(int pidfd, int signal, int group);

/// Names the calling thread as the kernel shows it (/proc/<pid>/task/<tid>/comm; at most 15 bytes kept).
/// Foundation's Thread.name does not reach the kernel on Linux.
void CProcess_name_thread(const char *name);

/// The start time of `pid` (clock ticks after boot, field 22 of /proc/<pid>/stat; 0 = this process), or 0
/// when it is gone. With the pid it names one process.
uint64_t CProcess_start_time(pid_t pid);
#endif
