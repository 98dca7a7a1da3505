#include "CLinuxSystem.h"
#include <unistd.h>
#include <pthread.h>
#include <string.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <limits.h>
#include <malloc.h>

int CLinuxSystem_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int CLinuxSystem_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

int CLinuxSystem_epoll_wait(int epfd, uint32_t *events, uint64_t *datas, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) { events[i] = evs[i].events; datas[i] = evs[i].data.u64; }
    return n;
}

int CLinuxSystem_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
int CLinuxSystem_eventfd_signal(int fd) { return eventfd_write(fd, 1); }
int CLinuxSystem_eventfd_drain(int fd) { eventfd_t v; return eventfd_read(fd, &v); }

int CLinuxSystem_timerfd_create(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC); }
int CLinuxSystem_timerfd_arm(int fd, int64_t ns) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (ns > 0) {
        spec.it_value.tv_sec = ns / 1000000000LL;
        spec.it_value.tv_nsec = ns % 1000000000LL;
    }
    return timerfd_settime(fd, 0, &spec, NULL);
}
int CLinuxSystem_timerfd_drain(int fd) { uint64_t v; return (int)read(fd, &v, sizeof v); }

int CLinuxSystem_accept4(int fd, struct sockaddr *addr, socklen_t *len) {
    return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int CLinuxSystem_signalfd_term(void) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0) return -1;
    return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}
int CLinuxSystem_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    ssize_t n = read(fd, &info, sizeof info);
    if (n != sizeof info) return -1;
    return (int)info.ssi_signo;
}
void CLinuxSystem_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

int CLinuxSystem_unacknowledged_output(int fd) {
    int bytes = 0;
    if (ioctl(fd, SIOCOUTQ, &bytes) != 0) return -1;
    return bytes;
}

int CLinuxSystem_malloc_trim(void) { return malloc_trim(0); }

size_t CLinuxSystem_malloc_in_use(void) { return mallinfo2().uordblks; }

int CLinuxSystem_malloc_set_trim_threshold(size_t bytes) {
    if (bytes > INT_MAX) return 0;
    return mallopt(M_TRIM_THRESHOLD, (int)bytes);
}

int CLinuxSystem_set_thread_niceness(int niceness) {
    return setpriority(PRIO_PROCESS, (id_t)gettid(), niceness);
}

int CLinuxSystem_set_thread_name(const char *name) {
    // The kernel keeps 15 bytes; pthread_setname_np refuses a longer name (ERANGE) instead of cutting it.
    char kept[16];
    strncpy(kept, name, sizeof kept - 1);
    kept[sizeof kept - 1] = '\0';
    return pthread_setname_np(pthread_self(), kept);
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CLINUXSYSTEM_TSAN 1
void __tsan_acquire(void *address);
void __tsan_release(void *address);
#endif
#endif

int CLinuxSystem_tsan_enabled(void) {
#ifdef CLINUXSYSTEM_TSAN
    return 1;
#else
    return 0;
#endif
}

int CLinuxSystem_asan_enabled(void) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#endif
#endif
    return 0;
}

void CLinuxSystem_tsan_acquire(void *address) {
#ifdef CLINUXSYSTEM_TSAN
    __tsan_acquire(address);
#else
    (void)address;
#endif
}

void CLinuxSystem_tsan_release(void *address) {
#ifdef CLINUXSYSTEM_TSAN
    __tsan_release(address);
#else
    (void)address;
#endif
}
