// CLinuxSystem: Linux syscalls that Glibc's Swift module does not expose.
//
// Why: `import Glibc` in Swift 6.3 on Linux does not surface <sys/epoll.h>, <sys/eventfd.h>,
// <sys/timerfd.h> or accept4(2) (they need _GNU_SOURCE or are not in the module map). The same
// approach as swift-nio's CNIOLinux: tiny prefixed wrappers compiled with _GNU_SOURCE.
#pragma once
#ifdef __linux__
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/signalfd.h>
#include <signal.h>
#include <time.h>

int CLinuxSystem_epoll_create(void);
int CLinuxSystem_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
/// Waits for events; writes up to `max` (events, data) pairs into the two arrays.
int CLinuxSystem_epoll_wait(int epfd, uint32_t *events, uint64_t *datas, int max, int timeout_ms);
int CLinuxSystem_eventfd(void);
int CLinuxSystem_eventfd_signal(int fd);
int CLinuxSystem_eventfd_drain(int fd);
int CLinuxSystem_timerfd_create(void);
/// Arms a one-shot monotonic timer `nanoseconds` from now (0 disarms).
int CLinuxSystem_timerfd_arm(int fd, int64_t nanoseconds);
int CLinuxSystem_timerfd_drain(int fd);
int CLinuxSystem_accept4(int fd, struct sockaddr *addr, socklen_t *len);
/// Names the calling thread as the kernel shows it (/proc/self/task/*/comm; at most 15 characters).
int CLinuxSystem_set_thread_name(const char *name);
/// Sets the calling thread's nice value (Linux keeps one per thread); 0 or -1 with errno.
int CLinuxSystem_set_thread_niceness(int niceness);
/// Blocks SIGTERM/SIGINT/SIGPIPE-free delivery and returns a signalfd for SIGTERM and SIGINT.
int CLinuxSystem_signalfd_term(void);
int CLinuxSystem_signalfd_read(int fd);
/// Bytes sent on TCP socket `fd` that the peer has not acknowledged yet (`SIOCOUTQ`: the FIN counts one);
/// -1 with errno on failure.
int CLinuxSystem_unacknowledged_output(int fd);
/// glibc's `malloc_trim(0)`: gives the free memory at the top of the heap and free whole pages inside every
/// arena back to the kernel; 1 when memory was released. Takes each arena's lock in turn.
int CLinuxSystem_malloc_trim(void);
/// glibc's `mallinfo2().uordblks`: the bytes of heap allocations in use now (every arena; mmapped blocks apart).
size_t CLinuxSystem_malloc_in_use(void);
/// glibc's `mallopt(M_TRIM_THRESHOLD, bytes)`: the free space kept at the top of each arena before it is given
/// back. Setting it also fixes the mmap threshold (128 KiB unless set), which glibc otherwise raises to the size of
/// each large block freed (up to 32 MiB, the trim threshold to twice that). 1 on success.
int CLinuxSystem_malloc_set_trim_threshold(size_t bytes);
/// Ignores SIGPIPE process-wide (writes to closed sockets return EPIPE instead).
void CLinuxSystem_ignore_sigpipe(void);
/// 1 when this library was compiled with ThreadSanitizer (`swift build --sanitize=thread`), else 0.
int CLinuxSystem_tsan_enabled(void);
/// 1 when this library was compiled with AddressSanitizer (`swift build --sanitize=address`), else 0.
int CLinuxSystem_asan_enabled(void);
/// ThreadSanitizer's `__tsan_acquire` / `__tsan_release` on `address` (nothing without ThreadSanitizer): what
/// `Support.Locked` tells it about a lock it cannot see.
void CLinuxSystem_tsan_acquire(void *address);
void CLinuxSystem_tsan_release(void *address);

static const uint32_t CLinuxSystem_EPOLLIN = EPOLLIN;
static const uint32_t CLinuxSystem_EPOLLOUT = EPOLLOUT;
static const uint32_t CLinuxSystem_EPOLLERR = EPOLLERR;
static const uint32_t CLinuxSystem_EPOLLHUP = EPOLLHUP;
static const uint32_t CLinuxSystem_EPOLLRDHUP = EPOLLRDHUP;
static const int CLinuxSystem_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
static const int CLinuxSystem_EPOLL_CTL_MOD = EPOLL_CTL_MOD;
static const int CLinuxSystem_EPOLL_CTL_DEL = EPOLL_CTL_DEL;
#endif
