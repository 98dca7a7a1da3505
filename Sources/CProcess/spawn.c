// CProcess: starting an exec extension with PR_SET_PDEATHSIG (see include/CProcess.h for why this exists).
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

// ThreadSanitizer's interceptors cannot run in a child that shares the parent's memory and thread (its runtime
// fails a CHECK there and ends the process), so a TSan build forks instead and the child reports a failure
// through a close-on-exec pipe. Every other build uses CLONE_VM | CLONE_VFORK, as glibc's posix_spawn does.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CPROCESS_SPAWN_BY_FORK 1
#endif
#endif

typedef struct {
    const CProcess_spawn_request *request;
    pid_t server;
    /// Written by the child before it exits (shared memory: CLONE_VM); read after CLONE_VFORK returns.
    volatile int error;
    volatile int step;
    /// CPROCESS_SPAWN_BY_FORK: where the child writes `error` and `step` instead (-1 otherwise).
    int report_fd;
} spawn_arguments;

__attribute__((noreturn)) static void fail_in_child(spawn_arguments *arguments, int step) {
    arguments->error = errno;
    arguments->step = step;
    if (arguments->report_fd >= 0) {
        int report[2] = {arguments->error, step};
        ssize_t written;
        do written = write(arguments->report_fd, report, sizeof report); while (written < 0 && errno == EINTR);
    }
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
    CProcessInternal_close_from(3, 1);

    // Known to the guardian before the program can start anything. SIGPIPE is blocked here: a dead
    // guardian leaves one pending, which setting SIG_IGN below discards.
    if (request->guardian_fd >= 0) {
        CProcessInternal_message message = {CProcessInternal_guardian_add, (int32_t)getpid(), CProcess_start_time(0)};
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
    CProcessInternal_block_all_signals(&all);
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
    void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED) {
        *failed_step = CProcess_step_clone;
        return errno;
    }
    spawn_arguments arguments = {request, getpid(), 0, CProcess_step_none, -1};
    // No handler of the server's may run in the child while it shares the server's memory.
    sigset_t old;
    CProcessInternal_block_all_signals(&old);
#ifdef CPROCESS_SPAWN_BY_FORK
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        int error = errno;
        CProcessInternal_restore_signals(&old);
        munmap(stack, stack_size);
        *failed_step = CProcess_step_clone;
        return error;
    }
    arguments.report_fd = report[1];
    pid_t child = fork();
    if (child == 0) {
        close(report[0]);
        spawn_child(&arguments);
        _exit(127);
    }
    int clone_error = errno;
    close(report[1]);
    if (child > 0) {
        // Closed unread at the exec: the program runs. Else the child's error and step.
        int reported[2];
        ssize_t got;
        do got = read(report[0], reported, sizeof reported); while (got < 0 && errno == EINTR);
        if (got == (ssize_t)sizeof reported) {
            arguments.error = reported[0];
            arguments.step = reported[1];
        }
    }
    close(report[0]);
#else
    pid_t child = clone(spawn_child, (char *)stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &arguments);
    int clone_error = errno;
#endif
    CProcessInternal_restore_signals(&old);
    munmap(stack, stack_size);
    if (child < 0) {
        *failed_step = CProcess_step_clone;
        return clone_error;
    }
    // The child has exec'd or exited by now (CLONE_VFORK), or exec'd or reported its failure (fork).
    if (arguments.error != 0 || arguments.step != CProcess_step_none) {
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
        *failed_step = arguments.step;
        return arguments.error != 0 ? arguments.error : EIO;
    }
    *pid = child;
    return 0;
}

